/* arena.c: bump allocation by lifetime; one free releases everything. */
#include <stdlib.h>
#include <string.h>
#include "compiler_int.h"

struct arena_chunk {
  arena_chunk *next;
  size_t size, used;
  _Alignas(16) unsigned char mem[];
};

enum { CHUNK_SIZE = 64 * 1024 };

size_t arena_test_limit;

void *arena_alloc(arena *a, size_t n) {
  if (a->failed) return NULL;
  n = (n + 15) & ~(size_t)15;
  if (a->limit && a->used + n > a->limit) { a->failed = 1; return NULL; }
  arena_chunk *c = a->head;
  if (!c || c->size - c->used < n) {
    size_t size = n > CHUNK_SIZE / 4 ? n : CHUNK_SIZE;
    c = malloc(sizeof *c + size);
    if (!c) { a->failed = 1; return NULL; }
    c->size = size;
    c->used = 0;
    if (size == n && a->head) {       /* a big block: keep filling the current chunk */
      c->next = a->head->next;
      a->head->next = c;
    } else {
      c->next = a->head;
      a->head = c;
    }
  }
  void *p = c->mem + c->used;
  c->used += n;
  a->used += n;
  memset(p, 0, n);
  return p;
}

char *arena_strndup(arena *a, const char *s, size_t n) {
  char *p = arena_alloc(a, n + 1);
  if (p) memcpy(p, s, n);
  return p;
}

char *arena_strdup(arena *a, const char *s) { return arena_strndup(a, s, strlen(s)); }

void arena_free(arena *a) {
  for (arena_chunk *c = a->head, *next; c; c = next) {
    next = c->next;
    free(c);
  }
  a->head = NULL;
  a->used = 0;
  a->failed = 0;
}
