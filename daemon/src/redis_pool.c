/* redis_pool.c - hiredis async connections, their TLS, reconnects and
 * deadlines. */
#include "redis_pool.h"

#include <arpa/inet.h>
#include <errno.h>
#include "redis_events.h"
#include <hiredis/async.h>
#include <hiredis/hiredis_ssl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "address.h"
#include "backoff.h"
#include "log.h"
#include "metrics.h"
#include "resp.h"

/* A connect callback that may free its context (the free waits until it
 * returns), connect timeouts and TLS: hiredis 1.1 and later. */
#if !defined(HIREDIS_MAJOR) || HIREDIS_MAJOR < 1 || (HIREDIS_MAJOR == 1 && HIREDIS_MINOR < 1)
#error "holdfastd needs hiredis 1.1 or later (tools/deps-hiredis.sh builds 1.2)"
#endif

#define BACKOFF_MIN_MS 50
#define BACKOFF_MAX_MS 2000

/* A connection's news, at `level`, or at debug for a quiet pool. */
#define pool_log(pool, level, ...) \
    hf_log((pool)->quiet ? HF_LOG_DEBUG : (level), __VA_ARGS__)

enum conn_state { C_IDLE, C_CONNECTING, C_SETUP, C_READY, C_CLOSED };

struct call;

struct hf_redis_conn {
    struct hf_redis_pool *pool;
    unsigned index;
    redisAsyncContext *ac;
    SSL *ssl; /* with TLS: ac's, owned by hiredis; NULL with ac */
    enum conn_state state;
    uv_timer_t timer; /* reconnect backoff (hiredis times the connect) */
    uv_timer_t stall; /* fires when the oldest outstanding call may be stalled */
    struct call *oldest, *newest; /* outstanding calls, in the order sent */
    unsigned failures;
    unsigned pending;
    bool ever_ready;
    hf_redis_push_fn *push; /* a subscriber's (hf_redis_conn_subscribe) */
    void *push_ud;
};

struct hf_redis_pool {
    uv_loop_t *loop;
    char *address;
    char *host; /* of a "host:port" address, brackets of an IPv6 one removed */
    int port;
    char *username;
    char *password;
    uint32_t db;
    uint32_t connect_timeout_ms;
    uint32_t stall_ms;
    uint32_t backoff_max_ms;
    bool no_metrics;
    bool quiet;
    struct hf_redis_tls *tls;
    hf_redis_setup_fn *setup;
    hf_redis_state_fn *on_state;
    void *ud;
    bool closing;
    bool first_setup_done;
    bool login_failure_logged; /* said once per outage: until a connection is ready */
    bool tls_failure_logged;   /* likewise */
    unsigned ready;
    unsigned open_timers;
    unsigned n;
    struct hf_redis_conn conns[];
};

/* One command in flight: lives until hiredis has called back (it always does,
 * also on disconnect) and its timer handle is closed. */
struct call {
    uv_timer_t timer;
    struct hf_redis_conn *conn;
    struct call *next; /* the next one sent on conn */
    hf_redis_cb *cb;
    void *privdata;
    uint64_t sent_ms;
    bool done;
};

const char *hf_redis_status_name(enum hf_redis_status status) {
    switch (status) {
    case HF_REDIS_OK: return "ok";
    case HF_REDIS_TIMEOUT: return "timed out";
    case HF_REDIS_DISCONNECTED: return "connection lost";
    case HF_REDIS_NOT_SENT: return "not connected";
    }
    return "?";
}

const char *hf_redis_failure_text(enum hf_redis_status status, const redisReply *reply) {
    if (status != HF_REDIS_OK) return hf_redis_status_name(status);
    return reply && reply->type == REDIS_REPLY_ERROR ? reply->str : "unexpected reply";
}

void hf_redis_error_code(const redisReply *reply, char *out, size_t outlen) {
    size_t n = 0;
    const char *str = reply && reply->type == REDIS_REPLY_ERROR ? reply->str : "";
    while (n + 1 < outlen && str[n] >= 'A' && str[n] <= 'Z') {
        out[n] = str[n];
        n++;
    }
    if (n == 0 && outlen > 3) memcpy(out, "ERR", n = 3);
    if (outlen) out[n] = '\0';
}

