/* config.c - runs the configuration file in a Lua 5.4 sandbox and turns the
 * returned table into struct hf_config, one field table per section (name,
 * type, default, bounds, whether a reload applies it, description), as
 * Redis' standardConfig and PgBouncer's CF_ABS tables do. Every error names
 * file:line and the dotted key. The same tables drive the reload warnings
 * and the settings table in docs/operations.md. */
#include "config.h"

#include <errno.h>
#include <lauxlib.h>
#include <lua.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "address.h"
#include "busy_poll.h"
#include "lua_sandbox.h"
#include "token.h"
#include "validate.h"

/* The load's budgets (a kept sandbox gets the hooks' own, lua_sandbox.h). */
#define CONFIG_MEMORY_LIMIT (16u << 20)
#define CONFIG_INSTRUCTION_BUDGET 10000000
#define CONFIG_TIME_BUDGET_MS 2000u
#define CONFIG_HOOK_EVERY 1000

enum field_type { F_UINT, F_BOOL, F_STRING, F_MODE, F_ENUM, F_ID_LIST, F_FUNCTION,
                  F_STRING_LIST };

/* Pushes a setting that another module keeps (log.c's level, say) from cfg
 * into that module; NULL, or why it could not. */
typedef const char *apply_fn(const struct hf_config *cfg);

struct field {
    const char *name;         /* dotted, as in messages and docs; its last part is the key */
    enum field_type type;
    size_t offset;
    uint32_t def;             /* F_UINT, F_BOOL, F_MODE, F_ENUM (index) */
    const char *def_str;      /* F_STRING (NULL: optional, stays NULL) */
    uint32_t min, max;        /* F_UINT */
    const char *const *names; /* F_ENUM, NULL-terminated */
    bool restart;             /* read only at start-up: a reload warns instead */
    apply_fn *apply;          /* NULL, or run by hf_config_apply */
    const char *help;         /* one line for the settings table */
};

/* How a row takes effect: RESTART, read at start-up only (a reload that
 * changes it warns); RELOAD, read from the current config where it is used;
 * APPLIED(fn), kept by another module, into which fn pushes it whenever a
 * config is installed (hf_config_apply). */
#define RESTART true, NULL
#define RELOAD false, NULL
#define APPLIED(fn) false, fn

#define CFG(f) offsetof(struct hf_config, f)
#define NSF(f) offsetof(struct hf_namespace, f)

static const char *const script_names[] = {"auto", "fcall", "evalsha", "eval", NULL};
static const char *const release_names[] = {"auto", "script", "delex", NULL};
static const char *const policy_names[] = {"fail_closed", "best_effort", NULL};
static const char *const level_names[] = {"debug", "info", "warn", "error", NULL};
static const char *const log_requests_names[] = {"all", "errors", "off", NULL};
static const char *const kind_names[] = {"seats", "pools", NULL};

/* allow_uids/gids reload: server.c reads them from the current config on
 * every accept. */
static const struct field socket_fields[] = {
    {"socket.path", F_STRING, CFG(socket_path), 0, "/run/holdfast/holdfast.sock", 0, 0, NULL,
     RESTART, "Path of the listening Unix socket, at most 107 bytes. Ignored under socket "
              "activation; keep it equal to `ListenStream=`, `holdfastctl` uses it."},
    {"socket.mode", F_MODE, CFG(socket_mode), 0660, NULL, 0, 0, NULL, RESTART,
     "Permissions of the socket file. Ignored under socket activation."},
    {"socket.group", F_STRING, CFG(socket_group), 0, NULL, 0, 0, NULL, RESTART,
     "Group of the socket file; unset leaves it alone. Ignored under socket activation."},
    {"socket.allow_uids", F_ID_LIST, CFG(allow_uids), 0, NULL, 0, 0, NULL, RELOAD,
     "Peer uids admitted (`SO_PEERCRED`, checked on every connection). With both lists "
     "empty any peer that can open the socket is admitted."},
    {"socket.allow_gids", F_ID_LIST, CFG(allow_gids), 0, NULL, 0, 0, NULL, RELOAD,
     "Peer primary gids admitted; a peer whose uid or gid is listed gets in."},
};

/* command_timeout_ms reloads: each request reads it from its config. */
static const struct field redis_fields[] = {
    {"redis.address", F_STRING, CFG(redis_address), 0, "127.0.0.1:6379", 0, 0, NULL, RESTART,
     "`\"host:port\"` or `\"unix:/path\"`; with `cluster`, a node to ask for the slot map."},
    {"redis.username", F_STRING, CFG(redis_username), 0, NULL, 0, 0, NULL, RESTART,
     "ACL user for `AUTH` (used together with `password`)."},
    {"redis.password", F_STRING, CFG(redis_password), 0, NULL, 0, 0, NULL, RESTART,
     "Password for `AUTH`; unset: no `AUTH`. Never logged."},
    {"redis.db", F_UINT, CFG(redis_db), 0, NULL, 0, 15, NULL, RESTART,
     "Database number; must be 0 with `cluster`."},
    {"redis.pool_size", F_UINT, CFG(redis_pool_size), 2, NULL, 1, 64, NULL, RESTART,
     "Connections kept open (to every primary, with `cluster`)."},
    {"redis.connect_timeout_ms", F_UINT, CFG(redis_connect_timeout_ms), 1000, NULL, 10, 60000,
     NULL, RESTART, "Limit on connecting and on setting a connection up."},
    {"redis.command_timeout_ms", F_UINT, CFG(redis_command_timeout_ms), 1000, NULL, 5, 60000,
     NULL, RELOAD, "Limit on each Redis command of a request."},
    {"redis.script_path", F_ENUM, CFG(script_path), HF_SCRIPT_AUTO, NULL, 0, 0, script_names,
     RESTART, "How the scripts are called; `auto`: `FCALL`, else `EVALSHA`/`EVAL`."},
    {"redis.release_path", F_ENUM, CFG(release_path), HF_RELEASE_AUTO, NULL, 0, 0,
     release_names, RESTART, "How Release runs; `auto`: `DELEX` where Redis has it, else the "
                             "script."},
    {"redis.cluster", F_BOOL, CFG(redis_cluster), 0, NULL, 0, 0, NULL, RESTART,
     "`address` and `seeds` are Redis Cluster nodes (see [Redis Cluster](#redis-cluster))."},
    {"redis.seeds", F_STRING_LIST, CFG(redis_seeds), 0, NULL, 0, 0, NULL, RESTART,
     "More cluster nodes to ask for the slot map, same forms as `address`; only with "
     "`cluster`."},
    {"redis.tls", F_BOOL, CFG(redis_tls), 0, NULL, 0, 0, NULL, RESTART,
     "Connect over TLS, to every cluster node too; addresses must be `\"host:port\"` (see "
     "[TLS](#tls))."},
    {"redis.tls_ca_file", F_STRING, CFG(redis_tls_ca_file), 0, NULL, 0, 0, NULL, RESTART,
     "PEM file of the CA certificates the server's certificate must chain to; with "
     "`tls_ca_dir` unset too: the system's CAs."},
    {"redis.tls_ca_dir", F_STRING, CFG(redis_tls_ca_dir), 0, NULL, 0, 0, NULL, RESTART,
     "Directory of CA certificates named by hash (`openssl rehash`)."},
    {"redis.tls_cert_file", F_STRING, CFG(redis_tls_cert_file), 0, NULL, 0, 0, NULL, RESTART,
     "Client certificate chain (PEM) for servers that ask for one (`tls-auth-clients`); "
     "with `tls_key_file`."},
    {"redis.tls_key_file", F_STRING, CFG(redis_tls_key_file), 0, NULL, 0, 0, NULL, RESTART,
     "Private key (PEM, unencrypted) of `tls_cert_file`."},
    {"redis.tls_server_name", F_STRING, CFG(redis_tls_server_name), 0, NULL, 0, 0, NULL,
     RESTART, "Name sent as SNI and required in every node's certificate; unset: the host of "
              "each address (an IP address must be among the certificate's IP SANs)."},
    {"redis.tls_verify", F_BOOL, CFG(redis_tls_verify), 1, NULL, 0, 0, NULL, RESTART,
     "Check the server's certificate chain and name; `false` encrypts without knowing who "
     "answers (never in production)."},
};

