/* parse.c: the Relay-like text format → graph IR (recursive descent).
 * Accepts what TVM's astext() prints for the supported ops: the version
 * header, ty=... comments, let-style bindings, tuple projection,
 * and already-fused programs (fn ... Primitive=1 bound then called). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "compiler_int.h"

typedef enum tok_kind { T_EOF, T_VAR, T_GLOBAL, T_IDENT, T_INT, T_FLOAT, T_STRING, T_PUNCT } tok_kind;
typedef struct tok {
  tok_kind k;
  const char *s;   /* start in the source (after the sigil for VAR/GLOBAL) */
  int len;
  loc_t loc;
  int64_t ival;
  double fval;
} tok;

/* name → node, one table per function scope */
typedef struct sym { const char *name; int len; node *val; } sym;
typedef struct scope { sym *tab; size_t cap, n; } scope;

typedef struct parser {
  const char *src, *p;
  int line;
  const char *line_start;
  tok t;           /* current token */
  temper_graph *g;
  diag *d;
  int depth;       /* nesting, bounded so hostile input cannot blow the stack */
} parser;

/* ---- lexer ---- */
static void skip_space(parser *ps) {
  for (;;) {
    const char *p = ps->p;
    if (*p == '\n') { ps->line++; ps->line_start = ++ps->p; continue; }
    if (isspace((unsigned char)*p)) { ps->p++; continue; }
    if (p[0] == '/' && p[1] == '/') { while (*ps->p && *ps->p != '\n') ps->p++; continue; }
    if (p[0] == '/' && p[1] == '*') {
      ps->p += 2;
      while (*ps->p && !(ps->p[0] == '*' && ps->p[1] == '/')) {
        if (*ps->p == '\n') { ps->line++; ps->line_start = ps->p + 1; }
        ps->p++;
      }
      if (*ps->p) ps->p += 2;
      continue;
    }
    return;
  }
}

static int is_name_char(int c) { return isalnum(c) || c == '_'; }

/* the next non-blank character after the current token */
static char peek_char(parser *ps) {
  const char *q = ps->p;
  while (*q == ' ' || *q == '\t') q++;
  return *q;
}

static temper_status next(parser *ps) {
  skip_space(ps);
  tok *t = &ps->t;
  t->loc = (loc_t){ps->line, (int)(ps->p - ps->line_start) + 1};
  const char *p = ps->p;
  t->s = p;
  if (!*p) { t->k = T_EOF; t->len = 0; return TEMPER_OK; }
  if (*p == '%' || *p == '@') {
    const char *q = p + 1;
    while (is_name_char((unsigned char)*q)) q++;
    if (q == p + 1) return diag_error(ps->d, t->loc, "expected a name after '%c'", *p);
    t->k = *p == '%' ? T_VAR : T_GLOBAL;
    t->s = p + 1;
    t->len = (int)(q - p - 1);
    ps->p = q;
    return TEMPER_OK;
  }
  if (isalpha((unsigned char)*p) || *p == '_') {
    const char *q = p;
    while (is_name_char((unsigned char)*q) || *q == '.') q++;
    t->k = T_IDENT;
    t->len = (int)(q - p);
    ps->p = q;
    return TEMPER_OK;
  }
  if (isdigit((unsigned char)*p) || (*p == '-' && (isdigit((unsigned char)p[1]) || p[1] == '.'))) {
    const char *q = p + (*p == '-');
    int is_float = 0;
    while (isdigit((unsigned char)*q)) q++;
    if (*q == '.' && isdigit((unsigned char)q[1])) { is_float = 1; q++; while (isdigit((unsigned char)*q)) q++; }
    if ((*q == 'e' || *q == 'E') && (isdigit((unsigned char)q[1]) || ((q[1] == '-' || q[1] == '+') && isdigit((unsigned char)q[2])))) {
      is_float = 1;
      q += 2;
      while (isdigit((unsigned char)*q)) q++;
    }
    char buf[64];
    int n = (int)(q - p);
    if (n >= (int)sizeof buf) return diag_error(ps->d, t->loc, "number too long");
    memcpy(buf, p, (size_t)n);
    buf[n] = 0;
    if (*q == 'f') { is_float = 1; q++; }
    else if (!strncmp(q, "i64", 3) || !strncmp(q, "i32", 3)) q += 3;
    if (is_name_char((unsigned char)*q)) return diag_error(ps->d, t->loc, "malformed number");
    t->k = is_float ? T_FLOAT : T_INT;
    t->fval = strtod(buf, NULL);
    t->ival = strtoll(buf, NULL, 10);
    t->len = (int)(q - p);
    ps->p = q;
    return TEMPER_OK;
  }
  if (*p == '"') {
    const char *q = p + 1;
    while (*q && *q != '"' && *q != '\n') q++;
    if (*q != '"') return diag_error(ps->d, t->loc, "unterminated string");
    t->k = T_STRING;
    t->s = p + 1;
    t->len = (int)(q - p - 1);
    ps->p = q + 1;
    return TEMPER_OK;
  }
  if (p[0] == '-' && p[1] == '>') { t->k = T_PUNCT; t->len = 2; ps->p += 2; return TEMPER_OK; }
  if (strchr("()[]{},:;=.#", *p)) { t->k = T_PUNCT; t->len = 1; ps->p++; return TEMPER_OK; }
  return diag_error(ps->d, t->loc, "unexpected character '%c'", isprint((unsigned char)*p) ? *p : '?');
}