/* ---- TLS ---- */

struct hf_redis_tls {
    unsigned refs;
    SSL_CTX *ctx;
    char *server_name;
    bool verify;
};

/* The reason of OpenSSL's last error, or `fallback`; the thread's error
 * queue is left empty (see tls_funcs). */
static const char *tls_reason(const char *fallback) {
    unsigned long e = ERR_peek_last_error();
    const char *why = e ? ERR_reason_error_string(e) : NULL;
    ERR_clear_error();
    return why ? why : fallback;
}

static bool tls_setup_failed(char *err, size_t errlen, const char *setting, const char *path,
                             const char *fallback) {
    snprintf(err, errlen, "redis TLS: %s '%s': %s", setting, path, tls_reason(fallback));
    return false;
}

static bool tls_load(SSL_CTX *ctx, const struct hf_redis_tls_options *o, char *err,
                     size_t errlen) {
    if (o->ca_file && SSL_CTX_load_verify_locations(ctx, o->ca_file, NULL) != 1)
        return tls_setup_failed(err, errlen, "redis.tls_ca_file", o->ca_file,
                                "cannot load CA certificates");
    if (o->ca_dir) {
        /* OpenSSL reads the directory lazily: say now when it is not one. */
        struct stat st;
        if (stat(o->ca_dir, &st) != 0 || !S_ISDIR(st.st_mode))
            return tls_setup_failed(err, errlen, "redis.tls_ca_dir", o->ca_dir,
                                    "not a directory");
        if (SSL_CTX_load_verify_locations(ctx, NULL, o->ca_dir) != 1)
            return tls_setup_failed(err, errlen, "redis.tls_ca_dir", o->ca_dir,
                                    "cannot use as a CA directory");
    }
    if (!o->ca_file && !o->ca_dir && SSL_CTX_set_default_verify_paths(ctx) != 1)
        return tls_setup_failed(err, errlen, "redis.tls_ca_file", "(the system's CAs)",
                                "cannot load the system's CA certificates");
    if (o->cert_file &&
        SSL_CTX_use_certificate_chain_file(ctx, o->cert_file) != 1)
        return tls_setup_failed(err, errlen, "redis.tls_cert_file", o->cert_file,
                                "cannot load the certificate");
    if (o->key_file && SSL_CTX_use_PrivateKey_file(ctx, o->key_file, SSL_FILETYPE_PEM) != 1)
        return tls_setup_failed(err, errlen, "redis.tls_key_file", o->key_file,
                                "cannot load the private key");
    if (o->cert_file && o->key_file && SSL_CTX_check_private_key(ctx) != 1)
        return tls_setup_failed(err, errlen, "redis.tls_key_file", o->key_file,
                                "does not match redis.tls_cert_file");
    return true;
}