static const struct field postgres_fields[] = {
    {"postgres.dsn", F_STRING, CFG(pg_dsn), 0, NULL, 0, 0, NULL, RESTART,
     "libpq connection string; unset: no PostgreSQL, Confirm and Cancel are refused."},
    {"postgres.pool_size", F_UINT, CFG(pg_pool_size), 2, NULL, 1, 64, NULL, RESTART,
     "Connections kept open."},
    {"postgres.connect_timeout_ms", F_UINT, CFG(pg_connect_timeout_ms), 2000, NULL, 10, 60000,
     NULL, RESTART, "Limit on connecting and on setting a session up."},
    {"postgres.statement_timeout_ms", F_UINT, CFG(pg_statement_timeout_ms), 2000, NULL, 10,
     600000, NULL, RESTART, "`statement_timeout` of the daemon's sessions."},
    {"postgres.prepared_statements", F_BOOL, CFG(pg_prepare_statements), 1, NULL, 0, 0, NULL,
     RESTART,
     "Run the confirm and pool statements as prepared statements of each session (parsed "
     "and planned once; about 1.3x the throughput). `false` behind a pooler that cannot "
     "keep them (PgBouncer in transaction mode before 1.21, or without "
     "`max_prepared_statements`)."},
    {"postgres.idempotency_retention_s", F_UINT, CFG(pg_idempotency_retention_s), 7 * 86400,
     NULL, 60, 366 * 86400, NULL, RESTART,
     "How long Confirm/Cancel idempotency records are kept before pruning."},
};

/* Every limit is read from the request's (or connection's) config. */
static const struct field limits_fields[] = {
    {"limits.max_frame_bytes", F_UINT, CFG(max_frame_bytes), 65536, NULL, 1024, 16u << 20,
     NULL, RELOAD, "Largest request frame; a larger one closes the connection."},
    {"limits.max_inflight_per_conn", F_UINT, CFG(max_inflight_per_conn), 1024, NULL, 1,
     1000000, NULL, RELOAD,
     "Requests one connection may have in flight; more answer `RESOURCE_EXHAUSTED`."},
    {"limits.max_connections", F_UINT, CFG(max_connections), 1024, NULL, 1, 1000000, NULL,
     RELOAD, "Client connections at once; more are closed on accept."},
    {"limits.max_ids", F_UINT, CFG(max_ids), 64, NULL, 1, 10000, NULL, RELOAD,
     "Ids in one request."},
    {"limits.default_timeout_ms", F_UINT, CFG(default_timeout_ms), 2000, NULL, 1, 3600000,
     NULL, RELOAD, "Deadline of a request that sets none; at most `max_timeout_ms`."},
    {"limits.max_timeout_ms", F_UINT, CFG(max_timeout_ms), 30000, NULL, 1, 3600000, NULL,
     RELOAD, "Longer deadlines asked for by requests are cut to this."},
    {"limits.min_timeout_ms", F_UINT, CFG(min_timeout_ms), 10, NULL, 1, 60000, NULL, RELOAD,
     "Shorter deadlines asked for by requests are raised to this (the floor)."},
    {"limits.drain_timeout_ms", F_UINT, CFG(drain_timeout_ms), 5000, NULL, 0, 3600000, NULL,
     RELOAD, "How long `SIGTERM` waits for requests in flight."},
    {"limits.max_connections_per_uid", F_UINT, CFG(max_connections_per_uid), 256, NULL, 0,
     1000000, NULL, RELOAD,
     "Client connections one peer uid (`SO_PEERCRED`) may have at once; more are refused on "
     "accept like `max_connections`. 0: no per-uid limit."},
    {"limits.max_queued_bytes", F_UINT, CFG(max_queued_bytes), 16u << 20, NULL, 1u << 20,
     1u << 30, NULL, RELOAD,
     "Answer bytes queued for all clients together; past it the connection with the most "
     "unread answers is closed as a slow reader."},
    {"limits.slow_reader_timeout_ms", F_UINT, CFG(slow_reader_timeout_ms), 10000, NULL, 10,
     3600000, NULL, RELOAD,
     "A connection whose unread answers stay above 8 MiB this long (it is not read from "
     "meanwhile), or that does not read its final error, is closed."},
    {"limits.frame_timeout_ms", F_UINT, CFG(frame_timeout_ms), 5000, NULL, 10, 3600000, NULL,
     RELOAD, "A request frame must be complete this long after its first byte arrived; else "
             "the connection is answered `RESOURCE_EXHAUSTED` and closed."},
    {"limits.idle_timeout_ms", F_UINT, CFG(idle_timeout_ms), 0, NULL, 0, 86400000, NULL,
     RELOAD, "A connection with no request in flight, no answer queued and no partial frame "
             "is answered `UNAVAILABLE` and closed after this long. 0: never."},
};

static const char *apply_log_level(const struct hf_config *cfg) {
    hf_log_set_level(cfg->log_level);
    return NULL;
}

static const char *apply_fingerprint_key(const struct hf_config *cfg) {
    if (hf_token_set_fingerprint_key(cfg->log_fingerprint_key) == 0) return NULL;
    return "libsodium initialisation failed";
}

