/* pg_pool.h - a few libpq connections driven asynchronously by the libuv
 * loop (PQconnectPoll, PQsendQueryParams, the socket watched with uv_poll):
 * reconnect with backoff, a statement timeout per connection, a deadline on
 * every call, and results that say whether the statement may have run.
 * Each connection runs one statement at a time; calls queue for a free one.
 * It knows no schema: its owner adds columns and a check to the set-up. */
#ifndef HF_PG_POOL_H
#define HF_PG_POOL_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

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

struct hf_pg_pool_options {
    const char *dsn;               /* libpq connection string; copied */
    const char *application_name;  /* libpq's fallback_application_name; NULL: none */
    unsigned pool_size;            /* connections; 0 means 1 */
    uint32_t connect_timeout_ms;   /* connect and session set-up, each attempt */
    uint32_t statement_timeout_ms; /* set on every connection */
    bool prepare_statements;       /* hf_pg_query_prepared prepares; false: as hf_pg_query */
};

/* Judges a connection's set-up round trip (see struct hf_pg_setup). r->res
 * holds the row when r->status is HF_PG_OK; the owner's columns start at
 * first_column. Return true to use the connection; false to refuse it, with
 * `say` telling an operator what is wrong (logged as "postgres: <say>", once
 * per outage; the connection is reset and retried with backoff). On
 * acceptance `say` may carry a note for the "ready" log line. Also called
 * with HF_PG_ERROR when the server refused the set-up statement (one of the
 * owner's columns, most likely): the connection is refused whatever it
 * returns, and `say` (left empty: "session set-up failed: <message>") words
 * the log line from r->sqlstate and r->message. */
typedef bool hf_pg_setup_check_fn(void *ud, const struct hf_pg_result *r, int first_column,
                                  char *say, size_t saylen);

/* The owner's part of a connection's session set-up. Its columns join the
 * pool's own SELECT (backend pid and start time, pg_is_in_recovery(), the
 * session settings), so set-up stays one round trip. */
struct hf_pg_setup {
    const char *columns;         /* select-list items, e.g. "app.version()"; no
                                    parameters; NULL: none. Copied */
    hf_pg_setup_check_fn *check; /* NULL: every primary is accepted */
};

/* Connects in the background (from the loop, never inside this call). A
 * connection is ready once its session is set up: statement_timeout set, a
 * primary (not in recovery), and accepted by setup->check. `ud` goes to
 * setup->check and on_state. setup may be NULL. NULL on OOM. */
struct hf_pg_pool *hf_pg_pool_create(uv_loop_t *loop, const struct hf_pg_pool_options *opts,
                                     const struct hf_pg_setup *setup, hf_pg_state_fn *on_state,
                                     void *ud);

/* The ud given to hf_pg_pool_create(): an owner that hands out only the pool
 * finds its own state again with it. */
void *hf_pg_pool_owner(const struct hf_pg_pool *pool);

/* Run one statement with text results. values/lengths/formats as for
 * PQsendQueryParams (lengths and formats may be NULL: all text); everything
 * is copied. The call waits at most send_within_ms for a free connection
 * (then NOT_SENT: a caller's deadline never sends a statement late); once
 * sent it has run_ms to finish before its connection is dropped and it ends
 * IN_DOUBT — make that longer than the server's own statement_timeout, so
 * that only a stuck connection is ever dropped. 0, or negative when nothing
 * was accepted (cb never called): -ENOTCONN when no connection is ready,
 * -ESHUTDOWN when closing. A caller that ignores it would wait for a
 * callback that never comes. */
__attribute__((warn_unused_result))
int hf_pg_query(struct hf_pg_pool *pool, const char *sql, int nparams,
                const char *const *values, const int *lengths, const int *formats,
                uint32_t send_within_ms, uint32_t run_ms, hf_pg_cb *cb, void *privdata);

/* The same, as a prepared statement of the session it runs on: parsed and
 * planned once per session (the first call on a session pays one more round
 * trip for the Parse), as pgbench -M prepared. For statements whose text
 * never changes: a session keeps 16, more texts run unprepared, and a Parse
 * the server refuses runs the text unprepared. The pool cannot tell a
 * session that lost its statements (a pooler in transaction mode): such
 * setups turn this off (postgres.prepared_statements). */
__attribute__((warn_unused_result))
int hf_pg_query_prepared(struct hf_pg_pool *pool, const char *sql, int nparams,
                         const char *const *values, const int *lengths, const int *formats,
                         uint32_t send_within_ms, uint32_t run_ms, hf_pg_cb *cb,
                         void *privdata);

unsigned hf_pg_pool_ready_count(const struct hf_pg_pool *pool);
const char *hf_pg_status_name(enum hf_pg_status status);

/* Close every connection (calls in flight end IN_DOUBT, queued ones
 * NOT_SENT, from inside this call) and free the pool once its handles are
 * closed; the loop must run for that. NULL is a no-op. */
void hf_pg_pool_close(struct hf_pg_pool *pool);

#endif