static int is_punct(parser *ps, const char *s) {
  return ps->t.k == T_PUNCT && ps->t.len == (int)strlen(s) && !memcmp(ps->t.s, s, strlen(s));
}
static int is_ident(parser *ps, const char *s) {
  return ps->t.k == T_IDENT && ps->t.len == (int)strlen(s) && !memcmp(ps->t.s, s, strlen(s));
}

static const char *tok_desc(parser *ps, char *buf, size_t n) {
  if (ps->t.k == T_EOF) return "end of input";
  snprintf(buf, n, "'%.*s%.*s'", ps->t.k == T_VAR ? 1 : 0, "%", ps->t.len > 30 ? 30 : ps->t.len, ps->t.s);
  return buf;
}

static temper_status expect(parser *ps, const char *s, const char *what) {
  if (!is_punct(ps, s)) {
    char b[64];
    return diag_error(ps->d, ps->t.loc, "expected '%s' %s, found %s", s, what, tok_desc(ps, b, sizeof b));
  }
  return next(ps);
}

#define TRY(x) do { temper_status s_ = (x); if (s_ != TEMPER_OK) return s_; } while (0)
#define TRYN(x) do { if ((x) != TEMPER_OK) return NULL; } while (0)

/* ---- scopes ---- */
static uint64_t hash_name(const char *s, int n) { return data_hash(s, (size_t)n, DATA_HASH_INIT); }

static sym *scope_find(scope *sc, const char *s, int n) {
  if (!sc->cap) return NULL;
  for (size_t i = hash_name(s, n) & (sc->cap - 1);; i = (i + 1) & (sc->cap - 1)) {
    sym *e = &sc->tab[i];
    if (!e->name) return e;
    if (e->len == n && !memcmp(e->name, s, (size_t)n)) return e;
  }
}

static int scope_put(scope *sc, const char *s, int n, node *v) {
  if ((sc->n + 1) * 2 > sc->cap) {
    size_t nc = sc->cap ? sc->cap * 2 : 64;
    sym *nt = calloc(nc, sizeof *nt);
    if (!nt) return -1;
    scope old = *sc;
    sc->tab = nt;
    sc->cap = nc;
    sc->n = 0;
    for (size_t i = 0; i < old.cap; i++)
      if (old.tab[i].name) *scope_find(sc, old.tab[i].name, old.tab[i].len) = old.tab[i], sc->n++;
    free(old.tab);
  }
  sym *e = scope_find(sc, s, n);
  *e = (sym){s, n, v};
  sc->n++;
  return 0;
}