struct hf_redis_tls *hf_redis_tls_create(const struct hf_redis_tls_options *o, char *err,
                                         size_t errlen) {
    if (!o->cert_file != !o->key_file) {
        snprintf(err, errlen, "redis TLS: a client certificate needs both "
                              "redis.tls_cert_file and redis.tls_key_file");
        return NULL;
    }
    redisInitOpenSSL();
    ERR_clear_error();
    struct hf_redis_tls *tls = calloc(1, sizeof *tls);
    if (!tls) {
        snprintf(err, errlen, "redis TLS: out of memory");
        return NULL;
    }
    tls->refs = 1;
    tls->verify = o->verify;
    tls->ctx = SSL_CTX_new(TLS_client_method());
    if (!tls->ctx) {
        snprintf(err, errlen, "redis TLS: %s", tls_reason("cannot create a context"));
        hf_redis_tls_unref(tls);
        return NULL;
    }
    SSL_CTX_set_min_proto_version(tls->ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(tls->ctx, o->verify ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, NULL);
    if (o->server_name && !(tls->server_name = strdup(o->server_name))) {
        snprintf(err, errlen, "redis TLS: out of memory");
        hf_redis_tls_unref(tls);
        return NULL;
    }
    if (!tls_load(tls->ctx, o, err, errlen)) {
        hf_redis_tls_unref(tls);
        return NULL;
    }
    return tls;
}

struct hf_redis_tls *hf_redis_tls_ref(struct hf_redis_tls *tls) {
    tls->refs++;
    return tls;
}

void hf_redis_tls_unref(struct hf_redis_tls *tls) {
    if (!tls || --tls->refs > 0) return;
    SSL_CTX_free(tls->ctx); /* connections still open keep their own reference */
    free(tls->server_name);
    free(tls);
}

/* hiredis's TLS read and write, each on an empty error queue: SSL_get_error
 * misreads a would-block as a failure when an earlier error is still queued
 * (another connection's, or libpq's), and hiredis never clears it. */
static redisContextFuncs tls_funcs;
static ssize_t (*hiredis_tls_read)(struct redisContext *, char *, size_t);
static ssize_t (*hiredis_tls_write)(struct redisContext *);

static ssize_t tls_read(struct redisContext *c, char *buf, size_t cap) {
    ERR_clear_error();
    return hiredis_tls_read(c, buf, cap);
}

static ssize_t tls_write(struct redisContext *c) {
    ERR_clear_error();
    return hiredis_tls_write(c);
}

static bool is_ip_address(const char *name) {
    unsigned char buf[sizeof(struct in6_addr)];
    return inet_pton(AF_INET, name, buf) == 1 || inet_pton(AF_INET6, name, buf) == 1;
}

/* The handshake failed (or could not start): why, once per outage like a
 * refused login. `ssl` is still alive; `fallback` says why when OpenSSL
 * does not. */
static void tls_failed(struct hf_redis_conn *conn, const SSL *ssl, const char *fallback) {
    struct hf_redis_pool *pool = conn->pool;
    char why[256];
    long verify = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;
    if (verify != X509_V_OK)
        snprintf(why, sizeof why, "server certificate refused: %s",
                 X509_verify_cert_error_string(verify));
    else
        snprintf(why, sizeof why, "%s", tls_reason(fallback));
    ERR_clear_error();
    if (!pool->tls_failure_logged || hf_log_enabled(HF_LOG_DEBUG))
        pool_log(pool, HF_LOG_ERROR, "redis: TLS handshake with %s failed on connection %u: %s; reconnecting "
                  "with backoff (logged once until a connection is ready)",
                  pool->address, conn->index, why);
    pool->tls_failure_logged = true;
}

/* Start the handshake on a connected context (it goes on as hiredis reads
 * and writes): SNI, and unless verify is off, the name the certificate must
 * carry: server_name, else the address's host; an IP address is matched
 * against the certificate's IP SANs and sent as no SNI. */
static bool tls_start(struct hf_redis_conn *conn, redisAsyncContext *ac) {
    struct hf_redis_pool *pool = conn->pool;
    const char *name = pool->tls->server_name ? pool->tls->server_name : pool->host;
    bool ip = is_ip_address(name);
    ERR_clear_error();
    SSL *ssl = SSL_new(pool->tls->ctx);
    bool ok = ssl && (ip || SSL_set_tlsext_host_name(ssl, name) == 1);
    if (ok && pool->tls->verify) {
        SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name) == 1
                : SSL_set1_host(ssl, name) == 1;
    }
    /* On a fast network the whole handshake can happen in here. */
    if (!ok || redisInitiateSSL(&ac->c, ssl) != REDIS_OK) {
        tls_failed(conn, ssl, ac->c.err ? ac->c.errstr : "cannot create a TLS session");
        SSL_free(ssl); /* not hiredis's unless redisInitiateSSL succeeded */
        return false;
    }
    if (!hiredis_tls_read) {
        tls_funcs = *ac->c.funcs;
        hiredis_tls_read = tls_funcs.read;
        hiredis_tls_write = tls_funcs.write;
        tls_funcs.read = tls_read;
        tls_funcs.write = tls_write;
    }
    ac->c.funcs = &tls_funcs;
    conn->ssl = ssl;
    return true;
}

/* ---- connections ---- */

static void on_backoff(uv_timer_t *t);

