#!/usr/bin/env bash
# A private Redis (+ PostgreSQL, once migrations exist) and holdfastd in DIR.
#   tools/devstack.sh up DIR [--foreground]   start; prints HOLDFAST_SOCKET=...
#   tools/devstack.sh down DIR                stop everything started in DIR
# Everything listens on Unix sockets; nothing touches the system's own Redis or
# PostgreSQL. HOLDFASTD selects the daemon binary; HOLDFAST_BUSY_POLL_US sets
# loop.busy_poll_us (default 0: off).
#
# DIR may be anywhere, e.g. a checkout under /root (mode 0700) as root. Redis,
# the daemon, its config and its socket live in DIR itself; PostgreSQL's data
# and socket live in a directory of their own under /tmp (HOLDFAST_PG_TMPDIR),
# which DIR/pg links to, because as root PostgreSQL runs as the 'postgres'
# user, who may not be able to enter DIR. That directory outlives `down`, so
# that the next `up` of DIR finds its data again; one whose DIR is gone (or no
# longer links to it) is removed by the next `up` of any stack of the same
# user, unless its server is still running.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
HOLDFASTD="${HOLDFASTD:-$ROOT/build/daemon/holdfastd}"
PGBIN="${PGBIN:-/usr/lib/postgresql/15/bin}"

cmd="${1:-}"; dir="${2:-}"
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 up|down DIR [--foreground]" >&2; exit 2; }
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"

# PostgreSQL refuses to run as root: run it as the 'postgres' system user
# (created by Debian's package) when we are root, from /, which it can enter
# whatever the caller's working directory.
as_pg() {
  if [ "$(id -u)" = 0 ]; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi
}

PG_TMPDIR="${HOLDFAST_PG_TMPDIR:-/tmp}"

# The directory that holds PostgreSQL's data and socket for DIR: where DIR/pg
# links to, or DIR/pg itself when that is a directory (stacks made before the
# link existed keep their data there).
pg_home() {
  if [ -L "$dir/pg" ]; then readlink "$dir/pg"; else echo "$dir/pg"; fi
}

