#!/usr/bin/env bash
# with_pg.sh COMMAND...: runs COMMAND beside a throwaway PostgreSQL server —
# initdb into a temporary directory, listening only on a unix socket in that
# directory (no TCP port) — and stops the server and deletes the directory
# when COMMAND ends, whatever its outcome (a failure, a crash, a signal).
# COMMAND finds the server through the environment: PGHOST (the socket's
# directory), PGUSER, PGDATABASE=postgres, TEMPER_TEST_PG (a URL prefix:
# append a database name), TEMPER_TEST_PG_CTL (pg_ctl for this server, with
# its data directory: append start/stop).
set -u
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
  echo "with_pg.sh: no PostgreSQL server (apt-get install postgresql; scripts/setup.sh does)" >&2
  exit 1
fi
dir=$(mktemp -d /tmp/temper-pg.XXXXXX)
as=""
if [ "$(id -u)" = 0 ]; then   # initdb refuses root: the server runs as Debian's postgres user
  chown postgres "$dir"
  as="runuser -u postgres --"
fi
fsync="-F"   # tests need no durability; a benchmark of commits does: TEMPER_PG_FSYNC=1
[ "${TEMPER_PG_FSYNC:-0}" = 1 ] && fsync=""
ctl="$as $bin/pg_ctl -D $dir/data -l $dir/server.log -w -o \"-k $dir -c listen_addresses='' $fsync\""
stop() {
  $as "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1
  rm -rf "$dir"
}
trap stop EXIT
trap 'exit 130' INT TERM
if ! $as "$bin/initdb" -D "$dir/data" -U temper --auth=trust -E UTF8 >"$dir/initdb.log" 2>&1; then
  cat "$dir/initdb.log" >&2
  exit 1
fi
if ! eval "$ctl start" >/dev/null 2>&1; then
  echo "with_pg.sh: the server did not start:" >&2
  cat "$dir/server.log" >&2
  exit 1
fi
export PGHOST="$dir" PGUSER=temper PGDATABASE=postgres
export TEMPER_TEST_PG="postgresql://temper@/?host=$dir&dbname="
export TEMPER_TEST_PG_CTL="$ctl"
"$@"