/* ---- types ---- */
static temper_status parse_tensor_type(parser *ps, shape_t *sh) {
  loc_t at = ps->t.loc;
  if (is_ident(ps, "float32")) { sh->ndim = 0; return next(ps); }
  if (!is_ident(ps, "Tensor")) {
    char b[64];
    return diag_error(ps->d, at, "expected a tensor type 'Tensor[(...), float32]', found %s", tok_desc(ps, b, sizeof b));
  }
  TRY(next(ps));
  TRY(expect(ps, "[", "after 'Tensor'"));
  TRY(expect(ps, "(", "to open the shape"));
  sh->ndim = 0;
  while (!is_punct(ps, ")")) {
    if (ps->t.k != T_INT || ps->t.ival <= 0)
      return diag_error(ps->d, ps->t.loc, "expected a positive dimension");
    if (sh->ndim == TEMPER_MAX_DIMS)
      return diag_error(ps->d, ps->t.loc, "more than %d dimensions", TEMPER_MAX_DIMS);
    if (ps->t.ival > (1ll << 31)) return diag_error(ps->d, ps->t.loc, "dimension too large");
    sh->d[sh->ndim++] = ps->t.ival;
    TRY(next(ps));
    if (!is_punct(ps, ")")) TRY(expect(ps, ",", "between dimensions"));
  }
  TRY(next(ps));
  TRY(expect(ps, ",", "before the dtype"));
  if (!is_ident(ps, "float32"))
    return diag_error(ps->d, ps->t.loc, "only float32 tensors are supported");
  TRY(next(ps));
  if (shape_numel(sh) > TEMPER_MAX_ELEMS) return diag_error(ps->d, at, "tensor too large (more than %lld elements)", TEMPER_MAX_ELEMS);
  return expect(ps, "]", "to close the tensor type");
}

static temper_status parse_type(parser *ps, type_t *ty) {
  if (is_punct(ps, "(")) {      /* tuple type */
    TRY(next(ps));
    shape_t f[64];
    int n = 0;
    while (!is_punct(ps, ")")) {
      if (n == 64) return diag_error(ps->d, ps->t.loc, "tuple type too long");
      TRY(parse_tensor_type(ps, &f[n++]));
      if (!is_punct(ps, ")")) TRY(expect(ps, ",", "between tuple fields"));
    }
    TRY(next(ps));
    ty->kind = TY_TUPLE;
    ty->n_fields = n;
    ty->fields = arena_alloc(&ps->g->a, sizeof(shape_t) * (size_t)(n ? n : 1));
    if (!ty->fields) return diag_fail(ps->d, TEMPER_ENOMEM, "out of memory");
    memcpy(ty->fields, f, sizeof(shape_t) * (size_t)n);
    return TEMPER_OK;
  }
  ty->kind = TY_TENSOR;
  return parse_tensor_type(ps, &ty->shape);
}

/* ---- attributes ---- */
/* an integer or a list of them; lists nest one level (pad_width=[[0, 0], [1, 1]]) */
static temper_status parse_int_list(parser *ps, attr_val *v, const char *name, int depth) {
  v->n = 0;
  if (depth > 1) return diag_error(ps->d, ps->t.loc, "attribute '%s': lists nest at most two deep", name);
  if (ps->t.k == T_INT) {
    v->i[v->n++] = ps->t.ival;
    return next(ps);
  }
  if (!is_punct(ps, "["))
    return diag_error(ps->d, ps->t.loc, "attribute '%s' expects an integer or a list [a, b, ...]", name);
  TRY(next(ps));
  while (!is_punct(ps, "]")) {
    if (is_punct(ps, "[")) {   /* nested lists flatten: pad_width=[[0, 0], [1, 1]] */
      attr_val inner;
      TRY(parse_int_list(ps, &inner, name, depth + 1));
      if (v->n + inner.n > 8) return diag_error(ps->d, ps->t.loc, "list too long");
      for (int i = 0; i < inner.n; i++) v->i[v->n++] = inner.i[i];
      if (!is_punct(ps, "]")) TRY(expect(ps, ",", "between list items"));
      continue;
    }
    if (ps->t.k != T_INT) return diag_error(ps->d, ps->t.loc, "expected an integer in the list");
    if (v->n == 8) return diag_error(ps->d, ps->t.loc, "list too long");
    v->i[v->n++] = ps->t.ival;
    TRY(next(ps));
    if (!is_punct(ps, "]")) TRY(expect(ps, ",", "between list items"));
  }
  return next(ps);
}

