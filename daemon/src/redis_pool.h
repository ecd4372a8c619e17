/* redis_pool.h - a few hiredis async connections on the libuv loop, with
 * reconnect and backoff, optionally TLS, and a deadline on every call (our
 * own timers: hiredis's command timeout would drop the whole connection).
 * Commands pipeline on whichever ready connection has the fewest replies
 * outstanding. */
#ifndef HF_REDIS_POOL_H
#define HF_REDIS_POOL_H

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

enum hf_redis_status {
    HF_REDIS_OK,           /* reply is set (it may be an error reply) */
    HF_REDIS_TIMEOUT,      /* no reply within the call's deadline */
    HF_REDIS_DISCONNECTED, /* the connection was lost before a reply came */
    HF_REDIS_NOT_SENT,     /* never sent: no ready connection (a callback status only for a
                            * coalesced call whose batch could not be sent) */
};

/* "ok", "timed out", "connection lost", "not connected". */
const char *hf_redis_status_name(enum hf_redis_status status);
/* Why a call gave no usable reply, for logs: the status's name, or for an
 * error reply its text. */
const char *hf_redis_failure_text(enum hf_redis_status status, const redisReply *reply);

/* The error reply's code (its leading capitals: "ERR", "NOSCRIPT",
 * "WRONGTYPE", ...) into out, for logs: the rest of a script's error text can
 * echo its arguments, tokens included, and is never logged. */
void hf_redis_error_code(const redisReply *reply, char *out, size_t outlen);

/* Called exactly once per accepted command. `reply` is borrowed for the
 * duration of the call and is NULL unless status is HF_REDIS_OK. */
typedef void hf_redis_cb(void *privdata, enum hf_redis_status status, redisReply *reply);

struct hf_redis_pool;
struct hf_redis_conn;

/* TLS to Redis: one OpenSSL client context, shared by every connection of
 * every pool that is given it (each pool keeps a reference). */
struct hf_redis_tls_options {
    const char *ca_file;     /* PEM CA certificates; with ca_dir NULL too: the system's */
    const char *ca_dir;      /* a hashed directory of CA certificates; may be NULL */
    const char *cert_file;   /* client certificate chain (PEM), with key_file; may be NULL */
    const char *key_file;    /* its private key (PEM) */
    const char *server_name; /* SNI and the name the certificate must carry; NULL: the
                              * host of each address (an IP address: an IP SAN) */
    bool verify;             /* check the chain and the name; false: encryption only */
};
struct hf_redis_tls;

/* NULL with a message naming the setting and why (unreadable file, key not
 * matching the certificate, ...) in err. */
struct hf_redis_tls *hf_redis_tls_create(const struct hf_redis_tls_options *opts, char *err,
                                         size_t errlen);
struct hf_redis_tls *hf_redis_tls_ref(struct hf_redis_tls *tls);
/* NULL is a no-op. */
void hf_redis_tls_unref(struct hf_redis_tls *tls);

struct hf_redis_pool_options {
    const char *address;  /* "unix:/path" or "host:port" */
    const char *username; /* may be NULL */
    const char *password; /* may be NULL */
    uint32_t db;
    uint32_t pool_size;
    uint32_t connect_timeout_ms;
    /* A connection is reset only when its oldest outstanding reply is older
     * than this (a paused or partitioned server): a caller's short deadline
     * ends that caller's wait, never the shared connection. 0: 10 s. */
    uint32_t stall_ms;
    bool no_metrics;      /* leave the pool gauges alone (cluster seed connections) */
    /* A connection beside the main pool (a subscription): its failures are
     * the main pool's too and are said there, so here only at debug. */
    bool quiet;
    uint32_t backoff_max_ms; /* the longest wait between reconnects; 0: 2 s */
    struct hf_redis_tls *tls; /* NULL: plain TCP; else TLS ("host:port" addresses only) */
};

/* A connection came up (authenticated, db selected). The owner sends its
 * set-up commands with hf_redis_conn_command(), then calls
 * hf_redis_conn_set_ready(); until then the pool hands the connection out to
 * nobody else. */
typedef void hf_redis_setup_fn(void *ud, struct hf_redis_conn *conn, bool first_ever);
/* The number of ready connections changed. */
typedef void hf_redis_state_fn(void *ud, unsigned ready);

struct hf_redis_pool *hf_redis_pool_create(uv_loop_t *loop,
                                           const struct hf_redis_pool_options *opts,
                                           hf_redis_setup_fn *setup, hf_redis_state_fn *on_state,
                                           void *ud);

/* The ready connection with the fewest replies outstanding, or NULL (also
 * for a NULL pool). */
struct hf_redis_conn *hf_redis_pool_pick(struct hf_redis_pool *pool);

/* Send a command already in RESP (resp.h; one or more arguments) on a
 * given connection: its bytes are queued as they are (hiredis copies them),
 * so cmd need not outlive the call. 0, or a negative errno-style code when
 * the command could not be queued (then cb is never called). */
int hf_redis_conn_send_formatted(struct hf_redis_conn *conn, const char *cmd, size_t len,
                                 uint32_t timeout_ms, hf_redis_cb *cb, void *privdata)
    __attribute__((warn_unused_result));
/* The same for an argv (argvlen NULL: NUL-terminated strings; argc >= 1),
 * formatted once by resp.c: for set-up and other one-off commands. */
int hf_redis_conn_command(struct hf_redis_conn *conn, int argc, const char **argv,
                          const size_t *argvlen, uint32_t timeout_ms, hf_redis_cb *cb,
                          void *privdata) __attribute__((warn_unused_result));
/* Write the connection's queued commands now (redis_events.h). */
void hf_redis_conn_write_now(struct hf_redis_conn *conn);
/* Pick a connection and send an argv; -ENOTCONN when none is ready. */
int hf_redis_pool_command(struct hf_redis_pool *pool, int argc, const char **argv,
                          const size_t *argvlen, uint32_t timeout_ms, hf_redis_cb *cb,
                          void *privdata) __attribute__((warn_unused_result));

/* A pub/sub message, or the subscription's acknowledgement or refusal, as
 * hiredis delivers it (borrowed); NULL when the connection is ending. */
typedef void hf_redis_push_fn(void *ud, const redisReply *reply);
/* Turn a connection in set-up into a subscriber of `channel` (a set-up hook
 * does this, then hf_redis_conn_set_ready): from here it carries nothing
 * else, and push(ud, ...) runs for every frame the subscription brings until
 * the connection ends. 0, or a negative errno-style code. */
int hf_redis_conn_subscribe(struct hf_redis_conn *conn, const char *channel,
                            hf_redis_push_fn *push, void *ud) __attribute__((warn_unused_result));

/* End of set-up: ok=true makes the connection available; false resets it. */
void hf_redis_conn_set_ready(struct hf_redis_conn *conn, bool ok);
/* Drop the connection (its pending calls end DISCONNECTED) and reconnect. */
void hf_redis_conn_reset(struct hf_redis_conn *conn, const char *why);

unsigned hf_redis_pool_ready_count(const struct hf_redis_pool *pool);
/* The address the pool connects to, as configured ("host:port", "unix:..."). */
const char *hf_redis_pool_address(const struct hf_redis_pool *pool);
struct hf_redis_pool *hf_redis_conn_pool(const struct hf_redis_conn *conn);

/* Close every connection (pending calls end DISCONNECTED) and free the pool
 * once its handles are closed; the loop must run for that. NULL is a no-op. */
void hf_redis_pool_close(struct hf_redis_pool *pool);

#endif