static const struct field log_fields[] = {
    {"log.level", F_ENUM, CFG(log_level), HF_LOG_INFO, NULL, 0, 0, level_names,
     APPLIED(apply_log_level), "Least severe level logged."},
    {"log.fingerprint_key", F_STRING, CFG(log_fingerprint_key), 0, NULL, 0, 0, NULL,
     APPLIED(apply_fingerprint_key),
     "Key of the token fingerprints in the log; unset: random per process, so fingerprints "
     "match only within one run."},
    {"log.probes", F_BOOL, CFG(log_probes), 0, NULL, 0, 0, NULL, RELOAD,
     "Log Health and Metrics requests (probes, scrapes) at `info`; `false`: at `debug`."},
    {"log.requests", F_ENUM, CFG(log_requests), HF_LOG_REQUESTS_ALL, NULL, 0, 0,
     log_requests_names, RELOAD,
     "Which answered requests get their `req` line (at `info`): `all`, `errors` (every "
     "answer but `OK`), or `off` (`INTERNAL` answers are still logged, at `error`)."},
    {"log.requests_sample", F_UINT, CFG(log_requests_sample), 1, NULL, 1, 1000000, NULL, RELOAD,
     "With `log.requests = \"all\"`, log 1 in this many `OK` answers (every other answer "
     "is logged). 1: every one."},
};

static const char *apply_busy_poll(const struct hf_config *cfg) {
    hf_busy_poll_set(cfg->busy_poll_us);
    return NULL;
}

static const struct field loop_fields[] = {
    {"loop.busy_poll_us", F_UINT, CFG(busy_poll_us), 0, NULL, 0, 1000, NULL,
     APPLIED(apply_busy_poll),
     "After taking a request or writing answers, keep polling without sleeping for this "
     "long (µs), yielding the CPU on every empty turn: a lone request no longer pays for "
     "waking the daemon twice (about 30 % off its latency on a virtual machine), but a core "
     "stays busy while traffic flows. For a spare core only; 0: off (see "
     "[performance](performance.md))."},
};

/* The HTTP listener (http.c) is created once, at start-up. */
#define HTTP_ADDRESS_DEFAULT "127.0.0.1:9464"
static const struct field metrics_fields[] = {
    {"metrics.http", F_BOOL, CFG(metrics_http), 0, NULL, 0, 0, NULL, RESTART,
     "Serve `GET /metrics` (Prometheus text), `/healthz` and `/readyz` over HTTP at "
     "`http_address` (see [Metrics](#metrics))."},
    {"metrics.http_address", F_STRING, CFG(metrics_http_address), 0, HTTP_ADDRESS_DEFAULT, 0,
     0, NULL, RESTART,
     "`\"IPv4:port\"` or `\"[IPv6]:port\"`, numeric; port 0 takes a free port (logged). Only "
     "with `http = true`."},
};

/* A request looks its namespace up in its own config: all of it reloads. */
#define DAY_MS 86400000u
static const struct field namespace_fields[] = {
    {"namespaces.<name>.default_ttl_ms", F_UINT, NSF(default_ttl_ms), 30000, NULL, 10, DAY_MS,
     NULL, RELOAD, "TTL of a hold that asks for none; within `min_ttl_ms`..`max_ttl_ms`."},
    {"namespaces.<name>.min_ttl_ms", F_UINT, NSF(min_ttl_ms), 10, NULL, 10, DAY_MS, NULL,
     RELOAD, "Shortest TTL a hold may ask for; shorter ones are refused."},
    {"namespaces.<name>.max_ttl_ms", F_UINT, NSF(max_ttl_ms), 600000, NULL, 10, DAY_MS, NULL,
     RELOAD, "Longest TTL a hold may ask for; longer ones are refused."},
    {"namespaces.<name>.confirmable", F_BOOL, NSF(confirmable), 0, NULL, 0, 0, NULL, RELOAD,
     "Holds may be confirmed into claims in PostgreSQL (needs `postgres.dsn`)."},
    {"namespaces.<name>.confirm_window_ms", F_UINT, NSF(confirm_window_ms), 30000, NULL, 100,
     DAY_MS, NULL, RELOAD, "TTL a hold gets while PostgreSQL commits its Confirm."},
    {"namespaces.<name>.confirmed_marker_ttl_ms", F_UINT, NSF(confirmed_marker_ttl_ms), DAY_MS,
     NULL, 0, 30 * DAY_MS, NULL, RELOAD,
     "How long confirmed ids stay marked in Redis; 0: release them instead."},
    {"namespaces.<name>.on_redis_down", F_ENUM, NSF(on_redis_down), HF_FAIL_CLOSED, NULL, 0, 0,
     policy_names, RELOAD,
     "Without Redis, `fail_closed` answers `UNAVAILABLE`, `best_effort` answers degraded "
     "(nothing held)."},
    {"namespaces.<name>.min_replicas_ack", F_UINT, NSF(min_replicas_ack), 0, NULL, 0, 16, NULL,
     RELOAD, "Replicas that must acknowledge a grant (`WAIT`) before it counts."},
    {"namespaces.<name>.replicas_ack_timeout_ms", F_UINT, NSF(replicas_ack_timeout_ms), 100,
     NULL, 1, 60000, NULL, RELOAD, "How long to wait for those acknowledgements."},
    {"namespaces.<name>.max_legs", F_UINT, NSF(max_legs), 0, NULL, 0, 1000, NULL, RELOAD,
     "Journey segments: the most legs one request may span; 0 = seats without segments. "
     "When set, every request in the namespace names a segment (docs/segments.md)."},
    {"namespaces.<name>.session_ttl_ms", F_UINT, NSF(session_ttl_ms), 5000, NULL, 10, DAY_MS,
     NULL, RELOAD,
     "TTL of a session hold (`HoldRequest.session`), renewed every third of it while its "
     "connection lives; clamped to `min_ttl_ms`..`max_ttl_ms` (docs/sessions.md)."},
    {"namespaces.<name>.admit", F_FUNCTION, NSF(admit_hook), 0, NULL, 0, 0, NULL, RELOAD,
     "Policy hook called for every Hold; it may refuse the hold or set its TTL. Each call "
     "gets 200,000 instructions and 10 ms, the hooks 4 MiB; one that fails refuses the Hold "
     "(see [Policy hooks](architecture.md#policy-hooks))."},
    {"namespaces.<name>.kind", F_ENUM, NSF(kind), HF_KIND_SEATS, NULL, 0, 0, kind_names, RELOAD,
     "`seats`: holds name resource ids; `pools`: holds take units of pools with a capacity "
     "kept in PostgreSQL (needs `postgres.dsn`; see [Pools](pools.md))."},
};

#define N_FIELDS(a) (sizeof(a) / sizeof((a)[0]))

struct section {
    const char *key;
    const struct field *fields;
    size_t n;
};

