/* redis_front.c - the Redis front end: loads the Functions library on every
 * connection and picks the call path; formats every command once (resp.c)
 * and hands the bytes to the pool or the cluster; re-sends a call as EVAL
 * when the server lost the code. */
#include "redis_front.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "metrics.h"
#include "cluster_slots.h"
#include "redis_cluster.h"
#include "resp.h"

extern const char holdfast_library_lua[];
extern const unsigned long holdfast_library_lua_len;

static const struct {
    const char *local;    /* name of the local Lua function in the library */
    const char *function; /* name registered with Redis */
    bool batchable;       /* hf1_batch may run it */
} fn_names[HF_FN__COUNT] = {
#define HF_FN_NAME(name, local, batchable) \
    [HF_FN_##name] = {#local, "hf" HF_LIBRARY_VERSION "_" #local, batchable},
    HF_SCRIPT_FNS(HF_FN_NAME)
#undef HF_FN_NAME
};

static bool batchable(enum hf_script_fn fn) { return fn_names[fn].batchable; }

/* Limits of one batch: calls, and bytes of their keys and args. A full batch
 * is written at once, so Redis runs it while the daemon reads the next
 * requests: 16 measured best at 64 requests in flight (8 and 32 slower;
 * docs/performance.md). At most MAX_OPEN_BATCHES are open at once (one per
 * cluster slot). */
#define BATCH_MAX_CALLS 16
#define BATCH_MAX_BYTES (64 * 1024)
#define MAX_OPEN_BATCHES 8

struct batch;

struct hf_redis_front {
    uv_loop_t *loop;
    struct hf_redis_pool *pool;       /* single server, or */
    struct hf_redis_cluster *cluster; /* Redis Cluster */
    struct hf_redis_tls *tls;         /* with redis.tls: for subscriptions too */
    enum hf_script_pref script_pref;
    enum hf_release_pref release_pref;
    uint32_t setup_timeout_ms;
    enum hf_call_path path;
    enum hf_delex_state delex;
    bool reloading;           /* a FUNCTION LOAD after "not found" is under way */
    char *eval_body[HF_FN__COUNT];
    size_t eval_len[HF_FN__COUNT];
    char sha[HF_FN__COUNT][41];
    hf_front_ready_fn *on_ready;
    void *ud;
    /* Coalescing: calls of one loop iteration wait in open batches until the
     * idle handle (run before the loop next waits) sends them. */
    uv_idle_t *batch_idle;
    struct batch *open[MAX_OPEN_BATCHES];
    size_t n_open;
    struct batch *unsent; /* sends that failed: answered from the idle handle */
};

static void send_batches(struct hf_redis_front *s);
static void answer_unsent(struct hf_redis_front *s);

const char *hf_front_library_text(size_t *len) {
    if (len) *len = holdfast_library_lua_len;
    return holdfast_library_lua;
}

const char *hf_front_local_name(enum hf_script_fn fn) { return fn_names[fn].local; }
const char *hf_front_function_name(enum hf_script_fn fn) { return fn_names[fn].function; }

/* EVAL form of one function: the library's body without its #!lua line and
 * its registrations, plus a call of the local function. */
static int build_eval_bodies(struct hf_redis_front *s) {
    const char *lib = holdfast_library_lua;
    const char *start = strchr(lib, '\n');
    const char *end = strstr(lib, "\nredis.register_function");
    if (!start || !end || end < start) return -1;
    size_t body = (size_t)(end - start) + 1;
    for (int i = 0; i < HF_FN__COUNT; i++) {
        size_t cap = body + 64 + strlen(fn_names[i].local);
        s->eval_body[i] = malloc(cap);
        if (!s->eval_body[i]) return -1;
        memcpy(s->eval_body[i], start, body);
        int n = snprintf(s->eval_body[i] + body, cap - body, "return %s(KEYS, ARGV)\n",
                         fn_names[i].local);
        s->eval_len[i] = body + (size_t)n;
    }
    return 0;
}

static const char *path_name(enum hf_call_path p) {
    switch (p) {
    case HF_PATH_FCALL: return "fcall";
    case HF_PATH_EVALSHA: return "evalsha";
    case HF_PATH_EVAL: return "eval";
    default: return "none";
    }
}

const char *hf_front_path_name(const struct hf_redis_front *s) {
    return path_name(s ? s->path : HF_PATH_NONE);
}

enum hf_delex_state hf_front_release_command(const struct hf_redis_front *s) {
    if (!s || s->release_pref == HF_RELEASE_SCRIPT) return HF_DELEX_ABSENT;
    return s->delex == HF_DELEX_PRESENT || s->delex == HF_DELEX_DELIFEQ ? s->delex
                                                                         : HF_DELEX_ABSENT;
}

bool hf_front_release_uses_delex(const struct hf_redis_front *s) {
    return hf_front_release_command(s) != HF_DELEX_ABSENT;
}

const char *hf_front_release_path_name(const struct hf_redis_front *s) {
    switch (hf_front_release_command(s)) {
    case HF_DELEX_PRESENT: return "delex";
    case HF_DELEX_DELIFEQ: return "delifeq";
    default: return "script";
    }
}

bool hf_front_ready(const struct hf_redis_front *s) {
    if (!s) return false;
    if (s->cluster) return hf_redis_cluster_ready(s->cluster);
    return s->pool && hf_redis_pool_ready_count(s->pool) > 0;
}

struct hf_redis_pool *hf_front_pool(struct hf_redis_front *s) { return s ? s->pool : NULL; }

/* ---- per-connection set-up: load, decide the path, detect DELEX ---- */

struct setup {
    struct hf_redis_front *s;
    struct hf_redis_conn *conn;
    bool first;
    int outstanding;
    bool failed;
    enum hf_call_path path;
    char sha[HF_FN__COUNT][41];
};


static void setup_finish(struct setup *st, bool ok) {
    struct hf_redis_front *s = st->s;
    if (ok) {
        if (st->path != s->path) {
            log_info("redis: scripts use %s (library %s), release uses %s", path_name(st->path),
                     HF_LIBRARY_NAME, s->release_pref == HF_RELEASE_SCRIPT ? "script"
                     : s->delex == HF_DELEX_PRESENT ? "delex"
                     : s->delex == HF_DELEX_DELIFEQ ? "delifeq" : "script");
        }
        s->path = st->path;
        if (st->path == HF_PATH_EVALSHA) memcpy(s->sha, st->sha, sizeof s->sha);
        hf_metrics_set_paths(path_name(s->path), hf_front_release_path_name(s));
        hf_metrics_inc(HF_C_LIBRARY_LOADS);
    }
    hf_redis_conn_set_ready(st->conn, ok);
    free(st);
}

static void on_delifeq_probe(void *privdata, enum hf_redis_status status, redisReply *r);

/* A probe on a key of our own that never exists: an integer means the
 * command is there, "unknown command" that it is not; anything else (an ACL
 * refusal) that it is not ours to use. */
static enum hf_delex_state probe_verdict(const redisReply *r, enum hf_delex_state present) {
    if (r->type == REDIS_REPLY_INTEGER) return present;
    if (r->type == REDIS_REPLY_ERROR && strstr(r->str, "unknown command")) return HF_DELEX_ABSENT;
    return HF_DELEX_DENIED;
}

static void on_delex_probe(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct setup *st = privdata;
    struct hf_redis_front *s = st->s;
    if (status != HF_REDIS_OK) {
        setup_finish(st, false);
        return;
    }
    s->delex = probe_verdict(r, HF_DELEX_PRESENT);
    if (s->delex == HF_DELEX_ABSENT) {
        /* Not Redis 8.4+; perhaps Valkey 9 with DELIFEQ. */
        const char *argv[] = {"DELIFEQ", "hf:{holdfast:probe}:delex", "probe"};
        if (hf_redis_conn_command(st->conn, 3, argv, NULL, s->setup_timeout_ms,
                                  on_delifeq_probe, st) != 0)
            setup_finish(st, false);
        return;
    }
    if (s->delex == HF_DELEX_DENIED)
        log_warn("redis: DELEX not usable (%s); release uses the script",
                 r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
    setup_finish(st, true);
}

static void on_delifeq_probe(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct setup *st = privdata;
    if (status != HF_REDIS_OK) {
        setup_finish(st, false);
        return;
    }
    st->s->delex = probe_verdict(r, HF_DELEX_DELIFEQ);
    setup_finish(st, true);
}

static void on_delex_info(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct setup *st = privdata;
    struct hf_redis_front *s = st->s;
    if (status != HF_REDIS_OK) {
        setup_finish(st, false);
        return;
    }
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 2) {
        /* One entry per name asked: an array when the server has it. */
        s->delex = r->element[0]->type == REDIS_REPLY_ARRAY   ? HF_DELEX_PRESENT
                   : r->element[1]->type == REDIS_REPLY_ARRAY ? HF_DELEX_DELIFEQ
                                                               : HF_DELEX_ABSENT;
        setup_finish(st, true);
        return;
    }
    /* COMMAND INFO itself refused (ACL): that says nothing about the server's
     * version, so ask DELEX directly, on a key of our own that never exists. */
    log_info("redis: COMMAND INFO DELEX refused (%s); probing DELEX directly",
             r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
    const char *argv[] = {"DELEX", "hf:{holdfast:probe}:delex", "IFEQ", "probe"};
    if (hf_redis_conn_command(st->conn, 4, argv, NULL, s->setup_timeout_ms, on_delex_probe,
                              st) != 0)
        setup_finish(st, false);
}

static void setup_delex_info(struct setup *st) {
    struct hf_redis_front *s = st->s;
    if (s->release_pref == HF_RELEASE_SCRIPT) {
        setup_finish(st, true);
        return;
    }
    const char *argv[] = {"COMMAND", "INFO", "DELEX", "DELIFEQ"};
    if (hf_redis_conn_command(st->conn, 4, argv, NULL, s->setup_timeout_ms, on_delex_info,
                              st) != 0)
        setup_finish(st, false);
}

static void on_script_load(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct setup *st = privdata;
    if (status != HF_REDIS_OK) {
        st->failed = true; /* connection trouble: not a verdict on the server */
    } else if (r->type == REDIS_REPLY_STRING && r->len == 40) {
        /* replies arrive in the order sent: index = count so far */
        int index = HF_FN__COUNT - st->outstanding;
        memcpy(st->sha[index], r->str, 40);
        st->sha[index][40] = '\0';
    } else if (st->path == HF_PATH_EVALSHA) {
        log_warn("redis: SCRIPT LOAD refused (%s); falling back to EVAL",
                 r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
        st->path = HF_PATH_EVAL;
    }
    if (--st->outstanding > 0) return;
    if (st->failed) {
        setup_finish(st, false);
    } else if (st->path == HF_PATH_EVAL && st->s->script_pref == HF_SCRIPT_EVALSHA) {
        log_error("redis: script_path is \"evalsha\" but SCRIPT LOAD is refused");
        setup_finish(st, false);
    } else {
        setup_delex_info(st);
    }
}

static void setup_script_load(struct setup *st) {
    struct hf_redis_front *s = st->s;
    if (s->script_pref == HF_SCRIPT_EVAL) {
        st->path = HF_PATH_EVAL;
        setup_delex_info(st);
        return;
    }
    st->path = HF_PATH_EVALSHA;
    st->outstanding = HF_FN__COUNT;
    for (int i = 0; i < HF_FN__COUNT; i++) {
        const char *argv[] = {"SCRIPT", "LOAD", s->eval_body[i]};
        size_t lens[] = {6, 4, s->eval_len[i]};
        if (hf_redis_conn_command(st->conn, 3, argv, lens, s->setup_timeout_ms, on_script_load,
                                  st) != 0) {
            /* Replies already queued still call back; count this one as failed. */
            st->failed = true;
            if (--st->outstanding == 0) setup_finish(st, false);
            return;
        }
    }
}

static void on_function_load(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct setup *st = privdata;
    if (status != HF_REDIS_OK) {
        setup_finish(st, false);
        return;
    }
    if (r->type != REDIS_REPLY_ERROR) {
        st->path = HF_PATH_FCALL;
        setup_delex_info(st);
        return;
    }
    if (st->s->script_pref == HF_SCRIPT_FCALL) {
        log_error("redis: script_path is \"fcall\" but FUNCTION LOAD failed: %s", r->str);
        setup_finish(st, false);
        return;
    }
    if (st->first || st->s->path == HF_PATH_FCALL)
        log_warn("redis: FUNCTION LOAD refused (%s); falling back to EVALSHA", r->str);
    setup_script_load(st);
}

/* 0, or negative when nothing was sent (cb is then never called). */
static int send_function_load(struct hf_redis_front *s, struct hf_redis_conn *conn,
                              hf_redis_cb *cb, void *privdata) {
    const char *argv[] = {"FUNCTION", "LOAD", "REPLACE", holdfast_library_lua};
    size_t lens[] = {8, 4, 7, holdfast_library_lua_len};
    return hf_redis_conn_command(conn, 4, argv, lens, s->setup_timeout_ms, cb, privdata);
}

static void on_connection_setup(void *ud, struct hf_redis_conn *conn, bool first_ever) {
    struct hf_redis_front *s = ud;
    struct setup *st = calloc(1, sizeof *st);
    if (!st) {
        hf_redis_conn_set_ready(conn, false);
        return;
    }
    st->s = s;
    st->conn = conn;
    st->first = first_ever;
    if (s->script_pref == HF_SCRIPT_AUTO || s->script_pref == HF_SCRIPT_FCALL) {
        if (send_function_load(s, conn, on_function_load, st) != 0) setup_finish(st, false);
    } else {
        setup_script_load(st);
    }
}

static void on_pool_state(void *ud, unsigned ready) {
    struct hf_redis_front *s = ud;
    if (s->on_ready) s->on_ready(s->ud, ready > 0);
}

/* A connection is reset when its oldest reply is this late: the command
 * timeout (every call's own bound) plus a grace, so that one caller's short
 * deadline never costs anyone else their connection. */
#define STALL_GRACE_MS 1000

static uint32_t stall_ms(const struct hf_config *cfg) {
    uint32_t longest = cfg->redis_command_timeout_ms > cfg->redis_connect_timeout_ms
                           ? cfg->redis_command_timeout_ms
                           : cfg->redis_connect_timeout_ms; /* set-up calls use this */
    return longest + STALL_GRACE_MS;
}

/* The seeds are redis.address and redis.seeds; every primary found in the
 * slot map gets its own pool, set up like the single pool. */
static struct hf_redis_cluster *create_cluster(uv_loop_t *loop, const struct hf_config *cfg,
                                               struct hf_redis_front *s,
                                               struct hf_redis_tls *tls) {
    size_t n = 1 + cfg->n_redis_seeds;
    const char **seeds = calloc(n, sizeof *seeds);
    if (!seeds) return NULL;
    seeds[0] = cfg->redis_address;
    for (size_t i = 0; i < cfg->n_redis_seeds; i++) seeds[i + 1] = cfg->redis_seeds[i];
    struct hf_redis_cluster_options opts = {
        .seeds = seeds,
        .n_seeds = n,
        .username = cfg->redis_username,
        .password = cfg->redis_password,
        .pool_size = cfg->redis_pool_size,
        .connect_timeout_ms = cfg->redis_connect_timeout_ms,
        .command_timeout_ms = s->setup_timeout_ms,
        .stall_ms = stall_ms(cfg),
        .tls = tls,
    };
    struct hf_redis_cluster *c =
        hf_redis_cluster_create(loop, &opts, on_connection_setup, on_pool_state, s);
    free(seeds);
    if (c) log_info("redis: cluster mode, slot map from %s%s", cfg->redis_address,
                    cfg->n_redis_seeds ? " (or the other seeds)" : "");
    return c;
}

struct hf_redis_front *hf_front_create(uv_loop_t *loop, const struct hf_config *cfg,
                                     hf_front_ready_fn *on_ready, void *ud) {
    struct hf_redis_front *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->loop = loop;
    s->script_pref = cfg->script_path;
    s->release_pref = cfg->release_path;
    s->setup_timeout_ms = cfg->redis_connect_timeout_ms > cfg->redis_command_timeout_ms
                              ? cfg->redis_connect_timeout_ms
                              : cfg->redis_command_timeout_ms;
    s->on_ready = on_ready;
    s->ud = ud;
    s->batch_idle = malloc(sizeof *s->batch_idle);
    if (!s->batch_idle) {
        free(s);
        return NULL;
    }
    uv_idle_init(loop, s->batch_idle);
    s->batch_idle->data = s;
    if (build_eval_bodies(s) != 0) {
        hf_front_close(s);
        return NULL;
    }
    /* One TLS context for every connection; the pools (or the cluster) keep
     * it as long as they need it. */
    struct hf_redis_tls *tls = NULL;
    if (cfg->redis_tls) {
        char err[512];
        struct hf_redis_tls_options tls_opts = {
            .ca_file = cfg->redis_tls_ca_file,
            .ca_dir = cfg->redis_tls_ca_dir,
            .cert_file = cfg->redis_tls_cert_file,
            .key_file = cfg->redis_tls_key_file,
            .server_name = cfg->redis_tls_server_name,
            .verify = cfg->redis_tls_verify,
        };
        tls = hf_redis_tls_create(&tls_opts, err, sizeof err);
        if (!tls) {
            log_error("%s", err);
            hf_front_close(s);
            return NULL;
        }
        if (!cfg->redis_tls_verify)
            log_warn("redis: TLS without verification (redis.tls_verify = false): the "
                     "server is not authenticated");
    }
    s->tls = tls;
    if (cfg->redis_cluster) {
        s->cluster = create_cluster(loop, cfg, s, tls);
        if (!s->cluster) {
            hf_front_close(s);
            return NULL;
        }
        return s;
    }
    struct hf_redis_pool_options opts = {
        .address = cfg->redis_address,
        .username = cfg->redis_username,
        .password = cfg->redis_password,
        .db = cfg->redis_db,
        .pool_size = cfg->redis_pool_size,
        .connect_timeout_ms = cfg->redis_connect_timeout_ms,
        .stall_ms = stall_ms(cfg),
        .tls = tls,
    };
    s->pool = hf_redis_pool_create(loop, &opts, on_connection_setup, on_pool_state, s);
    if (!s->pool) {
        hf_front_close(s);
        return NULL;
    }
    return s;
}

static void free_idle(uv_handle_t *h) { free(h); }

void hf_front_close(struct hf_redis_front *s) {
    if (!s) return;
    /* Open batches go to the pools, whose closing answers them like every
     * call in flight; unsent ones are answered here. */
    send_batches(s);
    answer_unsent(s);
    hf_redis_tls_unref(s->tls);
    s->tls = NULL;
    uv_close((uv_handle_t *)s->batch_idle, free_idle);
    hf_redis_pool_close(s->pool);
    hf_redis_cluster_close(s->cluster);
    for (int i = 0; i < HF_FN__COUNT; i++) free(s->eval_body[i]);
    free(s);
}

/* ---- calls ---- */

struct scall {
    struct hf_redis_front *s;
    enum hf_script_fn fn;
    hf_redis_cb *cb;
    void *privdata;
    uint64_t deadline_ms;
    struct hf_redis_conn **conn_io; /* the caller's, told where the reply came from */
    struct hf_redis_conn *conn;     /* where the last send went */
    bool resent;
    struct hf_resp_cmd *cmd; /* <verb> <name> <nkeys> keys... args..., formatted once */
    size_t key_at;           /* the first key, from cmd->tail (a head rewrite keeps it) */
    size_t key_len;
    /* Where a batch cuts this call's keys and args from cmd->buf. */
    size_t nkeys, nargs;
    size_t keys_from, args_from;
};

static void on_reload_done(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct hf_redis_front *s = privdata;
    s->reloading = false;
    if (status == HF_REDIS_OK && r->type != REDIS_REPLY_ERROR) {
        hf_metrics_inc(HF_C_LIBRARY_LOADS);
        log_info("redis: library %s reloaded after it went missing", HF_LIBRARY_NAME);
    } else {
        log_warn("redis: reloading library %s failed: %s", HF_LIBRARY_NAME,
                 hf_redis_failure_text(status, r));
    }
}

static bool code_missing(const redisReply *r) {
    return r->type == REDIS_REPLY_ERROR &&
           (strncmp(r->str, "NOSCRIPT", 8) == 0 || strstr(r->str, "Function not found"));
}

static void on_call_reply(void *privdata, enum hf_redis_status status, redisReply *r);

/* To `first`, or a connection that serves the call's first key. */
static int send_call(struct scall *c, struct hf_redis_conn *first, uint32_t timeout_ms) {
    struct hf_redis_front *s = c->s;
    if (s->cluster)
        return hf_redis_cluster_command(s->cluster, first, &c->conn,
                                        c->cmd->buf + c->cmd->tail + c->key_at, c->key_len,
                                        c->cmd, timeout_ms, on_call_reply, c);
    struct hf_redis_conn *conn = first ? first : hf_redis_pool_pick(s->pool);
    if (!conn) return -ENOTCONN;
    int rc = hf_redis_conn_send_formatted(conn, c->cmd->buf, c->cmd->len, timeout_ms,
                                          on_call_reply, c);
    if (rc == 0) c->conn = conn;
    return rc;
}

static void call_free(struct scall *c) {
    hf_resp_cmd_unref(c->cmd);
    free(c);
}

static void call_done(struct scall *c, enum hf_redis_status status, redisReply *r) {
    if (c->conn_io) *c->conn_io = c->conn;
    c->cb(c->privdata, status, r);
    call_free(c);
}

static void on_call_reply(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct scall *c = privdata;
    struct hf_redis_front *s = c->s;
    if (status == HF_REDIS_OK && code_missing(r) && !c->resent) {
        /* FUNCTION FLUSH, SCRIPT FLUSH, or a new master without our code:
         * answer this call through EVAL now and reload for the next ones. */
        hf_metrics_inc(HF_C_REDIS_NOSCRIPT_RECOVERIES);
        if (s->path == HF_PATH_FCALL && !s->reloading) {
            /* On the connection that said so: in a cluster, only that
             * node may have lost the library. */
            s->reloading = send_function_load(s, c->conn, on_reload_done, s) == 0;
        }
        uint64_t now = uv_now(s->loop);
        /* Only the head changes: the keys and args go as formatted. */
        struct hf_resp_cmd *eval =
            now < c->deadline_ms ? hf_resp_cmd_replace_head(c->cmd, "EVAL", 4, s->eval_body[c->fn],
                                                            s->eval_len[c->fn])
                                 : NULL;
        if (eval) {
            c->resent = true;
            hf_resp_cmd_unref(c->cmd);
            c->cmd = eval;
            /* Same connection: a WAIT that follows must see this write on
             * its own connection. */
            if (send_call(c, c->conn, (uint32_t)(c->deadline_ms - now)) == 0) return;
        }
        call_done(c, HF_REDIS_DISCONNECTED, NULL);
        return;
    }
    if (status == HF_REDIS_OK && r->type == REDIS_REPLY_ERROR) {
        hf_metrics_inc(HF_C_REDIS_ERRORS);
        char code[32];
        hf_redis_error_code(r, code, sizeof code);
        log_warn("redis: %s failed with %s (the error's text is not logged: it may echo the "
                 "call's arguments)", fn_names[c->fn].function, code);
    }
    call_done(c, status, r);
}

/* The verb and the function's name for the current path. */
static void call_head(const struct hf_redis_front *s, enum hf_script_fn fn, const char **verb,
                      size_t *verb_len, const char **name, size_t *name_len) {
    switch (s->path) {
    case HF_PATH_FCALL:
        *verb = "FCALL";
        *name = fn_names[fn].function;
        *name_len = strlen(*name);
        break;
    case HF_PATH_EVALSHA:
        *verb = "EVALSHA";
        *name = s->sha[fn];
        *name_len = strlen(*name);
        break;
    default:
        *verb = "EVAL";
        *name = s->eval_body[fn];
        *name_len = s->eval_len[fn];
        break;
    }
    *verb_len = strlen(*verb);
}

/* ---- coalescing: many calls in one hf1_batch ---- */

struct batch {
    struct hf_redis_front *s;
    unsigned slot;               /* cluster: every key's slot; else 0 */
    size_t n;                    /* calls */
    size_t nkeys, nargs;         /* all the calls' keys; their args */
    size_t bytes;                /* those keys and args, formatted */
    uint32_t timeout_ms;         /* the longest of the calls' */
    struct hf_redis_conn *conn;  /* where the batch went */
    struct batch *next;          /* in s->unsent */
    struct scall *calls[BATCH_MAX_CALLS];
};

static void on_batch_idle(uv_idle_t *h);

/* An active idle handle also keeps the loop from waiting: the batch goes
 * out before the next poll. */
static void start_batch_idle(struct hf_redis_front *s) {
    if (!uv_is_active((uv_handle_t *)s->batch_idle)) uv_idle_start(s->batch_idle, on_batch_idle);
}

/* A batch that could not be sent: its calls are answered NOT_SENT from the
 * idle handle, never from inside the call that tried to send it. */
static void answer_later(struct hf_redis_front *s, struct batch *b) {
    b->next = s->unsent;
    s->unsent = b;
    start_batch_idle(s);
}

static void answer_unsent(struct hf_redis_front *s) {
    while (s->unsent) {
        struct batch *b = s->unsent;
        s->unsent = b->next;
        for (size_t i = 0; i < b->n; i++) {
            b->calls[i]->conn = NULL;
            call_done(b->calls[i], HF_REDIS_NOT_SENT, NULL);
        }
        free(b);
    }
}

static void on_batch_reply(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct batch *b = privdata;
    /* One reply per call; an error (Redis refused the batch) is every call's
     * answer, and so is any other shape, as an error. */
    static char malformed_text[] = "ERR malformed batch reply";
    redisReply malformed = {.type = REDIS_REPLY_ERROR, .str = malformed_text,
                            .len = sizeof malformed_text - 1};
    bool split = status == HF_REDIS_OK && r->type == REDIS_REPLY_ARRAY && r->elements == b->n;
    if (status == HF_REDIS_OK && !split && r->type != REDIS_REPLY_ERROR) r = &malformed;
    for (size_t i = 0; i < b->n; i++) {
        struct scall *c = b->calls[i];
        redisReply *own = split ? r->element[i] : r;
        c->conn = b->conn;
        if (split && own->type == REDIS_REPLY_ERROR) {
            hf_metrics_inc(HF_C_REDIS_ERRORS);
            char code[32];
            hf_redis_error_code(own, code, sizeof code);
            log_warn("redis: %s failed with %s inside a batch (the error's text is not logged)",
                     fn_names[c->fn].function, code);
        }
        call_done(c, status, own);
    }
    free(b);
}

/* <verb> hf1_batch <nkeys> <every call's keys> <n> then per call: its local
 * name, its key count, its arg count, its args. Keys and args are the calls'
 * own formatted bytes. */
static struct scall *batch_call(struct batch *b) {
    struct hf_redis_front *s = b->s;
    const char *verb, *name;
    size_t verb_len, name_len;
    call_head(s, HF_FN_BATCH, &verb, &verb_len, &name, &name_len);
    size_t argc = 4 + b->nkeys + 3 * b->n + b->nargs;
    size_t size = hf_resp_header_size(argc) + hf_resp_bulk_size(verb_len) +
                  hf_resp_bulk_size(name_len) + hf_resp_bulk_u64_size(b->nkeys) + b->bytes +
                  hf_resp_bulk_u64_size(b->n);
    for (size_t i = 0; i < b->n; i++) {
        const struct scall *c = b->calls[i];
        size += hf_resp_bulk_size(strlen(fn_names[c->fn].local)) +
                hf_resp_bulk_u64_size(c->nkeys) + hf_resp_bulk_u64_size(c->nargs);
    }
    struct scall *bc = malloc(sizeof *bc);
    if (!bc) return NULL;
    const struct scall *first = b->calls[0];
    *bc = (struct scall){.s = s, .fn = HF_FN_BATCH, .cb = on_batch_reply, .privdata = b,
                         .conn_io = &b->conn, .key_len = first->key_len};
    struct hf_resp_cmd *cmd = bc->cmd = hf_resp_cmd_new(argc, size);
    if (!cmd) {
        free(bc);
        return NULL;
    }
    hf_resp_cmd_bulk(cmd, verb, verb_len);
    hf_resp_cmd_bulk(cmd, name, name_len);
    hf_resp_cmd_bulk_u64(cmd, b->nkeys);
    size_t keys_at = cmd->len;
    for (size_t i = 0; i < b->n; i++) {
        const struct scall *c = b->calls[i];
        hf_resp_cmd_raw(cmd, c->cmd->buf + c->keys_from, c->args_from - c->keys_from, c->nkeys);
    }
    hf_resp_cmd_bulk_u64(cmd, b->n);
    for (size_t i = 0; i < b->n; i++) {
        const struct scall *c = b->calls[i];
        const char *local = fn_names[c->fn].local;
        hf_resp_cmd_bulk(cmd, local, strlen(local));
        hf_resp_cmd_bulk_u64(cmd, c->nkeys);
        hf_resp_cmd_bulk_u64(cmd, c->nargs);
        hf_resp_cmd_raw(cmd, c->cmd->buf + c->args_from, c->cmd->len - c->args_from, c->nargs);
    }
    if (!hf_resp_cmd_complete(cmd)) {
        call_free(bc); /* mis-sized: a bug, but not one to send */
        return NULL;
    }
    /* The first call's first key routes the batch, as it would that call. */
    size_t first_key = first->cmd->tail + first->key_at - first->keys_from;
    bc->key_at = keys_at + first_key - cmd->tail;
    bc->deadline_ms = uv_now(s->loop) + b->timeout_ms;
    return bc;
}

/* now: write it at once (a full batch) instead of before the loop waits. */
static void send_batch(struct hf_redis_front *s, struct batch *b, bool now) {
    hf_metrics_inc(HF_C_REDIS_BATCHES);
    struct scall *c;
    bool alone = b->n == 1;
    if (alone) {
        c = b->calls[0]; /* alone: sent as its own call */
    } else {
        hf_metrics_add(HF_C_REDIS_BATCHED_CALLS, b->n);
        c = batch_call(b);
    }
    if (c && send_call(c, NULL, b->timeout_ms) == 0) {
        if (alone) free(b);
        if (now) hf_redis_conn_write_now(c->conn);
        return;
    }
    if (c && !alone) call_free(c);
    answer_later(s, b);
}

/* Send every open batch, oldest first. */
static void send_open_batches(struct hf_redis_front *s, bool now) {
    for (size_t i = 0; i < s->n_open; i++) send_batch(s, s->open[i], now);
    s->n_open = 0;
}

static void send_batches(struct hf_redis_front *s) { send_open_batches(s, false); }

static void on_batch_idle(uv_idle_t *h) {
    struct hf_redis_front *s = h->data;
    uv_idle_stop(h);
    send_batches(s);
    answer_unsent(s);
}

/* Adds the call to its slot's open batch. 0, or negative when it cannot be
 * sent (nothing is queued, cb is never called). */
static int join_batch(struct scall *c, uint32_t timeout_ms) {
    struct hf_redis_front *s = c->s;
    const char *key = c->cmd->buf + c->cmd->tail + c->key_at;
    unsigned slot = 0;
    if (s->cluster) {
        if (!hf_redis_cluster_pick(s->cluster, key, c->key_len)) return -ENOTCONN;
        slot = hf_cluster_keyslot(key, c->key_len);
    } else if (hf_redis_pool_ready_count(s->pool) == 0) {
        return -ENOTCONN;
    }
    struct batch *b = NULL;
    for (size_t i = 0; i < s->n_open && !b; i++)
        if (s->open[i]->slot == slot) b = s->open[i];
    if (!b) {
        if (s->n_open == MAX_OPEN_BATCHES) send_batches(s);
        b = calloc(1, sizeof *b);
        if (!b) return -ENOMEM;
        b->s = s;
        b->slot = slot;
        s->open[s->n_open++] = b;
    }
    b->calls[b->n++] = c;
    b->nkeys += c->nkeys;
    b->nargs += c->nargs;
    b->bytes += c->cmd->len - c->keys_from;
    if (timeout_ms > b->timeout_ms) b->timeout_ms = timeout_ms;
    if (b->n == BATCH_MAX_CALLS || b->bytes >= BATCH_MAX_BYTES) {
        /* Full: it goes now, in its place among the open ones, and is
         * written at once so that Redis runs it while the daemon reads on. */
        send_open_batches(s, true);
        return 0;
    }
    start_batch_idle(s);
    return 0;
}

int hf_front_call(struct hf_redis_front *s, struct hf_redis_conn **conn, enum hf_script_fn fn,
                  struct hf_strs key_run, const struct hf_argv *argv, uint32_t timeout_ms,
                  hf_redis_cb *cb, void *privdata) {
    /* NULL: the daemon is shutting down (requests may outlive the backends). */
    if (!s || s->path == HF_PATH_NONE) return -ENOTCONN;
    if (key_run.n == 0) return -EINVAL;
    if (argv && argv->failed) return -ENOMEM;
    struct hf_strs arg_run = argv ? hf_argv_strs(argv) : (struct hf_strs){0};
    size_t nkeys = key_run.n, nargs = arg_run.n;
    const char *const *keys = key_run.v, *const *args = arg_run.v;
    const size_t *keylens = key_run.lens, *arglens = arg_run.lens;
    const char *verb, *name;
    size_t verb_len, name_len;
    call_head(s, fn, &verb, &verb_len, &name, &name_len);
    /* Sized exactly, then formatted once: the bytes that go to Redis, also
     * for the cluster's re-sends and (head rewritten) the EVAL fallback. */
    size_t size = hf_resp_header_size(3 + nkeys + nargs) + hf_resp_bulk_size(verb_len) +
                  hf_resp_bulk_size(name_len) + hf_resp_bulk_u64_size(nkeys);
    for (size_t i = 0; i < nkeys; i++) size += hf_resp_bulk_size(keylens[i]);
    for (size_t i = 0; i < nargs; i++) size += hf_resp_bulk_size(arglens[i]);
    struct scall *c = malloc(sizeof *c);
    if (!c) return -ENOMEM;
    *c = (struct scall){.s = s, .fn = fn, .cb = cb, .privdata = privdata, .conn_io = conn,
                        .key_len = keylens[0], .nkeys = nkeys, .nargs = nargs};
    c->cmd = hf_resp_cmd_new(3 + nkeys + nargs, size);
    if (!c->cmd) {
        free(c);
        return -ENOMEM;
    }
    hf_resp_cmd_bulk(c->cmd, verb, verb_len);
    hf_resp_cmd_bulk(c->cmd, name, name_len);
    hf_resp_cmd_bulk_u64(c->cmd, nkeys);
    c->keys_from = c->cmd->len;
    const char *key = hf_resp_cmd_bulk(c->cmd, keys[0], keylens[0]);
    for (size_t i = 1; i < nkeys; i++) hf_resp_cmd_bulk(c->cmd, keys[i], keylens[i]);
    c->args_from = c->cmd->len;
    for (size_t i = 0; i < nargs; i++) hf_resp_cmd_bulk(c->cmd, args[i], arglens[i]);
    if (!key || !hf_resp_cmd_complete(c->cmd)) {
        call_free(c); /* mis-sized: a bug, but not one to send */
        return -EINVAL;
    }
    c->key_at = (size_t)(key - (c->cmd->buf + c->cmd->tail));
    c->deadline_ms = uv_now(s->loop) + timeout_ms;
    int rc;
    if (batchable(fn) && !(conn && *conn)) {
        rc = join_batch(c, timeout_ms);
    } else {
        send_batches(s); /* the calls made before this one go first */
        rc = send_call(c, conn ? *conn : NULL, timeout_ms);
    }
    if (rc != 0) call_free(c);
    return rc;
}

int hf_front_command(struct hf_redis_front *s, struct hf_redis_conn *conn, const char *key,
                       size_t keylen, int argc, const char **argv, const size_t *argvlen,
                       uint32_t timeout_ms, hf_redis_cb *cb, void *privdata) {
    if (!s) return -ENOTCONN;
    send_batches(s); /* the calls made before this one go first */
    if (s->cluster) {
        /* Formatted once; the cluster keeps a reference for its re-sends. */
        struct hf_resp_cmd *cmd = hf_resp_cmd_argv(argc, argv, argvlen);
        if (!cmd) return -ENOMEM;
        int rc = hf_redis_cluster_command(s->cluster, conn, NULL, key, keylen, cmd, timeout_ms,
                                          cb, privdata);
        hf_resp_cmd_unref(cmd);
        return rc;
    }
    /* Formatted once there too (resp.c), on the stack. */
    if (conn) return hf_redis_conn_command(conn, argc, argv, argvlen, timeout_ms, cb, privdata);
    return hf_redis_pool_command(s->pool, argc, argv, argvlen, timeout_ms, cb, privdata);
}

struct hf_redis_sub *hf_front_subscribe(struct hf_redis_front *s, const struct hf_config *cfg,
                                        const char *channel, hf_sub_message_fn *on_message,
                                        hf_sub_state_fn *on_state, void *ud) {
    /* In a cluster, classic pub/sub reaches every node: the first seed will do. */
    struct hf_redis_pool_options opts = {
        .address = cfg->redis_address,
        .username = cfg->redis_username,
        .password = cfg->redis_password,
        .db = cfg->redis_cluster ? 0 : cfg->redis_db,
        .connect_timeout_ms = cfg->redis_connect_timeout_ms,
        .tls = s->tls,
    };
    return hf_redis_sub_create(s->loop, &opts, channel, on_message, on_state, ud);
}

struct hf_redis_conn *hf_front_pick(struct hf_redis_front *s, const char *key, size_t keylen) {
    if (!s) return NULL;
    if (s->cluster) return hf_redis_cluster_pick(s->cluster, key, keylen);
    return hf_redis_pool_pick(s->pool);
}
