/* config.h - the daemon's configuration: a Lua 5.4 file run in a sandbox,
 * returning a table, validated in full before it is used. */
#ifndef HF_CONFIG_H
#define HF_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log.h"

enum hf_redis_down_policy { HF_FAIL_CLOSED, HF_BEST_EFFORT };
enum hf_script_pref { HF_SCRIPT_AUTO, HF_SCRIPT_FCALL, HF_SCRIPT_EVALSHA, HF_SCRIPT_EVAL };
enum hf_release_pref { HF_RELEASE_AUTO, HF_RELEASE_SCRIPT, HF_RELEASE_DELEX };
/* What a namespace holds: resource ids (seats) or units of pools. */
enum hf_ns_kind { HF_KIND_SEATS, HF_KIND_POOLS };

struct hf_namespace {
    char *name;
    uint32_t default_ttl_ms;
    uint32_t min_ttl_ms;
    uint32_t max_ttl_ms;
    bool confirmable;
    uint32_t confirm_window_ms;        /* hold TTL while PostgreSQL commits */
    uint32_t confirmed_marker_ttl_ms;  /* 0: release instead of marking */
    enum hf_redis_down_policy on_redis_down;
    uint32_t min_replicas_ack;         /* WAIT n before a grant counts */
    uint32_t replicas_ack_timeout_ms;
    uint32_t max_legs;                 /* journey segments: 0 = none */
    uint32_t session_ttl_ms;           /* session holds' renewed TTL */
    int admit_hook;                    /* Lua registry ref of `admit`, 0: none */
    enum hf_ns_kind kind;              /* seats (ids) or pools (units) */
};

struct hf_lua; /* the sandbox kept alive for policy hooks (lua_sandbox.h) */

/* log.requests: which answered requests get their line. */
enum hf_log_requests {
    HF_LOG_REQUESTS_ALL,    /* every answer (OK ones sampled by log.requests_sample) */
    HF_LOG_REQUESTS_ERRORS, /* answers other than OK */
    HF_LOG_REQUESTS_OFF,    /* none (INTERNAL still logs, at error) */
};

struct hf_config {
    int refs;
    char *path;

    char *socket_path;
    uint32_t socket_mode;
    char *socket_group;        /* NULL: leave the group alone */
    uint32_t *allow_uids;      /* empty: any peer that can open the socket */
    size_t n_allow_uids;
    uint32_t *allow_gids;
    size_t n_allow_gids;

    char *redis_address;       /* "unix:/path" or "host:port" */
    char *redis_username;
    char *redis_password;
    uint32_t redis_db;
    uint32_t redis_pool_size;
    uint32_t redis_connect_timeout_ms;
    uint32_t redis_command_timeout_ms;
    enum hf_script_pref script_path;
    enum hf_release_pref release_path;
    bool redis_cluster;        /* address (and seeds) are Redis Cluster nodes */
    char **redis_seeds;        /* more cluster nodes to ask for the slot map */
    size_t n_redis_seeds;
    bool redis_tls;            /* TLS to every Redis node */
    char *redis_tls_ca_file;   /* NULL, with redis_tls_ca_dir NULL: the system's CAs */
    char *redis_tls_ca_dir;
    char *redis_tls_cert_file; /* client certificate, with redis_tls_key_file */
    char *redis_tls_key_file;
    char *redis_tls_server_name; /* NULL: the host of each node's address */
    bool redis_tls_verify;

    char *pg_dsn;              /* NULL: PostgreSQL not configured */
    uint32_t pg_pool_size;
    uint32_t pg_connect_timeout_ms;
    uint32_t pg_statement_timeout_ms;
    bool pg_prepare_statements;        /* postgres.prepared_statements */
    uint32_t pg_idempotency_retention_s;

    uint32_t max_frame_bytes;
    uint32_t max_inflight_per_conn;
    uint32_t max_connections;
    uint32_t max_ids;
    uint32_t default_timeout_ms;
    uint32_t min_timeout_ms;
    uint32_t max_timeout_ms;
    uint32_t drain_timeout_ms;
    uint32_t max_connections_per_uid; /* 0: no per-uid limit */
    uint32_t max_queued_bytes;       /* answers queued for all clients together */
    uint32_t slow_reader_timeout_ms;
    uint32_t frame_timeout_ms;
    uint32_t idle_timeout_ms;        /* 0: idle connections stay open */

    enum hf_log_level log_level;
    char *log_fingerprint_key;
    bool log_probes;           /* Health/Metrics request lines at info, not debug */
    enum hf_log_requests log_requests; /* which answers get a request line */
    uint32_t log_requests_sample;      /* 1 in N of the lines of OK answers */

    uint32_t busy_poll_us;     /* loop.busy_poll_us; 0: the loop sleeps when idle */

    bool metrics_http;         /* serve /metrics, /healthz, /readyz over HTTP */
    char *metrics_http_address; /* "IPv4:port" or "[IPv6]:port" */

    struct hf_namespace *namespaces;
    size_t n_namespaces;

    struct hf_lua *lua; /* NULL unless a namespace has a hook */
};

/* Load and validate `path`. On error returns NULL and writes a message that
 * names the file, the line and the key into err. */
struct hf_config *hf_config_load(const char *path, char *err, size_t errlen);
/* Same, from text (tests); `name` is used in messages. */
struct hf_config *hf_config_load_string(const char *name, const char *text,
                                        char *err, size_t errlen);

struct hf_config *hf_config_ref(struct hf_config *cfg);
void hf_config_unref(struct hf_config *cfg);

const struct hf_namespace *hf_config_namespace(const struct hf_config *cfg,
                                               const char *name);

/* The restart-only settings (per config.c's field tables) that differ
 * between the two configs: their dotted names ("redis.address", static
 * strings) go into names[0 .. max_names-1]; returns how many differ, which
 * may exceed max_names. */
size_t hf_config_restart_only_changes(const struct hf_config *old_cfg,
                                      const struct hf_config *new_cfg, const char **names,
                                      size_t max_names);
/* The same for every setting outside `namespaces`, reloadable or not. */
size_t hf_config_changes(const struct hf_config *old_cfg, const struct hf_config *new_cfg,
                         const char **names, size_t max_names);
/* Logs one warning per restart-only setting that differs, naming it, never
 * its value. */
void hf_config_warn_restart_only(const struct hf_config *old_cfg,
                                 const struct hf_config *new_cfg);

/* Push the settings that other modules keep (log.level into log.c,
 * log.fingerprint_key into token.c, loop.busy_poll_us into busy_poll.c:
 * the rows with an apply hook in config.c) from cfg: once when the daemon
 * starts with it, and after every reload that installs it. Every hook
 * runs; 0, or -1 with the first that failed in err ("log.fingerprint_key:
 * why"). */
int hf_config_apply(const struct hf_config *cfg, char *err, size_t errlen);

/* A Markdown table of every setting (name, type, default, bounds, whether a
 * reload applies it, description), as in docs/operations.md. malloc'd, the
 * caller frees; NULL when out of memory. */
char *hf_config_settings_markdown(void);

#endif