static const struct section sections[] = {
    {"socket", socket_fields, N_FIELDS(socket_fields)},
    {"redis", redis_fields, N_FIELDS(redis_fields)},
    {"postgres", postgres_fields, N_FIELDS(postgres_fields)},
    {"limits", limits_fields, N_FIELDS(limits_fields)},
    {"log", log_fields, N_FIELDS(log_fields)},
    {"loop", loop_fields, N_FIELDS(loop_fields)},
    {"metrics", metrics_fields, N_FIELDS(metrics_fields)},
};

/* One load of a file: where its messages go, and its source for finding a
 * key's line. */
struct load {
    const char *name; /* the file, for messages */
    const char *text; /* its source */
    char *err;
    size_t errlen;
    bool keep_state;  /* a hook was defined: the sandbox outlives the load */
};

/* ---- locating a key in the source, for file:line messages ---- */

static bool ident_char(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '_';
}

/* Find `word` as a table key (word followed by optional spaces and '=', or
 * ["word"]) at or after `from`. Returns its offset or -1. */
static long find_key(const char *text, size_t from, const char *word) {
    size_t wl = strlen(word);
    for (const char *p = strstr(text + from, word); p; p = strstr(p + 1, word)) {
        if (p > text && ident_char(p[-1])) continue;
        const char *q = p + wl;
        if (ident_char(*q)) continue;
        if (*q == '"' || *q == '\'') q++;
        if (*q == ']') q++;
        while (*q == ' ' || *q == '\t') q++;
        if (*q == '=') return (long)(p - text);
    }
    return -1;
}

/* Line of the deepest component of a dotted path that can be found. */
static int line_of(const char *text, const char *dotted) {
    if (!text) return 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", dotted);
    size_t pos = 0;
    long found = -1;
    char *save = NULL;
    for (char *part = strtok_r(buf, ".", &save); part; part = strtok_r(NULL, ".", &save)) {
        long at = find_key(text, pos, part);
        if (at < 0) break;
        found = at;
        pos = (size_t)at + 1;
    }
    if (found < 0) return 0;
    int line = 1;
    for (long i = 0; i < found; i++)
        if (text[i] == '\n') line++;
    return line;
}

static bool fail(struct load *ctx, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static bool fail(struct load *ctx, const char *key, const char *fmt, ...) {
    char why[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    int line = line_of(ctx->text, key);
    if (line > 0)
        snprintf(ctx->err, ctx->errlen, "%s:%d: key '%s': %s", ctx->name, line, key, why);
    else
        snprintf(ctx->err, ctx->errlen, "%s: key '%s': %s", ctx->name, key, why);
    return false;
}

/* ---- reading typed values ---- */

static bool read_uint(struct load *ctx, lua_State *L, const char *key, uint32_t min,
                      uint32_t max, uint32_t *out) {
    if (!lua_isinteger(L, -1)) {
        if (lua_type(L, -1) == LUA_TNUMBER)
            return fail(ctx, key, "must be a whole number");
        return fail(ctx, key, "must be a number, got %s", luaL_typename(L, -1));
    }
    lua_Integer v = lua_tointeger(L, -1);
    if (v < (lua_Integer)min || v > (lua_Integer)max)
        return fail(ctx, key, "must be between %u and %u, got %lld", min, max, (long long)v);
    *out = (uint32_t)v;
    return true;
}

static bool read_mode(struct load *ctx, lua_State *L, const char *key, uint32_t *out) {
    /* "0660" as a string (octal), or a number written as 0x1b0 / 432. */
    if (lua_type(L, -1) == LUA_TSTRING) {
        const char *s = lua_tostring(L, -1);
        char *end;
        errno = 0;
        unsigned long v = strtoul(s, &end, 8);
        if (errno || *end || end == s || v > 07777)
            return fail(ctx, key, "must be an octal mode string such as \"0660\"");
        *out = (uint32_t)v;
        return true;
    }
    return read_uint(ctx, L, key, 0, 07777, out);
}

static bool read_id_list(struct load *ctx, lua_State *L, const char *key, uint32_t **out,
                         size_t *n_out) {
    if (!lua_istable(L, -1)) return fail(ctx, key, "must be a list of numeric ids");
    size_t n = (size_t)luaL_len(L, -1);
    uint32_t *ids = n ? calloc(n, sizeof *ids) : NULL;
    if (n && !ids) return fail(ctx, key, "out of memory");
    for (size_t i = 0; i < n; i++) {
        lua_geti(L, -1, (lua_Integer)i + 1);
        char sub[300];
        snprintf(sub, sizeof sub, "%.256s[%zu]", key, i + 1);
        bool ok = read_uint(ctx, L, sub, 0, UINT32_MAX - 1, &ids[i]);
        lua_pop(L, 1);
        if (!ok) {
            free(ids);
            return false;
        }
    }
    *out = ids;
    *n_out = n;
    return true;
}

static void free_string_list(char **list, size_t n) {
    for (size_t i = 0; list && i < n; i++) free(list[i]);
    free(list);
}

static bool read_string_list(struct load *ctx, lua_State *L, const char *key, char ***out,
                             size_t *n_out) {
    if (!lua_istable(L, -1)) return fail(ctx, key, "must be a list of strings");
    size_t n = (size_t)luaL_len(L, -1);
    char **list = n ? calloc(n, sizeof *list) : NULL;
    if (n && !list) return fail(ctx, key, "out of memory");
    for (size_t i = 0; i < n; i++) {
        lua_geti(L, -1, (lua_Integer)i + 1);
        size_t len = 0;
        const char *s = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &len) : NULL;
        char sub[300];
        snprintf(sub, sizeof sub, "%.256s[%zu]", key, i + 1);
        bool ok = s && len > 0 && strlen(s) == len;
        if (ok) list[i] = strdup(s);
        lua_pop(L, 1);
        if (!ok || !list[i]) {
            free_string_list(list, n);
            return fail(ctx, sub, ok ? "out of memory" : "must be a non-empty string");
        }
    }
    free_string_list(*out, *n_out);
    *out = list;
    *n_out = n;
    return true;
}

static bool read_field(struct load *ctx, lua_State *L, const struct field *f,
                       const char *key, void *base) {
    char *slot = (char *)base + f->offset;
    switch (f->type) {
    case F_UINT:
        return read_uint(ctx, L, key, f->min, f->max, (uint32_t *)(void *)slot);
    case F_MODE:
        return read_mode(ctx, L, key, (uint32_t *)(void *)slot);
    case F_BOOL:
        if (!lua_isboolean(L, -1)) return fail(ctx, key, "must be true or false");
        *(bool *)slot = lua_toboolean(L, -1);
        return true;
    case F_STRING: {
        if (lua_type(L, -1) != LUA_TSTRING) return fail(ctx, key, "must be a string");
        size_t len;
        const char *s = lua_tolstring(L, -1, &len);
        if (len == 0) return fail(ctx, key, "must not be empty");
        if (strlen(s) != len) return fail(ctx, key, "must not contain NUL bytes");
        char **dst = (char **)(void *)slot;
        free(*dst);
        *dst = strdup(s);
        return *dst ? true : fail(ctx, key, "out of memory");
    }
    case F_ENUM: {
        if (lua_type(L, -1) != LUA_TSTRING) return fail(ctx, key, "must be a string");
        const char *s = lua_tostring(L, -1);
        for (int i = 0; f->names[i]; i++) {
            if (strcmp(s, f->names[i]) == 0) {
                *(int *)(void *)slot = i;
                return true;
            }
        }
        char choices[256] = "";
        for (int i = 0; f->names[i]; i++) {
            strncat(choices, i ? ", " : "", sizeof choices - strlen(choices) - 1);
            strncat(choices, f->names[i], sizeof choices - strlen(choices) - 1);
        }
        return fail(ctx, key, "must be one of %s, got \"%s\"", choices, s);
    }
    case F_FUNCTION:
        if (!lua_isfunction(L, -1)) return fail(ctx, key, "must be a function");
        lua_pushvalue(L, -1); /* luaL_ref pops it; the caller pops the original */
        *(int *)(void *)slot = luaL_ref(L, LUA_REGISTRYINDEX);
        ctx->keep_state = true;
        return true;
    case F_ID_LIST: {
        uint32_t **list = (uint32_t **)(void *)slot;
        size_t *count = (size_t *)(void *)(slot + sizeof(uint32_t *));
        return read_id_list(ctx, L, key, list, count);
    }
    case F_STRING_LIST: {
        char ***list = (char ***)(void *)slot;
        size_t *count = (size_t *)(void *)(slot + sizeof(char **));
        return read_string_list(ctx, L, key, list, count);
    }
    }
    return fail(ctx, key, "internal: unknown field type");
}

static void apply_defaults(const struct field *fields, size_t n, void *base) {
    for (size_t i = 0; i < n; i++) {
        char *slot = (char *)base + fields[i].offset;
        switch (fields[i].type) {
        case F_UINT:
        case F_MODE: *(uint32_t *)(void *)slot = fields[i].def; break;
        case F_BOOL: *(bool *)slot = fields[i].def != 0; break;
        case F_ENUM: *(int *)(void *)slot = (int)fields[i].def; break;
        case F_STRING:
            *(char **)(void *)slot = fields[i].def_str ? strdup(fields[i].def_str) : NULL;
            break;
        case F_ID_LIST:
        case F_STRING_LIST: break; /* zeroed by calloc */
        case F_FUNCTION: *(int *)(void *)slot = 0; break;
        }
    }
}

static const char *field_key(const struct field *f) { return strrchr(f->name, '.') + 1; }

/* Read the table on top of the stack against `fields`; unknown keys are
 * errors so that a typo never silently falls back to a default. */
static bool read_table(struct load *ctx, lua_State *L, const char *prefix,
                       const struct field *fields, size_t n, void *base) {
    char key[256];
    if (!lua_istable(L, -1)) return fail(ctx, prefix, "must be a table");
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        if (lua_type(L, -2) != LUA_TSTRING) {
            lua_pop(L, 2);
            return fail(ctx, prefix, "keys must be names");
        }
        const char *k = lua_tostring(L, -2);
        snprintf(key, sizeof key, "%s.%s", prefix, k);
        const struct field *f = NULL;
        for (size_t i = 0; i < n; i++)
            if (strcmp(field_key(&fields[i]), k) == 0) f = &fields[i];
        if (!f) {
            lua_pop(L, 2);
            return fail(ctx, key, "unknown key");
        }
        if (!read_field(ctx, L, f, key, base)) {
            lua_pop(L, 2);
            return false;
        }
        lua_pop(L, 1);
    }
    return true;
}

