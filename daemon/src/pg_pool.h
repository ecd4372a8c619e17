/* pg_pool.h - a few libpq connections driven asynchronously by the libuv
 * loop (PQconnectPoll, PQsendQueryParams, the socket watched with uv_poll):
 * reconnect with backoff, a statement timeout per connection, a deadline on
 * every call, and results that say whether the statement may have run.
 * Each connection runs one statement at a time; calls queue for a free one. */
#ifndef HF_PG_POOL_H
#define HF_PG_POOL_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "config.h"

enum hf_pg_status {
    HF_PG_OK,       /* the statement ran and its transaction committed; rows in res */
    HF_PG_ERROR,    /* the server refused it (sqlstate set); nothing was committed */
    HF_PG_NOT_SENT, /* it never reached the server: safe to send again */
    HF_PG_IN_DOUBT, /* sent, then the connection was lost or the deadline passed
                       before the result: it may or may not have committed */
};

struct hf_pg_result {
    enum hf_pg_status status;
    const PGresult *res;      /* OK: the rows; ERROR: the error; else NULL */
    const char *sqlstate;     /* ERROR: five characters; else "" */
    const char *message;      /* why, for logs: the server's message or ours */
    int backend_pid;          /* IN_DOUBT: the server process that had it */
    int64_t backend_start_us; /* ... and its start time (with the pid, names it) */
};

/* Called exactly once per accepted call; everything in `r` is borrowed for
 * the duration of the callback. */
typedef void hf_pg_cb(void *privdata, const struct hf_pg_result *r);
/* The number of ready connections changed. */
typedef void hf_pg_state_fn(void *ud, unsigned ready);

struct hf_pg_pool;

/* Connects in the background (from the loop, never inside this call). A
 * connection is ready once its session is set up: statement_timeout set, a
 * primary (not in recovery), schema at least the embedded migrations'
 * version. Also prunes idempotency records periodically. NULL on OOM. */
struct hf_pg_pool *hf_pg_pool_create(uv_loop_t *loop, const struct hf_config *cfg,
                                     hf_pg_state_fn *on_state, void *ud);

/* Run one statement with text results. values/lengths/formats as for
 * PQsendQueryParams (lengths and formats may be NULL: all text); everything
 * is copied. The call waits for a free connection and ends by timeout_ms at
 * the latest. 0, or negative when nothing was accepted (cb never called):
 * -ENOTCONN when no connection is ready, -ESHUTDOWN when closing. */
int hf_pg_query(struct hf_pg_pool *pool, const char *sql, int nparams,
                const char *const *values, const int *lengths, const int *formats,
                uint32_t timeout_ms, hf_pg_cb *cb, void *privdata);

unsigned hf_pg_pool_ready_count(const struct hf_pg_pool *pool);
const char *hf_pg_status_name(enum hf_pg_status status);

/* Close every connection (calls in flight end IN_DOUBT, queued ones
 * NOT_SENT, from inside this call) and free the pool once its handles are
 * closed; the loop must run for that. NULL is a no-op. */
void hf_pg_pool_close(struct hf_pg_pool *pool);

#endif