static void set_state(struct hf_redis_conn *conn, enum conn_state state) {
    struct hf_redis_pool *pool = conn->pool;
    bool was_ready = conn->state == C_READY, is_ready = state == C_READY;
    conn->state = state;
    if (was_ready == is_ready) return;
    pool->ready += is_ready ? 1 : (unsigned)-1;
    /* Added, not set: a cluster has one pool per node. */
    if (!pool->no_metrics) hf_metrics_gauge_add(HF_G_REDIS_CONNECTED, is_ready ? 1 : -1);
    if (pool->on_state && !pool->closing) pool->on_state(pool->ud, pool->ready);
}

static void schedule_reconnect(struct hf_redis_conn *conn) {
    if (conn->pool->closing) {
        set_state(conn, C_CLOSED);
        return;
    }
    set_state(conn, C_IDLE);
    uv_timer_start(&conn->timer, on_backoff,
                   hf_backoff_next_ms(&conn->failures, BACKOFF_MIN_MS, conn->pool->backoff_max_ms),
                   0);
}

static void on_call_closed(uv_handle_t *h) { free(h->data); }

/* Replies come in the order sent, so the call is almost always the oldest. */
static void unlink_call(struct hf_redis_conn *conn, struct call *call) {
    struct call **pp = &conn->oldest, *prev = NULL;
    while (*pp && *pp != call) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    if (!*pp) return;
    *pp = call->next;
    if (conn->newest == call) conn->newest = prev;
    call->next = NULL;
}

static void on_stall_check(uv_timer_t *t);

/* Reset the connection when its oldest outstanding reply is older than the
 * stall bound; otherwise look again when it would be. */
static void check_stall(struct hf_redis_conn *conn) {
    struct call *oldest = conn->oldest;
    if (!oldest || conn->pool->closing) return;
    uint64_t now = uv_now(conn->pool->loop);
    uint64_t age = now - oldest->sent_ms;
    if (age >= conn->pool->stall_ms) {
        if (conn->ac && (conn->state == C_READY || conn->state == C_SETUP))
            hf_redis_conn_reset(conn, "no reply for longer than the stall bound");
        return;
    }
    uv_timer_start(&conn->stall, on_stall_check, conn->pool->stall_ms - age, 0);
}

static void on_stall_check(uv_timer_t *t) { check_stall(t->data); }

static void conn_lost(struct hf_redis_conn *conn, const redisAsyncContext *ac);

static void on_reply(redisAsyncContext *ac, void *r, void *privdata) {
    struct call *call = privdata;
    struct hf_redis_conn *conn = call->conn;
    /* No reply and an error: hiredis is dropping the connection and ends
     * its calls before it calls on_disconnect. */
    if (!r && ac->err) conn_lost(conn, ac);
    conn->pending--;
    unlink_call(conn, call);
    if (!call->done) {
        call->done = true;
        uv_timer_stop(&call->timer);
        if (!r) hf_metrics_inc(HF_C_REDIS_ERRORS);
        call->cb(call->privdata, r ? HF_REDIS_OK : HF_REDIS_DISCONNECTED, r);
    }
    uv_close((uv_handle_t *)&call->timer, on_call_closed);
}

static void on_call_timeout(uv_timer_t *t) {
    struct call *call = t->data;
    call->done = true;
    hf_metrics_inc(HF_C_REDIS_TIMEOUTS);
    /* The caller stops waiting; the connection is judged by the stall rule
     * alone (check_stall), and a late reply is dropped. */
    call->cb(call->privdata, HF_REDIS_TIMEOUT, NULL);
}

void hf_redis_conn_write_now(struct hf_redis_conn *conn) {
    if (conn && conn->ac) hf_redis_events_write_now(conn->ac);
}