static bool read_namespace(struct load *ctx, lua_State *L, const char *name,
                           struct hf_namespace *ns) {
    char prefix[256];
    snprintf(prefix, sizeof prefix, "namespaces.%s", name);
    if (!hf_valid_name(name, strlen(name)))
        return fail(ctx, prefix, "namespace names use [A-Za-z0-9._-], 1-128 bytes");
    apply_defaults(namespace_fields, N_FIELDS(namespace_fields), ns);
    ns->name = strdup(name);
    if (!ns->name) return fail(ctx, prefix, "out of memory");
    if (!read_table(ctx, L, prefix, namespace_fields, N_FIELDS(namespace_fields), ns))
        return false;
    char key[300];
    if (ns->min_ttl_ms > ns->max_ttl_ms) {
        snprintf(key, sizeof key, "%s.min_ttl_ms", prefix);
        return fail(ctx, key, "must not exceed max_ttl_ms (%u)", ns->max_ttl_ms);
    }
    if (ns->default_ttl_ms < ns->min_ttl_ms || ns->default_ttl_ms > ns->max_ttl_ms) {
        snprintf(key, sizeof key, "%s.default_ttl_ms", prefix);
        return fail(ctx, key, "must lie within min_ttl_ms..max_ttl_ms (%u..%u)",
                    ns->min_ttl_ms, ns->max_ttl_ms);
    }
    return true;
}

static bool read_namespaces(struct load *ctx, lua_State *L, struct hf_config *cfg) {
    if (!lua_istable(L, -1)) return fail(ctx, "namespaces", "must be a table of tables");
    size_t count = 0;
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        count++;
        lua_pop(L, 1);
    }
    if (count == 0) return fail(ctx, "namespaces", "configure at least one namespace");
    cfg->namespaces = calloc(count, sizeof *cfg->namespaces);
    if (!cfg->namespaces) return fail(ctx, "namespaces", "out of memory");
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        if (lua_type(L, -2) != LUA_TSTRING) {
            lua_pop(L, 2);
            return fail(ctx, "namespaces", "keys must be namespace names");
        }
        const char *name = lua_tostring(L, -2);
        struct hf_namespace *ns = &cfg->namespaces[cfg->n_namespaces++];
        if (!read_namespace(ctx, L, name, ns)) {
            lua_pop(L, 2);
            return false;
        }
        lua_pop(L, 1);
    }
    return true;
}

/* Why a Redis node's address cannot be used; NULL when it can. */
static const char *redis_address_problem(const char *text) {
    struct hf_address a;
    const char *why = NULL;
    return hf_address_parse(text, &a, &why) ? NULL : why;
}

/* Why the HTTP listener's address cannot be bound as it is (http.c binds
 * it without a lookup); NULL when it can. */
static const char *http_address_problem(const char *text) {
    struct hf_address a;
    struct sockaddr_storage ss;
    const char *why = NULL;
    if (!hf_address_parse(text, &a, &why) || !hf_address_sockaddr(&a, &ss, &why)) return why;
    return NULL;
}