static temper_status parse_attr(parser *ps, int op, attrs_t *a, uint64_t *given) {
  loc_t at = ps->t.loc;
  int id = attrs_lookup(ps->t.s, (size_t)ps->t.len);
  if (id < 0 || !(ops_table[op].attrs & (1ull << id)))
    return diag_error(ps->d, at, "%s has no attribute '%.*s'", ops_table[op].name, ps->t.len, ps->t.s);
  if (*given & (1ull << id)) return diag_error(ps->d, at, "attribute '%s' given twice", attr_names[id]);
  *given |= 1ull << id;
  TRY(next(ps));
  TRY(expect(ps, "=", "after the attribute name"));
  attr_val *v = &a->v[id];
  loc_t vl = ps->t.loc;
  switch (attr_kinds[id]) {
  case AK_INT:
    if (ps->t.k != T_INT) return diag_error(ps->d, vl, "attribute '%s' expects an integer", attr_names[id]);
    v->i[0] = ps->t.ival;
    v->n = 1;
    return next(ps);
  case AK_BOOL:
    if (ps->t.k == T_INT && (ps->t.ival == 0 || ps->t.ival == 1)) v->i[0] = ps->t.ival;
    else if (is_ident(ps, "True") || is_ident(ps, "true")) v->i[0] = 1;
    else if (is_ident(ps, "False") || is_ident(ps, "false")) v->i[0] = 0;
    else return diag_error(ps->d, vl, "attribute '%s' expects True or False", attr_names[id]);
    return next(ps);
  case AK_FLOAT:
    if (ps->t.k != T_INT && ps->t.k != T_FLOAT)
      return diag_error(ps->d, vl, "attribute '%s' expects a number", attr_names[id]);
    v->f = ps->t.k == T_INT ? (double)ps->t.ival : ps->t.fval;
    return next(ps);
  case AK_STR:
    if (ps->t.k != T_STRING) return diag_error(ps->d, vl, "attribute '%s' expects a string", attr_names[id]);
    if (ps->t.len >= (int)sizeof v->s) return diag_error(ps->d, vl, "string too long");
    memset(v->s, 0, sizeof v->s);
    memcpy(v->s, ps->t.s, (size_t)ps->t.len);
    return next(ps);
  case AK_INT2: {
    TRY(parse_int_list(ps, v, attr_names[id], 0));
    if (v->n == 1) v->i[1] = v->i[0], v->n = 2;
    if (v->n != 2) return diag_error(ps->d, vl, "attribute '%s' expects 1 or 2 values", attr_names[id]);
    for (int i = 0; i < 2; i++)
      if (v->i[i] < (id == ATTR_KERNEL_SIZE ? 0 : 1) || v->i[i] > 4096)
        return diag_error(ps->d, vl, "attribute '%s' has an out-of-range value %lld", attr_names[id], (long long)v->i[i]);
    return TEMPER_OK;
  }
  case AK_PAD: {   /* Relay: 1 value (all), 2 (top/bottom, left/right), 4 (t, l, b, r) */
    TRY(parse_int_list(ps, v, attr_names[id], 0));
    if (v->n == 1) v->i[1] = v->i[2] = v->i[3] = v->i[0];
    else if (v->n == 2) v->i[2] = v->i[0], v->i[3] = v->i[1];
    else if (v->n != 4) return diag_error(ps->d, vl, "padding expects 1, 2 or 4 values, got %d", v->n);
    v->n = 4;
    for (int i = 0; i < 4; i++)
      if (v->i[i] < 0 || v->i[i] > 4096) return diag_error(ps->d, vl, "padding out of range");
    return TEMPER_OK;
  }
  case AK_INTS:
    return parse_int_list(ps, v, attr_names[id], 0);
  }
  return TEMPER_OK;
}

/* ---- expressions ---- */
static node *parse_expr(parser *ps, scope *sc);
static node *parse_fn(parser *ps, int is_main);
static temper_status parse_body(parser *ps, scope *sc, node **body);

static node *oom(parser *ps) {
  diag_fail(ps->d, TEMPER_ENOMEM, "out of memory while parsing");
  return NULL;
}