int hf_redis_conn_send_formatted(struct hf_redis_conn *conn, const char *cmd, size_t len,
                                 uint32_t timeout_ms, hf_redis_cb *cb, void *privdata) {
    if (!conn->ac || (conn->state != C_READY && conn->state != C_SETUP)) return -ENOTCONN;
    struct call *call = calloc(1, sizeof *call);
    if (!call) return -ENOMEM;
    call->conn = conn;
    call->cb = cb;
    call->privdata = privdata;
    call->sent_ms = uv_now(conn->pool->loop);
    if (redisAsyncFormattedCommand(conn->ac, on_reply, call, cmd, len) != REDIS_OK) {
        free(call);
        return -EIO;
    }
    conn->pending++;
    if (conn->newest) conn->newest->next = call;
    else conn->oldest = call;
    conn->newest = call;
    if (!uv_is_active((uv_handle_t *)&conn->stall))
        uv_timer_start(&conn->stall, on_stall_check, conn->pool->stall_ms, 0);
    uv_timer_init(conn->pool->loop, &call->timer);
    call->timer.data = call;
    uv_timer_start(&call->timer, on_call_timeout, timeout_ms ? timeout_ms : 1, 0);
    return 0;
}

int hf_redis_conn_command(struct hf_redis_conn *conn, int argc, const char **argv,
                          const size_t *argvlen, uint32_t timeout_ms, hf_redis_cb *cb,
                          void *privdata) {
    /* hiredis reads the command's name: there must be one. */
    if (argc < 1) return -EINVAL;
    /* Most commands fit on the stack; FUNCTION LOAD and the like do not. */
    char stack[512];
    size_t len = hf_resp_format_argv(stack, sizeof stack, argc, argv, argvlen);
    if (len < sizeof stack)
        return hf_redis_conn_send_formatted(conn, stack, len, timeout_ms, cb, privdata);
    char *heap = malloc(len + 1);
    if (!heap) return -ENOMEM;
    hf_resp_format_argv(heap, len + 1, argc, argv, argvlen);
    int rc = hf_redis_conn_send_formatted(conn, heap, len, timeout_ms, cb, privdata);
    free(heap);
    return rc;
}

/* Every frame of the subscription; NULL as hiredis frees the context. */
static void on_push(redisAsyncContext *ac, void *r, void *privdata) {
    (void)ac;
    struct hf_redis_conn *conn = privdata;
    if (conn->push) conn->push(conn->push_ud, r);
}

int hf_redis_conn_subscribe(struct hf_redis_conn *conn, const char *channel,
                            hf_redis_push_fn *push, void *ud) {
    if (!conn->ac || conn->state != C_SETUP) return -ENOTCONN;
    conn->push = push;
    conn->push_ud = ud;
    if (redisAsyncCommand(conn->ac, on_push, conn, "SUBSCRIBE %s", channel) != REDIS_OK)
        return -EIO;
    return 0;
}

struct hf_redis_conn *hf_redis_pool_pick(struct hf_redis_pool *pool) {
    struct hf_redis_conn *best = NULL;
    if (!pool) return NULL;
    for (unsigned i = 0; i < pool->n; i++) {
        struct hf_redis_conn *c = &pool->conns[i];
        if (c->state == C_READY && !c->push && (!best || c->pending < best->pending)) best = c;
    }
    return best;
}

int hf_redis_pool_command(struct hf_redis_pool *pool, int argc, const char **argv,
                          const size_t *argvlen, uint32_t timeout_ms, hf_redis_cb *cb,
                          void *privdata) {
    struct hf_redis_conn *conn = hf_redis_pool_pick(pool);
    if (!conn) return -ENOTCONN;
    return hf_redis_conn_command(conn, argc, argv, argvlen, timeout_ms, cb, privdata);
}

unsigned hf_redis_pool_ready_count(const struct hf_redis_pool *pool) { return pool->ready; }

const char *hf_redis_pool_address(const struct hf_redis_pool *pool) { return pool->address; }

struct hf_redis_pool *hf_redis_conn_pool(const struct hf_redis_conn *conn) { return conn->pool; }

static void conn_reset(struct hf_redis_conn *conn, const char *why, bool quiet);

void hf_redis_conn_set_ready(struct hf_redis_conn *conn, bool ok) {
    if (conn->state != C_SETUP) return;
    if (!ok) {
        conn_reset(conn, "set-up failed", false);
        return;
    }
    if (conn->ever_ready) hf_metrics_inc(HF_C_REDIS_RECONNECTS);
    conn->ever_ready = true;
    conn->failures = 0;
    conn->pool->login_failure_logged = false;
    conn->pool->tls_failure_logged = false;
    pool_log(conn->pool, HF_LOG_INFO, "redis: connection %u ready (%s)", conn->index,
             conn->pool->address);
    set_state(conn, C_READY);
}