/* A Redis address already checked by redis_address_problem. */
static bool is_unix_address(const char *text) {
    struct hf_address a;
    const char *why;
    return hf_address_parse(text, &a, &why) && a.is_unix;
}

static bool validate_redis_tls(struct load *ctx, const struct hf_config *cfg) {
    static const struct {
        const char *key;
        size_t offset;
    } tls_only[] = {
        {"redis.tls_ca_file", CFG(redis_tls_ca_file)},
        {"redis.tls_ca_dir", CFG(redis_tls_ca_dir)},
        {"redis.tls_cert_file", CFG(redis_tls_cert_file)},
        {"redis.tls_key_file", CFG(redis_tls_key_file)},
        {"redis.tls_server_name", CFG(redis_tls_server_name)},
    };
    if (!cfg->redis_tls) {
        for (size_t i = 0; i < N_FIELDS(tls_only); i++)
            if (*(char *const *)(const void *)((const char *)cfg + tls_only[i].offset))
                return fail(ctx, tls_only[i].key, "is only used with redis.tls = true");
        if (!cfg->redis_tls_verify)
            return fail(ctx, "redis.tls_verify", "is only used with redis.tls = true");
        return true;
    }
    /* Redis serves TLS on its tls-port, never on a Unix socket. */
    if (is_unix_address(cfg->redis_address))
        return fail(ctx, "redis.address", "must be \"host:port\" with redis.tls");
    for (size_t i = 0; i < cfg->n_redis_seeds; i++) {
        if (!is_unix_address(cfg->redis_seeds[i])) continue;
        char key[64];
        snprintf(key, sizeof key, "redis.seeds[%zu]", i + 1);
        return fail(ctx, key, "must be \"host:port\" with redis.tls");
    }
    if (cfg->redis_tls_cert_file && !cfg->redis_tls_key_file)
        return fail(ctx, "redis.tls_cert_file", "needs redis.tls_key_file");
    if (cfg->redis_tls_key_file && !cfg->redis_tls_cert_file)
        return fail(ctx, "redis.tls_key_file", "needs redis.tls_cert_file");
    return true;
}

/* Every Redis node the file names. */
static bool validate_redis_addresses(struct load *ctx, const struct hf_config *cfg) {
    const char *why = redis_address_problem(cfg->redis_address);
    if (why) return fail(ctx, "redis.address", "must be \"unix:/path\" or \"host:port\" (%s)", why);
    for (size_t i = 0; i < cfg->n_redis_seeds; i++) {
        char key[64];
        snprintf(key, sizeof key, "redis.seeds[%zu]", i + 1);
        why = redis_address_problem(cfg->redis_seeds[i]);
        if (why) return fail(ctx, key, "must be \"unix:/path\" or \"host:port\" (%s)", why);
    }
    return true;
}

static bool validate_metrics_http(struct load *ctx, const struct hf_config *cfg) {
    const char *why = http_address_problem(cfg->metrics_http_address);
    if (why)
        return fail(ctx, "metrics.http_address",
                    "must be \"IPv4:port\" or \"[IPv6]:port\" with a numeric address, such as "
                    "\"127.0.0.1:9464\" (%s)", why);
    if (!cfg->metrics_http && strcmp(cfg->metrics_http_address, HTTP_ADDRESS_DEFAULT) != 0)
        return fail(ctx, "metrics.http_address", "is only used with metrics.http = true");
    return true;
}

static bool validate_whole(struct load *ctx, struct hf_config *cfg) {
    if (cfg->default_timeout_ms > cfg->max_timeout_ms)
        return fail(ctx, "limits.default_timeout_ms", "must not exceed limits.max_timeout_ms (%u)",
                    cfg->max_timeout_ms);
    if (cfg->min_timeout_ms > cfg->default_timeout_ms)
        return fail(ctx, "limits.min_timeout_ms", "must not exceed limits.default_timeout_ms (%u)",
                    cfg->default_timeout_ms);
    if (!validate_redis_addresses(ctx, cfg)) return false;
    if (cfg->n_redis_seeds && !cfg->redis_cluster)
        return fail(ctx, "redis.seeds", "is only used with redis.cluster = true");
    if (cfg->redis_cluster && cfg->redis_db != 0)
        return fail(ctx, "redis.db", "must be 0 with redis.cluster (a cluster has one database)");
    if (!validate_redis_tls(ctx, cfg)) return false;
    if (strlen(cfg->socket_path) >= 108)
        return fail(ctx, "socket.path", "longer than a Unix socket path may be (107 bytes)");
    if (!validate_metrics_http(ctx, cfg)) return false;
    for (size_t i = 0; i < cfg->n_namespaces; i++) {
        if (cfg->namespaces[i].kind != HF_KIND_POOLS || cfg->pg_dsn) continue;
        char key[300];
        snprintf(key, sizeof key, "namespaces.%s.kind", cfg->namespaces[i].name);
        return fail(ctx, key, "\"pools\" needs postgres.dsn: capacities live in PostgreSQL");
    }
    return true;
}

static bool read_root(struct load *ctx, lua_State *L, struct hf_config *cfg) {
    if (!lua_istable(L, -1)) {
        snprintf(ctx->err, ctx->errlen, "%s: the file must return a table, got %s", ctx->name,
                 luaL_typename(L, -1));
        return false;
    }
    for (size_t i = 0; i < N_FIELDS(sections); i++)
        apply_defaults(sections[i].fields, sections[i].n, cfg);
    bool have_namespaces = false;
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
        bool ok = false, known = false;
        if (k && strcmp(k, "namespaces") == 0) {
            known = true;
            have_namespaces = true;
            ok = read_namespaces(ctx, L, cfg);
        }
        for (size_t i = 0; k && !known && i < N_FIELDS(sections); i++) {
            if (strcmp(k, sections[i].key) == 0) {
                known = true;
                ok = read_table(ctx, L, k, sections[i].fields, sections[i].n, cfg);
            }
        }
        if (!known) ok = fail(ctx, k ? k : "?", "unknown top-level key");
        if (!ok) {
            lua_pop(L, 2);
            return false;
        }
        lua_pop(L, 1);
    }
    if (!have_namespaces) return fail(ctx, "namespaces", "missing: configure at least one");
    return validate_whole(ctx, cfg);
}

/* ---- running the file in the sandbox ---- */

/* A failed load's message from the error on top of the stack. Lua's says
 * file:line: why; running out of memory gets the file name and the limit;
 * a stopped load says why in stop_msg. */