/* args after '(' up to ')'; op >= 0 allows trailing attributes */
static node *parse_call_args(parser *ps, scope *sc, node *call, int op) {
  node *args[64];
  int n = 0;
  uint64_t given = 0;
  if (op >= 0) {
    call->attrs = arena_alloc(&ps->g->a, sizeof *call->attrs);
    if (!call->attrs) return oom(ps);
    ops_default_attrs(op, call->attrs);
  }
  while (!is_punct(ps, ")")) {
    if (ps->t.k == T_IDENT && peek_char(ps) == '=') { /* name=value */
      if (op < 0) return diag_error(ps->d, ps->t.loc, "a function call takes no attributes"), NULL;
      TRYN(parse_attr(ps, op, call->attrs, &given));
    } else {
      if (given) return diag_error(ps->d, ps->t.loc, "positional argument after attributes"), NULL;
      if (n == 64) return diag_error(ps->d, ps->t.loc, "too many arguments"), NULL;
      node *a = parse_expr(ps, sc);
      if (!a) return NULL;
      args[n++] = a;
    }
    if (!is_punct(ps, ")")) TRYN(expect(ps, ",", "between arguments"));
  }
  TRYN(next(ps));
  /* concatenate takes one tuple in Relay; we keep its fields as the arguments */
  if (op == OP_CONCATENATE && n == 1 && args[0]->kind == N_TUPLE) {
    node *t = args[0];
    n = t->n_args;
    memcpy(args, t->args, sizeof(node *) * (size_t)n);
  }
  if (op >= 0 && (n < ops_table[op].min_args || n > ops_table[op].max_args)) {
    if (ops_table[op].min_args == ops_table[op].max_args)
      diag_error(ps->d, call->loc, "%s expects %d argument%s, got %d", ops_table[op].name,
                 ops_table[op].min_args, ops_table[op].min_args == 1 ? "" : "s", n);
    else
      diag_error(ps->d, call->loc, "%s expects %d to %d arguments, got %d", ops_table[op].name,
                 ops_table[op].min_args, ops_table[op].max_args, n);
    return NULL;
  }
  call->n_args = n;
  call->args = arena_alloc(&ps->g->a, sizeof(node *) * (size_t)(n ? n : 1));
  if (!call->args) return oom(ps);
  memcpy(call->args, args, sizeof(node *) * (size_t)n);
  return call;
}

static node *parse_primary(parser *ps, scope *sc) {
  tok t = ps->t;
  char b[64];
  if (t.k == T_VAR) {
    sym *e = scope_find(sc, t.s, t.len);
    if (!e || !e->name) return diag_error(ps->d, t.loc, "'%%%.*s' is not defined", t.len, t.s), NULL;
    TRYN(next(ps));
    if (is_punct(ps, "(")) {    /* call of a function bound to a name */
      node *fn = e->val;
      if (fn->kind != N_FUNC)
        return diag_error(ps->d, t.loc, "'%%%.*s' is called but is not a function", t.len, t.s), NULL;
      node *call = ir_new(ps->g, N_CALL, t.loc);
      if (!call) return oom(ps);
      call->callee = fn;
      TRYN(next(ps));
      call = parse_call_args(ps, sc, call, OP_FUNCALL);
      if (call && call->n_args != fn->n_params)
        return diag_error(ps->d, t.loc, "function '%%%.*s' takes %d arguments, got %d", t.len, t.s,
                          fn->n_params, call->n_args), NULL;
      return call;
    }
    return e->val;
  }
  if (t.k == T_INT || t.k == T_FLOAT) {
    shape_t s = {0};
    float v = t.k == T_INT ? (float)t.ival : (float)t.fval;
    node *c = ir_const(ps->g, &s, &v);
    if (!c) return oom(ps);
    c->loc = t.loc;
    TRYN(next(ps));
    return c;
  }
  if (t.k == T_IDENT && (t.len == 2 && !memcmp(t.s, "fn", 2))) {
    TRYN(next(ps));
    return parse_fn(ps, 0);
  }
  if (t.k == T_IDENT && t.len == 4 && !memcmp(t.s, "meta", 4))
    return diag_error(ps->d, t.loc, "metadata constants (meta[...]) are not supported in text "
                      "models; pass weights as parameters of @main"), NULL;
  if (t.k == T_IDENT) {
    int op = ops_lookup(t.s, (size_t)t.len);
    if (op < 0) return diag_error(ps->d, t.loc, "unknown operator '%.*s'", t.len, t.s), NULL;
    TRYN(next(ps));
    TRYN(expect(ps, "(", "after the operator name"));
    node *call = ir_new(ps->g, N_CALL, t.loc);
    if (!call) return oom(ps);
    call->op = op;
    return parse_call_args(ps, sc, call, op);
  }
  if (is_punct(ps, "(")) {     /* tuple, or a parenthesised expression */
    TRYN(next(ps));
    node *f[64];
    int n = 0, comma = 0;
    while (!is_punct(ps, ")")) {
      if (n == 64) return diag_error(ps->d, ps->t.loc, "tuple too long"), NULL;
      if (!(f[n++] = parse_expr(ps, sc))) return NULL;
      if (!is_punct(ps, ")")) { TRYN(expect(ps, ",", "between tuple fields")); comma = 1; }
    }
    TRYN(next(ps));
    if (n == 1 && !comma) return f[0];
    node *tu = ir_new(ps->g, N_TUPLE, t.loc);
    if (!tu || !(tu->args = arena_alloc(&ps->g->a, sizeof(node *) * (size_t)(n ? n : 1)))) return oom(ps);
    tu->n_args = n;
    memcpy(tu->args, f, sizeof(node *) * (size_t)n);
    return tu;
  }
  diag_error(ps->d, t.loc, "expected an expression, found %s", tok_desc(ps, b, sizeof b));
  return NULL;
}