/* quiet: the caller has said why already. */
static void conn_reset(struct hf_redis_conn *conn, const char *why, bool quiet) {
    redisAsyncContext *ac = conn->ac;
    /* IDLE with a context: a free is already under way (deferred by hiredis
     * until its current callback, on_connect included, returns). */
    if (!ac || conn->state == C_IDLE || conn->state == C_CLOSED) return;
    if (!quiet)
        pool_log(conn->pool, HF_LOG_WARN, "redis: resetting connection %u to %s: %s", conn->index, conn->pool->address,
                 why);
    bool connected = conn->state == C_SETUP || conn->state == C_READY;
    set_state(conn, C_IDLE);
    if (connected) {
        /* on_disconnect runs from inside redisAsyncFree (now, or after the
         * current callback) and schedules the reconnect. */
        redisAsyncFree(ac);
    } else {
        conn->ac = NULL;
        conn->ssl = NULL;
        redisAsyncFree(ac);
        schedule_reconnect(conn);
    }
}

void hf_redis_conn_reset(struct hf_redis_conn *conn, const char *why) {
    conn_reset(conn, why, false);
}

/* AUTH or SELECT failed: said once per outage (each retry fails alike),
 * then the connection is reset and retried with backoff. */
static void login_failed(struct hf_redis_conn *conn, const char *what, const char *how,
                         const char *detail) {
    struct hf_redis_pool *pool = conn->pool;
    if (!pool->login_failure_logged || hf_log_enabled(HF_LOG_DEBUG))
        pool_log(pool, HF_LOG_ERROR, "redis: %s %s on connection %u to %s: %s; reconnecting with backoff "
                  "(logged once until a connection is ready)",
                  what, how, conn->index, pool->address, detail);
    pool->login_failure_logged = true;
    conn_reset(conn, "AUTH/SELECT failed", true);
}

static void login_reply(struct hf_redis_conn *conn, const char *what,
                        enum hf_redis_status status, const redisReply *reply) {
    if (status == HF_REDIS_DISCONNECTED) return; /* going down already, and said so */
    if (status == HF_REDIS_TIMEOUT)
        login_failed(conn, what, "got no reply", "timed out");
    else if (reply->type == REDIS_REPLY_ERROR)
        login_failed(conn, what, "refused", reply->str);
}

static void on_auth_reply(void *privdata, enum hf_redis_status status, redisReply *reply) {
    login_reply(privdata, "AUTH", status, reply);
}

static void on_select_reply(void *privdata, enum hf_redis_status status, redisReply *reply) {
    login_reply(privdata, "SELECT", status, reply);
}

/* AUTH and SELECT go ahead of the set-up commands on the same connection,
 * so their replies come first and an error resets the connection before any
 * set-up reply is believed. 0, or the failed send's code with *what set. */
static int send_login(struct hf_redis_conn *conn, const char **what) {
    struct hf_redis_pool *pool = conn->pool;
    if (pool->password) {
        *what = "AUTH";
        const char *argv[3] = {"AUTH", pool->username ? pool->username : pool->password,
                               pool->password};
        int rc = hf_redis_conn_command(conn, pool->username ? 3 : 2, argv, NULL,
                                       pool->connect_timeout_ms, on_auth_reply, conn);
        if (rc != 0) return rc;
    }
    if (pool->db) {
        *what = "SELECT";
        char db[16];
        snprintf(db, sizeof db, "%u", pool->db);
        const char *argv[2] = {"SELECT", db};
        int rc = hf_redis_conn_command(conn, 2, argv, NULL, pool->connect_timeout_ms,
                                       on_select_reply, conn);
        if (rc != 0) return rc;
    }
    return 0;
}

/* Connected (TCP or the Unix socket). hiredis lets this callback free the
 * context: a reset from here takes effect once it returns. */