static void load_failed(struct load *ctx, const struct hf_lua *lua, int status) {
    lua_State *L = lua->L;
    const char *msg = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "error";
    if (lua->stop != HF_LUA_RUNNING) msg = lua->stop_msg;
    if (strncmp(msg, ctx->name, strlen(ctx->name)) == 0)
        snprintf(ctx->err, ctx->errlen, "%s", msg);
    else if (lua->stop == HF_LUA_RUNNING && (status == LUA_ERRMEM || strstr(msg, "memory")))
        snprintf(ctx->err, ctx->errlen, "%s: %s (the sandbox allows %u MiB)", ctx->name, msg,
                 CONFIG_MEMORY_LIMIT >> 20);
    else
        snprintf(ctx->err, ctx->errlen, "%s: %s", ctx->name, msg);
}

struct reading {
    struct load *ctx;
    struct hf_config *cfg;
    const char *chunkname;
    bool ok;
};

/* The file run and what it returns read, in protected mode: a __len or
 * __index metamethod in the file's tables may raise, and luaL_ref may run
 * out of memory. */
static int read_protected(lua_State *L) {
    struct reading *r = lua_touserdata(L, 1);
    const char *text = r->ctx->text;
    /* "t": text only, precompiled bytecode could escape the sandbox. */
    if (luaL_loadbufferx(L, text, strlen(text), r->chunkname, "t") != LUA_OK)
        return lua_error(L);
    lua_call(L, 0, 1);
    r->ok = read_root(r->ctx, L, r->cfg);
    return 0;
}

/* Run the file and read what it returns, within the load's budgets. */
static bool run_file(struct load *ctx, struct hf_lua *lua, struct hf_config *cfg) {
    char chunkname[300];
    snprintf(chunkname, sizeof chunkname, "@%s", ctx->name);
    struct reading r = {ctx, cfg, chunkname, false};
    hf_lua_start(lua, CONFIG_INSTRUCTION_BUDGET, hf_lua_now_ns(),
                 (uint64_t)CONFIG_TIME_BUDGET_MS * 1000000u);
    int rc = hf_lua_protected(lua, read_protected, &r);
    if (rc == HF_LUA_PANICKED)
        snprintf(ctx->err, ctx->errlen, "%s: Lua panic while loading (see the log)", ctx->name);
    else if (rc != LUA_OK)
        load_failed(ctx, lua, rc);
    hf_lua_end(lua);
    return rc == LUA_OK && r.ok;
}

static struct hf_config *load(struct load *ctx, const char *path) {
    struct hf_config *cfg = calloc(1, sizeof *cfg);
    if (!cfg) {
        snprintf(ctx->err, ctx->errlen, "%s: out of memory", ctx->name);
        return NULL;
    }
    cfg->refs = 1;
    struct hf_lua *lua = hf_lua_create(CONFIG_MEMORY_LIMIT, CONFIG_HOOK_EVERY);
    if (!lua) {
        snprintf(ctx->err, ctx->errlen, "%s: cannot create Lua state", ctx->name);
        free(cfg);
        return NULL;
    }
    bool ok = run_file(ctx, lua, cfg);
    if (ok) {
        cfg->path = strdup(path);
        if (!cfg->path) ok = false;
    }
    if (ok && ctx->keep_state) {
        /* Policy hooks live on in this state; it moves into the config,
         * with the hooks' own limits (policy.c sets the per-call ones). */
        hf_lua_keep(lua);
        cfg->lua = lua;
        return cfg;
    }
    hf_lua_free(lua);
    if (!ok) {
        hf_config_unref(cfg);
        return NULL;
    }
    return cfg;
}

struct hf_config *hf_config_load_string(const char *name, const char *text, char *err,
                                        size_t errlen) {
    struct load ctx = {.name = name, .text = text, .err = err, .errlen = errlen};
    return load(&ctx, name);
}

/* The whole file, NUL-terminated (malloc'd); NULL with the reason in err. */
static char *read_text(const char *path, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    char *text = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (cap - len < 4096) {
            cap = cap ? cap * 2 : 8192;
            if (cap > (4u << 20)) {
                snprintf(err, errlen, "%s: larger than 4 MiB", path);
                free(text);
                fclose(f);
                return NULL;
            }
            char *grown = realloc(text, cap);
            if (!grown) {
                free(text);
                fclose(f);
                snprintf(err, errlen, "%s: out of memory", path);
                return NULL;
            }
            text = grown;
        }
        size_t n = fread(text + len, 1, cap - len - 1, f);
        len += n;
        if (n == 0) break;
    }
    bool read_error = ferror(f);
    fclose(f);
    if (read_error) {
        snprintf(err, errlen, "%s: read error", path);
        free(text);
        return NULL;
    }
    text[len] = '\0';
    return text;
}

struct hf_config *hf_config_load(const char *path, char *err, size_t errlen) {
    char *text = read_text(path, err, errlen);
    if (!text) return NULL;
    struct load ctx = {.name = path, .text = text, .err = err, .errlen = errlen};
    struct hf_config *cfg = load(&ctx, path);
    free(text);
    return cfg;
}

struct hf_config *hf_config_ref(struct hf_config *cfg) {
    cfg->refs++;
    return cfg;
}

static void free_strings(const struct field *fields, size_t n, void *base) {
    for (size_t i = 0; i < n; i++) {
        char *slot = (char *)base + fields[i].offset;
        if (fields[i].type == F_STRING || fields[i].type == F_ID_LIST)
            free(*(void **)(void *)slot);
        else if (fields[i].type == F_STRING_LIST)
            free_string_list(*(char ***)(void *)slot,
                             *(size_t *)(void *)(slot + sizeof(char **)));
    }
}

void hf_config_unref(struct hf_config *cfg) {
    if (!cfg || --cfg->refs > 0) return;
    for (size_t i = 0; i < N_FIELDS(sections); i++)
        free_strings(sections[i].fields, sections[i].n, cfg);
    for (size_t i = 0; i < cfg->n_namespaces; i++) free(cfg->namespaces[i].name);
    free(cfg->namespaces);
    hf_lua_free(cfg->lua);
    free(cfg->path);
    free(cfg);
}

const struct hf_namespace *hf_config_namespace(const struct hf_config *cfg, const char *name) {
    for (size_t i = 0; i < cfg->n_namespaces; i++)
        if (strcmp(cfg->namespaces[i].name, name) == 0) return &cfg->namespaces[i];
    return NULL;
}

/* ---- comparing configs, for reload ---- */

/* The count of an id or string list follows its pointer in the struct. */
static size_t list_len(const char *slot) {
    return *(const size_t *)(const void *)(slot + sizeof(void *));
}

static bool str_differs(const char *a, const char *b) {
    if (!a || !b) return a != b;
    return strcmp(a, b) != 0;
}