static node *parse_expr(parser *ps, scope *sc) {
  if (++ps->depth > 200) return diag_error(ps->d, ps->t.loc, "expression nested too deeply"), NULL;
  node *e = parse_primary(ps, sc);
  while (e && is_punct(ps, ".")) {     /* tuple projection %1.0 */
    loc_t at = ps->t.loc;
    TRYN(next(ps));
    if (ps->t.k != T_INT || ps->t.ival < 0 || ps->t.ival > 64)
      return diag_error(ps->d, ps->t.loc, "expected a field index after '.'"), NULL;
    node *gi = ir_new(ps->g, N_GETITEM, at);
    if (!gi || !(gi->args = arena_alloc(&ps->g->a, sizeof(node *)))) return oom(ps);
    gi->n_args = 1;
    gi->args[0] = e;
    gi->index = (int)ps->t.ival;
    TRYN(next(ps));
    e = gi;
  }
  ps->depth--;
  return e;
}

/* bindings '%k = expr;' then the result expression */
static temper_status parse_body(parser *ps, scope *sc, node **body) {
  for (;;) {
    if (ps->t.k == T_VAR) {
      if (peek_char(ps) == '=') {   /* a binding */
        tok name = ps->t;
        TRY(next(ps));
        TRY(next(ps));   /* '=' */
        node *v = parse_expr(ps, sc);
        if (!v) return ps->d->status;
        sym *e = scope_find(sc, name.s, name.len);
        if (e && e->name)
          return diag_error(ps->d, name.loc, "'%%%.*s' is already defined", name.len, name.s);
        if (scope_put(sc, name.s, name.len, v)) return diag_fail(ps->d, TEMPER_ENOMEM, "out of memory");
        TRY(expect(ps, ";", "after the binding"));
        continue;
      }
    }
    *body = parse_expr(ps, sc);
    return *body ? TEMPER_OK : ps->d->status;
  }
}

