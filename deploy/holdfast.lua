-- /etc/holdfast/holdfast.lua - holdfastd configuration.
--
-- Lua 5.4 in a sandbox (no io, os, require): the file returns one table.
-- Unknown keys are errors, so a typo never falls back to a default silently.
-- After editing:
--   holdfastd --check-config /etc/holdfast/holdfast.lua
--   systemctl reload holdfastd    # limits, log, namespaces, socket allow lists,
--                                 # redis.command_timeout_ms
--   systemctl restart holdfastd   # the rest of socket, redis and postgres
-- (docs/operations.md lists every setting and whether a reload applies it;
-- a reload logs a warning naming each restart-only setting it changed.)
-- The package installs this file owned by holdfast:root, mode 0600: it may
-- hold passwords, and members of the `holdfast` group (the daemon's callers)
-- must not read it.
return {
  socket = {
    -- Under holdfastd.socket systemd owns this path (ListenStream=) and sets
    -- its mode and group; the daemon uses the socket it is handed. Keep the
    -- two equal so holdfastctl's default path finds it either way.
    path = "/run/holdfast/holdfast.sock",
    mode = "0660",
    -- Extra SO_PEERCRED check on top of the file mode; empty = anyone who
    -- can open the socket.
    allow_uids = {},
    allow_gids = {},
  },

  redis = {
    -- Debian's redis-server: set `unixsocket /run/redis/redis-server.sock`
    -- and `unixsocketperm 770` in /etc/redis/redis.conf and give holdfastd
    -- the redis group (operations.md, "Redis over a Unix socket").
    -- Or "host:port" for TCP.
    address = "unix:/run/redis/redis-server.sock",
    pool_size = 2,
    connect_timeout_ms = 1000,
    command_timeout_ms = 1000,
    -- auto: FCALL, else EVALSHA/EVAL; release uses DELEX where Redis has it.
    script_path = "auto",
    release_path = "auto",
  },

  -- PostgreSQL is the system of record for Confirm/Cancel. Peer
  -- authentication over the local socket: OS user holdfast = role holdfast,
  -- no password in this file. The daemon is ready only once it is reachable.
  postgres = {
    dsn = "host=/run/postgresql dbname=holdfast user=holdfast application_name=holdfastd",
    pool_size = 2,
    connect_timeout_ms = 2000,
    statement_timeout_ms = 2000,
  },

  limits = {
    max_frame_bytes = 65536,
    max_inflight_per_conn = 1024,
    max_connections = 1024,
    max_ids = 64,
    default_timeout_ms = 2000,
    max_timeout_ms = 30000,
    -- SIGTERM waits this long for in-flight requests (TimeoutStopSec=30s).
    drain_timeout_ms = 5000,
  },

  log = {
    level = "info",
    -- Key for token fingerprints in the log. Unset: a random key per
    -- process, so fingerprints do not match across restarts or hosts.
    -- fingerprint_key = "...",
  },

  -- Busy polling: with a core to spare (no CPU limit), 50 takes about a
  -- third off a lone request's latency and keeps that core busy while
  -- traffic flows (docs/performance.md). 0: the loop sleeps when idle.
  loop = { busy_poll_us = 0 },

  namespaces = {
    -- Seats on one run of a train or show: held during checkout, sold by
    -- Confirm (a claim in PostgreSQL). No Redis, no hold.
    seat = {
      default_ttl_ms = 300000,
      min_ttl_ms = 1000,
      max_ttl_ms = 900000,
      confirmable = true,
      confirm_window_ms = 30000,
      on_redis_down = "fail_closed",
      min_replicas_ack = 0,
    },
    -- "Someone is already modifying product N": blocks duplicate requests.
    -- Without Redis the answer is `degraded` (nothing held), never a plain
    -- success.
    ["product-modify"] = {
      default_ttl_ms = 5000,
      min_ttl_ms = 100,
      max_ttl_ms = 60000,
      confirmable = false,
      on_redis_down = "best_effort",
    },
    -- Quantity holds (docs/pools.md): units of pools (standing tickets, a
    -- coupon batch, stock of one SKU) whose capacity PostgreSQL keeps; set
    -- it with `holdfastctl set-capacity`.
    -- ga = { kind = "pools", default_ttl_ms = 300000, confirmable = true },
  },
}