# Remove this user's PostgreSQL directories whose stack is gone: the DIR
# recorded in them no longer links back, and no server runs there.
pg_collect() {
  local d stack pid
  for d in "$PG_TMPDIR"/holdfast-pg.*; do
    [ -f "$d/stack" ] && [ -O "$d/stack" ] || continue
    stack="$(cat "$d/stack")"
    [ "$(readlink "$stack/pg" 2>/dev/null)" = "$d" ] && continue
    if [ -f "$d/data/postmaster.pid" ]; then
      pid="$(head -1 "$d/data/postmaster.pid")"
      [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && continue
    fi
    rm -rf "$d"
  done
}

# Sets pg to the directory holding PostgreSQL's data and socket for DIR,
# making one (and the DIR/pg link) when there is none yet.
pg_prepare() {
  if [ -d "$dir/pg" ] && [ ! -L "$dir/pg" ]; then
    if [ -f "$dir/pg/data/PG_VERSION" ]; then pg="$dir/pg"; return; fi
    rm -rf "$dir/pg" # an empty or half-made one from an older devstack.sh
  fi
  if [ -L "$dir/pg" ] && [ -d "$(readlink "$dir/pg")" ]; then
    pg="$(readlink "$dir/pg")"
    return
  fi
  pg_collect
  pg="$(mktemp -d "$PG_TMPDIR/holdfast-pg.XXXXXX")"
  ln -sfn "$pg" "$dir/pg"
  echo "$dir" > "$pg/stack" # after the link: pg_collect keeps it from now on
  if [ "$(id -u)" = 0 ]; then chown postgres: "$pg"; fi
}

pg_wanted() { [ -d "$ROOT/daemon/sql/migrations" ] && "$HOLDFASTD" --help 2>&1 | grep -q -- --migrate; }

up() {
  [ -x "$HOLDFASTD" ] || { echo "devstack: $HOLDFASTD not built (tools/build.sh)" >&2; exit 1; }
  redis-server --port 0 --unixsocket "$dir/redis.sock" --unixsocketperm 700 --dir "$dir" \
    --save '' --appendonly no --daemonize yes --pidfile "$dir/redis.pid" \
    --logfile "$dir/redis.log"
  for _ in $(seq 100); do [ -S "$dir/redis.sock" ] && break; sleep 0.05; done

  local pg_section="" pg pool_namespace=""
  if pg_wanted; then
    pg_prepare
    if [ ! -d "$pg/data" ]; then
      as_pg "$PGBIN/initdb" -D "$pg/data" -U postgres -A trust >/dev/null
    fi
    as_pg "$PGBIN/pg_ctl" -D "$pg/data" -l "$pg/postgres.log" -w \
      -o "-c listen_addresses='' -c unix_socket_directories='$pg' -c fsync=off" start >/dev/null
    as_pg "$PGBIN/psql" -h "$pg" -U postgres -qtAc \
      "SELECT 1 FROM pg_database WHERE datname='holdfast'" | grep -q 1 ||
      as_pg "$PGBIN/createdb" -h "$pg" -U postgres holdfast
    "$HOLDFASTD" --migrate --dsn "host=$pg dbname=holdfast user=postgres"
    pg_section="postgres = { dsn = \"host=$pg dbname=holdfast user=postgres\", pool_size = 4 },"
    # Pools keep their capacity in PostgreSQL (docs/pools.md).
    pool_namespace='ga = { kind = "pools", default_ttl_ms = 60000, min_ttl_ms = 10,
             confirmable = true },'
  fi

  cat > "$dir/holdfast.lua" <<LUA
-- Written by tools/devstack.sh: a private stack for development and tests.
return {
  socket = { path = "$dir/holdfast.sock", mode = "0660" },
  redis = { address = "unix:$dir/redis.sock", pool_size = 2 },
  $pg_section
  limits = { default_timeout_ms = 2000 },
  log = { level = "info" },
  loop = { busy_poll_us = ${HOLDFAST_BUSY_POLL_US:-0} },
  namespaces = {
    seat = { default_ttl_ms = 60000, min_ttl_ms = 10, max_ttl_ms = 600000,
             confirmable = true, confirm_window_ms = 30000 },
    ["product-modify"] = { default_ttl_ms = 5000, on_redis_down = "best_effort" },
    -- Journey segments (docs/segments.md): a seat sold per leg.
    train = { default_ttl_ms = 60000, min_ttl_ms = 10, max_ttl_ms = 600000,
              confirmable = true, confirm_window_ms = 30000, max_legs = 8 },
    $pool_namespace
  },
}
LUA
  if [ "${3:-}" = "--foreground" ]; then
    echo "devstack: holdfastd in the foreground on $dir/holdfast.sock (Ctrl-C stops it)"
    "$HOLDFASTD" --config "$dir/holdfast.lua" || true
    return
  fi
  "$HOLDFASTD" --config "$dir/holdfast.lua" >>"$dir/holdfastd.log" 2>&1 &
  echo $! > "$dir/holdfastd.pid"
  for _ in $(seq 200); do
    "$(dirname "$HOLDFASTD")/holdfastctl" --socket "$dir/holdfast.sock" health >/dev/null 2>&1 && break
    sleep 0.05
  done
  echo "HOLDFAST_SOCKET=$dir/holdfast.sock"
}

down() {
  if [ -f "$dir/holdfastd.pid" ]; then
    pid="$(cat "$dir/holdfastd.pid")"
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    rm -f "$dir/holdfastd.pid"
  fi
  local pg
  pg="$(pg_home)"
  if [ -f "$pg/data/postmaster.pid" ]; then
    as_pg "$PGBIN/pg_ctl" -D "$pg/data" -m fast -w stop >/dev/null || true
  fi
  if [ -f "$dir/redis.pid" ]; then
    pid="$(cat "$dir/redis.pid")"
    kill -TERM "$pid" 2>/dev/null || true
    # Wait, so that callers may remove DIR once this returns.
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    rm -f "$dir/redis.pid"
  fi
}

case "$cmd" in
  up) up "$@" ;;
  down) down ;;
  *) echo "usage: $0 up|down DIR [--foreground]" >&2; exit 2 ;;
esac