/* after 'fn' or 'def @main': '(' params ')' ['->' type] '{' body '}' */
static node *parse_fn(parser *ps, int is_main) {
  node *fn = ir_new(ps->g, N_FUNC, ps->t.loc);
  if (!fn) return oom(ps);
  scope sc = {0};
  node *params[1024];
  int n = 0;
  if (expect(ps, "(", "to open the parameter list")) goto fail;
  while (!is_punct(ps, ")")) {
    if (ps->t.k == T_IDENT) {      /* function attribute: Primitive=1, hash="..." */
      int prim = is_ident(ps, "Primitive");
      if (next(ps) || expect(ps, "=", "after the function attribute")) goto fail;
      if (ps->t.k != T_INT && ps->t.k != T_STRING) {
        diag_error(ps->d, ps->t.loc, "expected a value for the function attribute");
        goto fail;
      }
      if (prim) fn->primitive = ps->t.k == T_INT && ps->t.ival != 0;
      if (next(ps)) goto fail;
    } else {
      if (ps->t.k != T_VAR) {
        char b[64];
        diag_error(ps->d, ps->t.loc, "expected a parameter '%%name: Tensor[...]', found %s", tok_desc(ps, b, sizeof b));
        goto fail;
      }
      if (n == 1024) { diag_error(ps->d, ps->t.loc, "too many parameters"); goto fail; }
      tok name = ps->t;
      node *v = ir_new(ps->g, N_VAR, name.loc);
      if (!v || !(v->name = arena_strndup(&ps->g->a, name.s, (size_t)name.len))) { oom(ps); goto fail; }
      sym *e = scope_find(&sc, name.s, name.len);
      if (e && e->name) { diag_error(ps->d, name.loc, "parameter '%%%.*s' given twice", name.len, name.s); goto fail; }
      if (scope_put(&sc, name.s, name.len, v)) { oom(ps); goto fail; }
      if (next(ps) || expect(ps, ":", "and a type after the parameter name")) goto fail;
      if (parse_type(ps, &v->ty)) goto fail;
      if (v->ty.kind != TY_TENSOR) { diag_error(ps->d, name.loc, "parameters must be tensors"); goto fail; }
      params[n++] = v;
    }
    if (!is_punct(ps, ")") && expect(ps, ",", "between parameters")) goto fail;
  }
  if (next(ps)) goto fail;
  if (is_punct(ps, "->")) {
    if (next(ps) || parse_type(ps, &fn->ret_ty_decl)) goto fail;
  }
  if (expect(ps, "{", "to open the function body")) goto fail;
  if (parse_body(ps, &sc, &fn->body)) goto fail;
  if (!is_punct(ps, "}")) {
    char b[64];
    diag_error(ps->d, ps->t.loc, "expected '}' to close the function body (or ';' after a binding), found %s",
               tok_desc(ps, b, sizeof b));
    goto fail;
  }
  if (next(ps)) goto fail;
  fn->n_params = n;
  fn->params = arena_alloc(&ps->g->a, sizeof(node *) * (size_t)(n ? n : 1));
  if (!fn->params) { oom(ps); goto fail; }
  memcpy(fn->params, params, sizeof(node *) * (size_t)n);
  (void)is_main;
  free(sc.tab);
  return fn;
fail:
  free(sc.tab);
  return NULL;
}

/* parse: needs text; output has declared types on vars only (run typeinfer) */
temper_status parse_graph(const char *text, const char *path, temper_graph **out, diag *d) {
  *out = NULL;
  temper_graph *g = ir_graph_new(path);
  if (!g || !(g->text = strdup(text))) {
    temper_graph_destroy(g);
    return diag_fail(d, TEMPER_ENOMEM, "out of memory");
  }
  parser ps = {.src = g->text, .p = g->text, .line = 1, .line_start = g->text, .g = g, .d = d};
  d->text = g->text;
  if (next(&ps)) goto fail;
  if (is_punct(&ps, "#")) {          /* #[version = "0.0.5"] */
    if (next(&ps) || expect(&ps, "[", "after '#'")) goto fail;
    if (!is_ident(&ps, "version")) { diag_error(d, ps.t.loc, "expected 'version' in the header"); goto fail; }
    if (next(&ps) || expect(&ps, "=", "after 'version'")) goto fail;
    if (ps.t.k != T_STRING) { diag_error(d, ps.t.loc, "expected a version string"); goto fail; }
    if (next(&ps) || expect(&ps, "]", "to close the header")) goto fail;
  }
  if (!is_ident(&ps, "def")) {
    char b[64];
    diag_error(d, ps.t.loc, "expected 'def @main(...)', found %s", tok_desc(&ps, b, sizeof b));
    goto fail;
  }
  if (next(&ps)) goto fail;
  if (ps.t.k != T_GLOBAL || ps.t.len != 4 || memcmp(ps.t.s, "main", 4)) {
    diag_error(d, ps.t.loc, "expected '@main' after 'def'");
    goto fail;
  }
  if (next(&ps)) goto fail;
  g->main = parse_fn(&ps, 1);
  if (!g->main) goto fail;
  if (ps.t.k != T_EOF) {
    char b[64];
    diag_error(d, ps.t.loc, "expected end of input after @main, found %s", tok_desc(&ps, b, sizeof b));
    goto fail;
  }
  if (g->a.failed) { diag_fail(d, TEMPER_ENOMEM, "out of memory while parsing"); goto fail; }
  *out = g;
  return TEMPER_OK;
fail:
  d->text = NULL;        /* the text dies with the graph; keep the message */
  temper_graph_destroy(g);
  if (d->status == TEMPER_OK) diag_fail(d, TEMPER_ENOMEM, "out of memory while parsing");
  return d->status;
}