static void on_connect(redisAsyncContext *ac, int status) {
    struct hf_redis_conn *conn = ac->data;
    struct hf_redis_pool *pool = conn->pool;
    if (status != REDIS_OK) {
        /* hiredis frees the context after this callback. */
        if (conn->failures == 0 || hf_log_enabled(HF_LOG_DEBUG))
            pool_log(pool, HF_LOG_WARN, "redis: connection %u to %s failed: %s", conn->index, pool->address,
                     ac->err == REDIS_ERR_TIMEOUT ? "connect timed out" : ac->errstr);
        conn->ac = NULL;
        schedule_reconnect(conn);
        return;
    }
    set_state(conn, C_SETUP);
    if (pool->tls && !tls_start(conn, ac)) {
        conn_reset(conn, "TLS could not be started", true);
        return;
    }
    /* With TLS the login and set-up commands wait in hiredis's buffer until
     * the handshake is done; their deadlines bound the handshake too. */
    const char *what = NULL;
    int rc = send_login(conn, &what);
    if (rc != 0) {
        login_failed(conn, what, "could not be sent", strerror(-rc));
    } else {
        /* Only once the login went out: never on a connection being reset. */
        bool first = !pool->first_setup_done;
        pool->first_setup_done = true;
        pool->setup(pool->ud, conn, first);
    }
}

/* The connection failed (hiredis frees it once its calls have ended): said
 * once, and no longer usable, before any call's callback can react to its
 * end (a set-up step would otherwise report and reset it a second time). */
static void conn_lost(struct hf_redis_conn *conn, const redisAsyncContext *ac) {
    if (conn->state != C_SETUP && conn->state != C_READY) return; /* known already */
    if (!conn->pool->closing) {
        /* conn->ssl is freed with ac, after on_disconnect. */
        if (conn->ssl && !SSL_is_init_finished(conn->ssl))
            tls_failed(conn, conn->ssl, ac->errstr);
        else
            pool_log(conn->pool, HF_LOG_WARN, "redis: connection %u to %s lost: %s", conn->index, conn->pool->address,
                     ac->errstr);
    }
    set_state(conn, C_IDLE);
}

static void on_disconnect(const redisAsyncContext *ac, int status) {
    struct hf_redis_conn *conn = ac->data;
    conn->push = NULL; /* the next connection subscribes anew in its set-up */
    if (status != REDIS_OK) conn_lost(conn, ac);
    ERR_clear_error(); /* whatever the failure left: see tls_funcs */
    conn->ac = NULL;
    conn->ssl = NULL;
    schedule_reconnect(conn);
}

static void conn_start(struct hf_redis_conn *conn) {
    struct hf_redis_pool *pool = conn->pool;
    if (pool->closing) return;
    redisOptions options = {0};
    if (pool->host)
        REDIS_OPTIONS_SET_TCP(&options, pool->host, pool->port);
    else
        REDIS_OPTIONS_SET_UNIX(&options, pool->address + 5);
    struct timeval connect_timeout = {
        .tv_sec = pool->connect_timeout_ms / 1000,
        .tv_usec = (pool->connect_timeout_ms % 1000) * 1000,
    };
    /* Times the connect alone (the libuv adapter's timer; its expiry ends
     * in on_connect). No command timeout: that would drop the connection
     * with every call on it, where each call has its own deadline. */
    options.connect_timeout = &connect_timeout;
    redisAsyncContext *ac = redisAsyncConnectWithOptions(&options);
    if (!ac || ac->err) {
        if (conn->failures == 0)
            pool_log(pool, HF_LOG_WARN, "redis: connection %u to %s failed: %s", conn->index, pool->address,
                     ac ? ac->errstr : "out of memory");
        if (ac) redisAsyncFree(ac);
        schedule_reconnect(conn);
        return;
    }
    ac->data = conn;
    if (hf_redis_events_attach(ac, pool->loop) != REDIS_OK) {
        redisAsyncFree(ac);
        schedule_reconnect(conn);
        return;
    }
    conn->ac = ac;
    conn->ssl = NULL;
    set_state(conn, C_CONNECTING);
    /* Setting the connect callback arms the connect timeout. */
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
    redisAsyncSetConnectCallbackNC(ac, on_connect);
}

static void on_backoff(uv_timer_t *t) { conn_start(t->data); }