static bool field_differs(const struct field *f, const void *old_base, const void *new_base) {
    const char *o = (const char *)old_base + f->offset;
    const char *n = (const char *)new_base + f->offset;
    switch (f->type) {
    case F_UINT:
    case F_MODE: return *(const uint32_t *)(const void *)o != *(const uint32_t *)(const void *)n;
    case F_BOOL: return *(const bool *)o != *(const bool *)n;
    case F_ENUM: return *(const int *)(const void *)o != *(const int *)(const void *)n;
    case F_STRING:
        return str_differs(*(char *const *)(const void *)o, *(char *const *)(const void *)n);
    case F_ID_LIST: {
        size_t len = list_len(o);
        if (len != list_len(n)) return true;
        return len && memcmp(*(uint32_t *const *)(const void *)o,
                             *(uint32_t *const *)(const void *)n, len * sizeof(uint32_t)) != 0;
    }
    case F_STRING_LIST: {
        size_t len = list_len(o);
        if (len != list_len(n)) return true;
        char *const *a = *(char **const *)(const void *)o;
        char *const *b = *(char **const *)(const void *)n;
        for (size_t i = 0; i < len; i++)
            if (strcmp(a[i], b[i]) != 0) return true;
        return false;
    }
    case F_FUNCTION: return true; /* refs into two Lua states never compare */
    }
    return true;
}

/* Namespaces are not walked: all their fields reload (test_config checks
 * that the settings table says so). */
static size_t changes(const struct hf_config *old_cfg, const struct hf_config *new_cfg,
                      bool restart_only, const char **names, size_t max_names) {
    size_t count = 0;
    for (size_t s = 0; s < N_FIELDS(sections); s++) {
        for (size_t i = 0; i < sections[s].n; i++) {
            const struct field *f = &sections[s].fields[i];
            if (restart_only && !f->restart) continue;
            if (!field_differs(f, old_cfg, new_cfg)) continue;
            if (count < max_names) names[count] = f->name;
            count++;
        }
    }
    return count;
}

size_t hf_config_restart_only_changes(const struct hf_config *old_cfg,
                                      const struct hf_config *new_cfg, const char **names,
                                      size_t max_names) {
    return changes(old_cfg, new_cfg, true, names, max_names);
}

size_t hf_config_changes(const struct hf_config *old_cfg, const struct hf_config *new_cfg,
                         const char **names, size_t max_names) {
    return changes(old_cfg, new_cfg, false, names, max_names);
}

#define N_SECTION_FIELDS                                                                    \
    (N_FIELDS(socket_fields) + N_FIELDS(redis_fields) + N_FIELDS(postgres_fields) +         \
     N_FIELDS(limits_fields) + N_FIELDS(log_fields) + N_FIELDS(loop_fields) +               \
     N_FIELDS(metrics_fields))

void hf_config_warn_restart_only(const struct hf_config *old_cfg,
                                 const struct hf_config *new_cfg) {
    const char *names[N_SECTION_FIELDS];
    size_t n = hf_config_restart_only_changes(old_cfg, new_cfg, names, N_SECTION_FIELDS);
    /* Names only: values may be passwords or DSNs with passwords. */
    for (size_t i = 0; i < n; i++)
        log_warn("config reload: %s changed; it takes effect on restart", names[i]);
}

/* ---- settings kept by other modules ---- */

int hf_config_apply(const struct hf_config *cfg, char *err, size_t errlen) {
    int rc = 0;
    for (size_t s = 0; s < N_FIELDS(sections); s++) {
        for (size_t i = 0; i < sections[s].n; i++) {
            const struct field *f = &sections[s].fields[i];
            const char *why = f->apply ? f->apply(cfg) : NULL;
            if (!why || rc != 0) continue;
            snprintf(err, errlen, "%s: %s", f->name, why);
            rc = -1;
        }
    }
    return rc;
}

/* ---- the settings table for docs/operations.md ---- */

static const char *type_name(enum field_type t) {
    switch (t) {
    case F_UINT: return "integer";
    case F_BOOL: return "boolean";
    case F_STRING: return "string";
    case F_MODE: return "octal string";
    case F_ENUM: return "string";
    case F_ID_LIST: return "list of integers";
    case F_FUNCTION: return "function";
    case F_STRING_LIST: return "list of strings";
    }
    return "?";
}

/* A cell's text; '|' would end the cell. */
static void put_cell(FILE *out, const char *text) {
    for (const char *p = text; *p; p++) {
        if (*p == '|') fputc('\\', out);
        fputc(*p, out);
    }
}

static void put_row(FILE *out, const struct field *f) {
    fputs("| `", out);
    put_cell(out, f->name);
    fprintf(out, "` | %s | ", type_name(f->type));
    switch (f->type) {
    case F_UINT: fprintf(out, "`%u`", f->def); break;
    case F_MODE: fprintf(out, "`\"%04o\"`", f->def); break;
    case F_BOOL: fputs(f->def ? "`true`" : "`false`", out); break;
    case F_ENUM: fprintf(out, "`\"%s\"`", f->names[f->def]); break;
    case F_STRING:
        if (f->def_str) {
            fputs("`\"", out);
            put_cell(out, f->def_str);
            fputs("\"`", out);
        } else {
            fputs("unset", out);
        }
        break;
    case F_ID_LIST:
    case F_STRING_LIST: fputs("`{}`", out); break;
    case F_FUNCTION: fputs("unset", out); break;
    }
    fputs(" | ", out);
    switch (f->type) {
    case F_UINT: fprintf(out, "%u to %u", f->min, f->max); break;
    case F_MODE: fputs("`\"0000\"` to `\"7777\"`", out); break;
    case F_ENUM:
        for (int i = 0; f->names[i]; i++) fprintf(out, "%s`\"%s\"`", i ? ", " : "", f->names[i]);
        break;
    case F_ID_LIST: fprintf(out, "ids 0 to %u", UINT32_MAX - 1); break;
    case F_STRING:
    case F_STRING_LIST: fputs("not empty", out); break;
    case F_BOOL: fputs("`true`, `false`", out); break;
    case F_FUNCTION: fputs("`function(hold) ... end`", out); break;
    }
    fprintf(out, " | %s | ", f->restart ? "restart" : "yes");
    put_cell(out, f->help);
    fputs(" |\n", out);
}

char *hf_config_settings_markdown(void) {
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (!out) return NULL;
    fputs("| setting | type | default | bounds or choices | reload | description |\n"
          "| --- | --- | --- | --- | --- | --- |\n",
          out);
    for (size_t s = 0; s < N_FIELDS(sections); s++)
        for (size_t i = 0; i < sections[s].n; i++) put_row(out, &sections[s].fields[i]);
    for (size_t i = 0; i < N_FIELDS(namespace_fields); i++) put_row(out, &namespace_fields[i]);
    bool failed = ferror(out) != 0;
    if (fclose(out) != 0 || failed) {
        free(text);
        return NULL;
    }
    return text;
}