/* "host:port" into host (without the brackets of "[::1]:6379") and port;
 * "unix:/path" leaves host NULL. -1: not an address (config.c checks them). */
static int parse_address(struct hf_redis_pool *pool) {
    struct hf_address a;
    const char *why;
    if (!hf_address_parse(pool->address, &a, &why)) return -1;
    if (a.is_unix) return 0;
    pool->host = strdup(a.host);
    pool->port = a.port;
    return pool->host ? 0 : -1;
}

struct hf_redis_pool *hf_redis_pool_create(uv_loop_t *loop,
                                           const struct hf_redis_pool_options *opts,
                                           hf_redis_setup_fn *setup, hf_redis_state_fn *on_state,
                                           void *ud) {
    unsigned n = opts->pool_size ? opts->pool_size : 1;
    struct hf_redis_pool *pool = calloc(1, sizeof *pool + n * sizeof(struct hf_redis_conn));
    if (!pool) return NULL;
    pool->loop = loop;
    pool->address = strdup(opts->address);
    if (!pool->address || parse_address(pool) != 0) {
        free(pool->address);
        free(pool->host);
        free(pool);
        return NULL;
    }
    if (opts->tls) pool->tls = hf_redis_tls_ref(opts->tls);
    pool->username = opts->username ? strdup(opts->username) : NULL;
    pool->password = opts->password ? strdup(opts->password) : NULL;
    pool->db = opts->db;
    pool->connect_timeout_ms = opts->connect_timeout_ms;
    pool->stall_ms = opts->stall_ms ? opts->stall_ms : 10000;
    pool->no_metrics = opts->no_metrics;
    pool->quiet = opts->quiet;
    pool->backoff_max_ms = opts->backoff_max_ms ? opts->backoff_max_ms : BACKOFF_MAX_MS;
    pool->setup = setup;
    pool->on_state = on_state;
    pool->ud = ud;
    pool->n = n;
    if (!pool->no_metrics) hf_metrics_gauge_add(HF_G_REDIS_POOL_SIZE, n);
    for (unsigned i = 0; i < n; i++) {
        struct hf_redis_conn *conn = &pool->conns[i];
        conn->pool = pool;
        conn->index = i;
        uv_timer_init(loop, &conn->timer);
        conn->timer.data = conn;
        uv_timer_init(loop, &conn->stall);
        conn->stall.data = conn;
        pool->open_timers += 2;
    }
    for (unsigned i = 0; i < n; i++) {
        /* Connect from the loop so that callbacks never run inside create(). */
        uv_timer_start(&pool->conns[i].timer, on_backoff, 0, 0);
    }
    return pool;
}

static void on_pool_timer_closed(uv_handle_t *h) {
    struct hf_redis_conn *conn = h->data;
    struct hf_redis_pool *pool = conn->pool;
    if (--pool->open_timers > 0) return;
    free(pool->address);
    free(pool->host);
    hf_redis_tls_unref(pool->tls);
    free(pool->username);
    free(pool->password);
    free(pool);
}

void hf_redis_pool_close(struct hf_redis_pool *pool) {
    if (!pool || pool->closing) return;
    pool->closing = true;
    for (unsigned i = 0; i < pool->n; i++) {
        struct hf_redis_conn *conn = &pool->conns[i];
        uv_timer_stop(&conn->timer);
        if (conn->ac) {
            redisAsyncContext *ac = conn->ac;
            conn->ac = NULL;
            /* Pending callbacks run with DISCONNECTED from inside this call. */
            redisAsyncFree(ac);
        }
        conn->state = C_CLOSED;
        uv_close((uv_handle_t *)&conn->timer, on_pool_timer_closed);
        uv_close((uv_handle_t *)&conn->stall, on_pool_timer_closed);
    }
    /* Connections whose free hiredis deferred left the count without
     * passing through set_state(). */
    if (!pool->no_metrics) {
        hf_metrics_gauge_add(HF_G_REDIS_CONNECTED, -(int64_t)pool->ready);
        hf_metrics_gauge_add(HF_G_REDIS_POOL_SIZE, -(int64_t)pool->n);
    }
    pool->ready = 0;
}
