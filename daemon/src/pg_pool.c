/* pg_pool.c - libpq connections on the libuv loop: connect, set up the
 * session (the owner's checks ride along in the same round trip), run one
 * statement at a time, reconnect with backoff. It knows no schema of its
 * own. Nothing here blocks the loop
 * (except name resolution inside PQconnectPoll when the DSN names a host:
 * see docs/confirm.md). */
#include "pg_pool.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utlist.h>

#include "backoff.h"
#include "log.h"
#include "metrics.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 2000
/* While a statement runs, its server process checks this often that the
 * daemon is still connected, so a call the daemon gave up on stops soon. */
#define CLIENT_CHECK_INTERVAL_MS "1000"

/* One round trip sets the session up and tells whether it may be used;
 * the owner's columns (struct hf_pg_setup) follow these. */
static const char SQL_SETUP[] =
    "SELECT pg_backend_pid(),"
    " (SELECT floor(extract(epoch FROM backend_start) * 1000000)::bigint"
    "    FROM pg_stat_activity WHERE pid = pg_backend_pid()),"
    " pg_is_in_recovery(),"
    " set_config('statement_timeout', $1, false),"
    " set_config('client_connection_check_interval', '" CLIENT_CHECK_INTERVAL_MS "', false)";
#define SETUP_COLUMNS 5 /* the owner's columns start here */

enum conn_state { C_IDLE, C_CONNECTING, C_SETUP, C_READY, C_CLOSED };

/* Statements kept prepared per session; more distinct texts run unprepared. */
#define PREPARED_MAX 16

struct pg_watch;
struct pg_call;

struct pg_conn {
    struct hf_pg_pool *pool;
    unsigned index;
    enum conn_state state;
    PGconn *pg;
    struct pg_watch *watch; /* uv_poll on PQsocket(pg) */
    int events;             /* what the watch is started with */
    uv_timer_t timer;       /* connect timeout, then reconnect backoff */
    unsigned failures;
    bool ever_ready;
    struct pg_call *call;   /* the statement in flight */
    bool broken;            /* failed; being drained before the reset */
    /* Statements prepared on this session (hf_pg_query_prepared), named
     * hf_1.. in order; the text is kept to find them again. */
    char *prepared[PREPARED_MAX];
    unsigned n_prepared;
    bool preparing;         /* the call in flight waits for its statement's Parse */
    bool prepare_failed;    /* ... and the Parse was refused */
    int backend_pid;
    int64_t backend_start_us;
};

/* A poll handle in its own allocation. libpq may replace its socket while
 * connecting; the handle on the old descriptor is then retired (closed) and
 * a new one made. The PGconn is finished (its socket closed) only in the
 * close callback of its last handle, once libuv has let go of the fd. */
struct pg_watch {
    uv_poll_t poll;
    struct hf_pg_pool *pool;
    struct pg_conn *conn; /* NULL once retired */
    PGconn *finish;       /* PQfinish'd in the close callback */
    int fd;
};

struct pg_call {
    uv_timer_t timer;     /* the call's deadline */
    struct hf_pg_pool *pool;
    struct pg_call *prev, *next; /* in the pool's queue (utlist) */
    bool queued;
    struct pg_conn *conn; /* set once sent */
    hf_pg_cb *cb;
    void *privdata;
    uint32_t run_ms;      /* its bound once sent */
    bool done;
    PGresult *first;      /* the statement's result */
    PGresult *error;      /* the first error after it (commit failed, connection lost) */
    bool prepare;         /* run as a prepared statement of its session */
    const char *sql;
    int nparams;
    const char **values;
    int *lengths;
    int *formats;
};

struct hf_pg_pool {
    uv_loop_t *loop;
    char *dsn;
    char *app_name;      /* NULL: none */
    char *setup_sql;     /* SQL_SETUP and the owner's columns */
    hf_pg_setup_check_fn *check;
    uint32_t connect_timeout_ms;
    uint32_t statement_timeout_ms;
    bool prepare;        /* hf_pg_query_prepared prepares (opts.prepare_statements) */
    hf_pg_state_fn *on_state;
    void *ud;
    bool closing;
    bool problem_logged; /* one warning per outage, not one per retry */
    unsigned ready;
    unsigned open_handles;
    struct pg_call *head;       /* the queue, oldest first (utlist: head->prev is the tail) */
    uv_timer_t kick;     /* fails queued calls once no connection is left */
    unsigned n;
    struct pg_conn conns[];
};

static void conn_start(struct pg_conn *c);
static void conn_reset(struct pg_conn *c, const char *why);
static void pump(struct hf_pg_pool *pool);
static bool send_call(struct pg_conn *c, struct pg_call *call);
static bool prepared_then_send(struct pg_conn *c, struct pg_call *call);
static void forget_prepared(struct pg_conn *c);

const char *hf_pg_status_name(enum hf_pg_status status) {
    switch (status) {
    case HF_PG_OK: return "ok";
    case HF_PG_ERROR: return "error";
    case HF_PG_NOT_SENT: return "not sent";
    case HF_PG_IN_DOUBT: return "in doubt";
    }
    return "?";
}

unsigned hf_pg_pool_ready_count(const struct hf_pg_pool *pool) { return pool ? pool->ready : 0; }

void *hf_pg_pool_owner(const struct hf_pg_pool *pool) { return pool ? pool->ud : NULL; }

/* libpq's messages end in a newline; log lines do not. */
static void copy_message(char *out, size_t cap, const char *msg) {
    snprintf(out, cap, "%s", msg && *msg ? msg : "unknown error");
    size_t n = strlen(out);
    while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == ' ')) out[--n] = '\0';
}

/* `line` as the operator reads it, after "postgres: ". */
static void report_line(struct hf_pg_pool *pool, const char *line) {
    if (!pool->problem_logged) log_warn("postgres: %s", line);
    else log_debug("postgres: %s", line);
    pool->problem_logged = true;
}

static void report_problem(struct hf_pg_pool *pool, const char *what, const char *msg) {
    char m[512], line[768];
    copy_message(m, sizeof m, msg);
    snprintf(line, sizeof line, "%s: %s", what, m);
    report_line(pool, line);
}

static void on_notice(void *arg, const char *message) {
    struct pg_conn *c = arg;
    char m[512];
    copy_message(m, sizeof m, message);
    if (strncmp(m, "WARNING", 7) == 0) log_warn("postgres: connection %u: %s", c->index, m);
    else log_debug("postgres: connection %u: %s", c->index, m);
}

static void maybe_free_pool(struct hf_pg_pool *pool) {
    if (!pool->closing || pool->open_handles > 0) return;
    free(pool->dsn);
    free(pool->app_name);
    free(pool->setup_sql);
    free(pool);
}

/* ---- the poll handles ---- */

static void on_watch_closed(uv_handle_t *h) {
    struct pg_watch *w = h->data;
    struct hf_pg_pool *pool = w->pool;
    if (w->finish) PQfinish(w->finish);
    free(w);
    pool->open_handles--;
    maybe_free_pool(pool);
}

static void watch_retire(struct pg_watch *w, PGconn *finish) {
    uv_poll_stop(&w->poll);
    w->conn = NULL;
    w->finish = finish;
    uv_close((uv_handle_t *)&w->poll, on_watch_closed);
}

static void on_poll(uv_poll_t *h, int status, int events);

/* Watch the connection's current socket for `events`. rearm: stop and start
 * again even when the descriptor number is unchanged, because while
 * connecting libpq may have closed the socket and opened a new one that got
 * the same number, which the kernel no longer watches. */
static int watch_set(struct pg_conn *c, int events, bool rearm) {
    struct hf_pg_pool *pool = c->pool;
    int fd = PQsocket(c->pg);
    if (fd < 0) return -EBADF;
    struct pg_watch *w = c->watch;
    if (w && w->fd != fd) {
        watch_retire(w, NULL); /* libpq has closed that descriptor itself */
        c->watch = w = NULL;
    } else if (w && rearm) {
        uv_poll_stop(&w->poll);
        c->events = 0;
    }
    if (!w) {
        w = calloc(1, sizeof *w);
        if (!w) return -ENOMEM;
        int rc = uv_poll_init_socket(pool->loop, &w->poll, fd);
        if (rc != 0) {
            free(w);
            return rc;
        }
        w->poll.data = w;
        w->pool = pool;
        w->conn = c;
        w->fd = fd;
        pool->open_handles++;
        c->watch = w;
        c->events = 0;
    }
    if (events != c->events) {
        int rc = uv_poll_start(&w->poll, events, on_poll);
        if (rc != 0) return rc;
        c->events = events;
    }
    return 0;
}

/* ---- calls ---- */

static void on_call_closed(uv_handle_t *h) { free(h->data); }

static void call_finish(struct pg_call *call, enum hf_pg_status status, const PGresult *res,
                        const char *sqlstate, const char *message, const struct pg_conn *c) {
    if (call->done) return;
    call->done = true;
    uv_timer_stop(&call->timer);
    char m[512];
    copy_message(m, sizeof m, message);
    struct hf_pg_result r = {
        .status = status,
        .res = res,
        .sqlstate = sqlstate ? sqlstate : "",
        .message = m,
        .backend_pid = c ? c->backend_pid : 0,
        .backend_start_us = c ? c->backend_start_us : 0,
    };
    if (status != HF_PG_OK) hf_metrics_inc(HF_C_PG_ERRORS);
    call->cb(call->privdata, &r);
    PQclear(call->first);
    PQclear(call->error);
    call->first = call->error = NULL;
    uv_close((uv_handle_t *)&call->timer, on_call_closed);
}

static bool is_ok(const PGresult *r) {
    ExecStatusType st = PQresultStatus(r);
    return st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK;
}

/* The statement's last result arrived (PQgetResult returned NULL). The
 * implicit transaction commits at Sync, after the rows were sent, so:
 *  - successful results only, then ReadyForQuery: committed;
 *  - the server's error as the first result: the statement failed, rolled back;
 *  - the server's error after the rows on a connection still up (so
 *    ReadyForQuery came too): the commit itself failed, rolled back;
 *  - anything else (no result, libpq's own "connection lost", an error after
 *    the rows on a broken connection): in doubt. */
static void call_complete(struct pg_conn *c, struct pg_call *call) {
    PGresult *first = call->first;
    if (first && is_ok(first) && !call->error) {
        call_finish(call, HF_PG_OK, first, NULL, "", c);
        return;
    }
    PGresult *e = first && is_ok(first) ? call->error : first;
    const char *state = e ? PQresultErrorField(e, PG_DIAG_SQLSTATE) : NULL;
    const char *msg = e ? PQresultErrorField(e, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    if (!msg) msg = e ? PQresultErrorMessage(e) : "no result";
    bool server_error = e && PQresultStatus(e) == PGRES_FATAL_ERROR && state &&
                        strlen(state) == 5 && strncmp(state, "08", 2) != 0;
    if (server_error && (e == first || PQstatus(c->pg) == CONNECTION_OK))
        call_finish(call, HF_PG_ERROR, e, state, msg, c);
    else
        call_finish(call, HF_PG_IN_DOUBT, NULL, NULL, msg, c);
}

/* Everything libpq has parsed so far: results of the call in flight (which
 * may complete it and run its callback), then notifications (dropped). */
static void collect(struct pg_conn *c) {
    PGconn *pg = c->pg;
    while (c->pg == pg && c->call && !PQisBusy(pg)) {
        struct pg_call *call = c->call;
        PGresult *r = PQgetResult(pg);
        if (c->preparing) {
            if (r) {
                if (!is_ok(r)) c->prepare_failed = true;
                PQclear(r);
                continue;
            }
            if (!prepared_then_send(c, call)) {
                conn_reset(c, "could not send a statement after its Parse");
                return;
            }
            continue;
        }
        if (r) {
            if (!call->first) call->first = r;
            else if (!call->error && !is_ok(r)) call->error = r;
            else PQclear(r);
            continue;
        }
        c->call = NULL;
        call_complete(c, call);
        /* The callback may have sent more, on this connection too, or reset it. */
        pump(c->pool);
    }
    PGnotify *n;
    while (c->pg == pg && (n = PQnotifies(pg))) PQfreemem(n);
}

/* false: nothing reached the server (the connection is probably broken). */
static void on_call_deadline(uv_timer_t *t);

/* The session's i-th prepared statement (from 0) is named hf_<i+1>. */
static const char *statement_name(unsigned i, char *name, size_t len) {
    snprintf(name, len, "hf_%u", i + 1);
    return name;
}

/* The name of the session's prepared statement for sql, or NULL. */
static const char *prepared_name(const struct pg_conn *c, const char *sql, char *name,
                                 size_t len) {
    for (unsigned i = 0; i < c->n_prepared; i++)
        if (strcmp(c->prepared[i], sql) == 0) return statement_name(i, name, len);
    return NULL;
}

static void forget_prepared(struct pg_conn *c) {
    for (unsigned i = 0; i < c->n_prepared; i++) free(c->prepared[i]);
    c->n_prepared = 0;
    c->preparing = c->prepare_failed = false;
}

/* The statement itself: the session's prepared statement stmt, or (NULL)
 * its text. */
static bool send_statement(struct pg_conn *c, const struct pg_call *call, const char *stmt) {
    return stmt ? PQsendQueryPrepared(c->pg, stmt, call->nparams, call->values, call->lengths,
                                      call->formats, 0)
                : PQsendQueryParams(c->pg, call->sql, call->nparams, NULL, call->values,
                                    call->lengths, call->formats, 0);
}

/* Flush what libpq holds and watch for the answer. */
static void flush_and_watch(struct pg_conn *c) {
    /* < 0: the socket failed; the poll callback will see it and reset. */
    int f = PQflush(c->pg);
    if (watch_set(c, UV_READABLE | (f != 0 ? UV_WRITABLE : 0), false) != 0)
        log_warn("postgres: connection %u: cannot watch its socket", c->index);
}

static bool send_call(struct pg_conn *c, struct pg_call *call) {
    char name[16];
    const char *stmt = NULL;
    bool parse_first = false;
    if (call->prepare && c->pool->prepare) {
        stmt = prepared_name(c, call->sql, name, sizeof name);
        parse_first = !stmt && c->n_prepared < PREPARED_MAX;
    }
    if (parse_first) {
        /* The statement follows once the Parse has answered (collect). */
        statement_name(c->n_prepared, name, sizeof name);
        if (!PQsendPrepare(c->pg, name, call->sql, call->nparams, NULL)) return false;
        c->preparing = true;
        c->prepare_failed = false;
    } else if (!send_statement(c, call, stmt)) {
        return false;
    }
    c->call = call;
    call->conn = c;
    uv_timer_start(&call->timer, on_call_deadline, call->run_ms ? call->run_ms : 1, 0);
    flush_and_watch(c);
    return true;
}

/* The Parse of the call in flight has answered: keep the statement (or, if
 * it was refused, run the text unprepared), then send it. false: nothing
 * more could be sent. */
static bool prepared_then_send(struct pg_conn *c, struct pg_call *call) {
    c->preparing = false;
    char name[16];
    const char *stmt = NULL; /* the text, if the Parse was refused */
    if (!c->prepare_failed) {
        /* The name the Parse gave it; without the copy of its text, it is
         * only never found again. */
        stmt = statement_name(c->n_prepared, name, sizeof name);
        char *copy = strdup(call->sql);
        if (copy) c->prepared[c->n_prepared++] = copy;
    }
    if (!send_statement(c, call, stmt)) return false;
    flush_and_watch(c);
    return true;
}

static struct pg_conn *idle_conn(struct hf_pg_pool *pool) {
    for (unsigned i = 0; i < pool->n; i++) {
        struct pg_conn *c = &pool->conns[i];
        if (c->state == C_READY && !c->call && !c->broken) return c;
    }
    return NULL;
}

static void enqueue(struct hf_pg_pool *pool, struct pg_call *call, bool front) {
    if (front) DL_PREPEND(pool->head, call);
    else DL_APPEND(pool->head, call);
    call->queued = true;
}

static void unqueue(struct hf_pg_pool *pool, struct pg_call *call) {
    if (!call->queued) return;
    DL_DELETE(pool->head, call);
    call->queued = false;
}

/* Hand queued calls to idle connections. Never runs a callback. */
static void pump(struct hf_pg_pool *pool) {
    while (pool->head && !pool->closing) {
        struct pg_conn *c = idle_conn(pool);
        if (!c) break;
        struct pg_call *call = pool->head;
        unqueue(pool, call);
        if (!send_call(c, call)) {
            char why[320];
            snprintf(why, sizeof why, "could not send: %s", PQerrorMessage(c->pg));
            enqueue(pool, call, true); /* back to the front, for another connection */
            conn_reset(c, why);
        }
    }
}

static void fail_queue(struct hf_pg_pool *pool, const char *why) {
    while (pool->head) {
        struct pg_call *call = pool->head;
        unqueue(pool, call);
        call_finish(call, HF_PG_NOT_SENT, NULL, NULL, why, NULL);
    }
}

static void on_kick(uv_timer_t *t) {
    struct hf_pg_pool *pool = t->data;
    if (pool->ready == 0) fail_queue(pool, "no connection to PostgreSQL");
    else pump(pool);
}

static void on_call_deadline(uv_timer_t *t) {
    struct pg_call *call = t->data;
    if (call->done) return;
    if (call->conn) {
        /* No way to cancel without blocking (PQcancel is synchronous): drop
         * the connection. The call ends IN_DOUBT from inside the reset. */
        conn_reset(call->conn, "a statement ran past its bound without a result");
        return;
    }
    unqueue(call->pool, call);
    call_finish(call, HF_PG_NOT_SENT, NULL, NULL, "no free connection before the deadline", NULL);
}

static struct pg_call *call_new(struct hf_pg_pool *pool, const char *sql, int nparams,
                                const char *const *values, const int *lengths,
                                const int *formats, hf_pg_cb *cb, void *privdata) {
    size_t n = nparams > 0 ? (size_t)nparams : 0;
    size_t bytes = strlen(sql) + 1;
    for (size_t i = 0; i < n; i++) {
        if (!values[i]) continue;
        bytes += formats && formats[i] ? (size_t)lengths[i] : strlen(values[i]) + 1;
    }
    struct pg_call *call =
        calloc(1, sizeof *call + n * (sizeof(char *) + 2 * sizeof(int)) + bytes);
    if (!call) return NULL;
    call->pool = pool;
    call->cb = cb;
    call->privdata = privdata;
    call->nparams = (int)n;
    call->values = (const char **)(call + 1);
    call->lengths = (int *)(call->values + n);
    call->formats = call->lengths + n;
    char *p = (char *)(call->formats + n);
    for (size_t i = 0; i < n; i++) {
        call->formats[i] = formats ? formats[i] : 0;
        if (!values[i]) continue; /* SQL NULL */
        size_t len = call->formats[i] ? (size_t)lengths[i] : strlen(values[i]) + 1;
        memcpy(p, values[i], len);
        call->values[i] = p;
        call->lengths[i] = (int)(call->formats[i] ? len : len - 1);
        p += len;
    }
    memcpy(p, sql, strlen(sql) + 1);
    call->sql = p;
    uv_timer_init(pool->loop, &call->timer);
    call->timer.data = call;
    return call;
}

static int query(struct hf_pg_pool *pool, bool prepare, const char *sql, int nparams,
                 const char *const *values, const int *lengths, const int *formats,
                 uint32_t send_within_ms, uint32_t run_ms, hf_pg_cb *cb, void *privdata) {
    if (!pool) return -ENOTCONN;
    if (pool->closing) return -ESHUTDOWN;
    if (pool->ready == 0) return -ENOTCONN;
    struct pg_call *call = call_new(pool, sql, nparams, values, lengths, formats, cb, privdata);
    if (!call) return -ENOMEM;
    call->run_ms = run_ms;
    call->prepare = prepare;
    uv_timer_start(&call->timer, on_call_deadline, send_within_ms ? send_within_ms : 1, 0);
    enqueue(pool, call, false);
    pump(pool);
    return 0;
}

int hf_pg_query(struct hf_pg_pool *pool, const char *sql, int nparams,
                const char *const *values, const int *lengths, const int *formats,
                uint32_t send_within_ms, uint32_t run_ms, hf_pg_cb *cb, void *privdata) {
    return query(pool, false, sql, nparams, values, lengths, formats, send_within_ms, run_ms,
                 cb, privdata);
}

int hf_pg_query_prepared(struct hf_pg_pool *pool, const char *sql, int nparams,
                         const char *const *values, const int *lengths, const int *formats,
                         uint32_t send_within_ms, uint32_t run_ms, hf_pg_cb *cb,
                         void *privdata) {
    return query(pool, true, sql, nparams, values, lengths, formats, send_within_ms, run_ms,
                 cb, privdata);
}

/* ---- connections ---- */

static void set_state(struct pg_conn *c, enum conn_state state) {
    struct hf_pg_pool *pool = c->pool;
    bool was_ready = c->state == C_READY, is_ready = state == C_READY;
    c->state = state;
    if (was_ready == is_ready) return;
    pool->ready += is_ready ? 1 : (unsigned)-1;
    hf_metrics_gauge_set(HF_G_PG_CONNECTED, pool->ready);
    if (pool->on_state && !pool->closing) pool->on_state(pool->ud, pool->ready);
}

static void on_backoff(uv_timer_t *t) { conn_start(t->data); }

static void schedule_reconnect(struct pg_conn *c) {
    if (c->pool->closing) {
        set_state(c, C_CLOSED);
        return;
    }
    set_state(c, C_IDLE);
    uv_timer_start(&c->timer, on_backoff,
                   hf_backoff_next_ms(&c->failures, BACKOFF_MIN_MS, BACKOFF_MAX_MS), 0);
}

/* Drop the connection and schedule a new one. A call in flight ends
 * IN_DOUBT (its callback runs from here); queued calls fail from the loop
 * when no connection is left. */
static void conn_reset(struct pg_conn *c, const char *why) {
    if (c->state == C_IDLE || c->state == C_CLOSED) return;
    struct hf_pg_pool *pool = c->pool;
    char reason[512];
    copy_message(reason, sizeof reason, why); /* may point into the PGconn */
    bool was_ready = c->state == C_READY;
    struct pg_call *call = c->call;
    c->call = NULL;
    forget_prepared(c); /* they were the old session's */
    PGconn *pg = c->pg;
    c->pg = NULL;
    uv_timer_stop(&c->timer);
    if (c->watch) watch_retire(c->watch, pg);
    else PQfinish(pg);
    c->watch = NULL;
    c->events = 0;
    c->broken = false;
    if (was_ready && !pool->closing)
        log_warn("postgres: connection %u reset: %s", c->index, reason);
    schedule_reconnect(c);
    if (call) call_finish(call, HF_PG_IN_DOUBT, NULL, NULL, reason, c);
    if (pool->head && pool->ready == 0 && !pool->closing) uv_timer_start(&pool->kick, on_kick, 0, 0);
}

/* The owner's verdict on a set-up result (OK or ERROR); a refusal is
 * logged in the owner's words when it gave some. */
static bool setup_accepted(struct hf_pg_pool *pool, const struct hf_pg_result *r, char *note,
                           size_t notelen) {
    note[0] = '\0';
    bool ok = r->status == HF_PG_OK;
    if (pool->check && !pool->check(pool->ud, r, SETUP_COLUMNS, note, notelen)) ok = false;
    if (ok) return true;
    if (note[0]) report_line(pool, note);
    else report_problem(pool, "session set-up failed",
                        r->status == HF_PG_OK ? "refused by its owner" : r->message);
    return false;
}

static void on_setup(void *privdata, const struct hf_pg_result *r) {
    struct pg_conn *c = privdata;
    struct hf_pg_pool *pool = c->pool;
    if (c->state != C_SETUP || pool->closing) return; /* already reset */
    char note[512];
    if (r->status == HF_PG_ERROR) {
        setup_accepted(pool, r, note, sizeof note); /* never accepted: words the log */
        conn_reset(c, "set-up failed");
        return;
    }
    if (r->status != HF_PG_OK) {
        report_problem(pool, "session set-up failed", r->message);
        conn_reset(c, "set-up failed");
        return;
    }
    const PGresult *res = r->res;
    if (PQntuples(res) != 1 || PQnfields(res) < SETUP_COLUMNS) {
        report_problem(pool, "session set-up failed", "unexpected result");
        conn_reset(c, "set-up failed");
        return;
    }
    if (PQgetvalue(res, 0, 2)[0] == 't') {
        report_problem(pool, "not usable", "the server is a standby in recovery; only a primary is used");
        conn_reset(c, "standby");
        return;
    }
    if (!setup_accepted(pool, r, note, sizeof note)) {
        conn_reset(c, "set-up refused");
        return;
    }
    c->backend_pid = atoi(PQgetvalue(res, 0, 0));
    c->backend_start_us = PQgetisnull(res, 0, 1) ? 0 : strtoll(PQgetvalue(res, 0, 1), NULL, 10);
    if (c->ever_ready) hf_metrics_inc(HF_C_PG_RECONNECTS);
    c->ever_ready = true;
    c->failures = 0;
    pool->problem_logged = false;
    log_info("postgres: connection %u ready (server pid %d%s%s)", c->index, c->backend_pid,
             note[0] ? ", " : "", note);
    set_state(c, C_READY);
    pump(pool);
}

static void connected(struct pg_conn *c) {
    struct hf_pg_pool *pool = c->pool;
    uv_timer_stop(&c->timer);
    if (PQsetnonblocking(c->pg, 1) != 0 || watch_set(c, UV_READABLE, true) != 0) {
        conn_reset(c, "cannot make the connection non-blocking");
        return;
    }
    set_state(c, C_SETUP);
    char timeout[16];
    snprintf(timeout, sizeof timeout, "%u", pool->statement_timeout_ms);
    const char *values[] = {timeout};
    struct pg_call *call = call_new(pool, pool->setup_sql, 1, values, NULL, NULL, on_setup, c);
    if (!call) {
        conn_reset(c, "out of memory");
        return;
    }
    call->run_ms = pool->connect_timeout_ms;
    if (!send_call(c, call)) {
        call_finish(call, HF_PG_NOT_SENT, NULL, NULL, PQerrorMessage(c->pg), c);
    }
}

static void connect_step(struct pg_conn *c) {
    int rc = 0;
    switch (PQconnectPoll(c->pg)) {
    case PGRES_POLLING_READING: rc = watch_set(c, UV_READABLE, true); break;
    case PGRES_POLLING_WRITING: rc = watch_set(c, UV_WRITABLE, true); break;
    case PGRES_POLLING_OK: connected(c); return;
    default:
        report_problem(c->pool, "cannot connect", PQerrorMessage(c->pg));
        conn_reset(c, "connect failed");
        return;
    }
    if (rc != 0) {
        report_problem(c->pool, "cannot watch the socket", uv_strerror(rc));
        conn_reset(c, "cannot watch the socket");
    }
}

static void on_poll(uv_poll_t *h, int status, int events) {
    struct pg_watch *w = h->data;
    struct pg_conn *c = w->conn;
    if (!c) return; /* retired */
    if (c->state == C_CONNECTING) {
        connect_step(c);
        return;
    }
    PGconn *pg = c->pg;
    if (status < 0) {
        /* libuv reports POLLERR (peer gone) this way and stops the handle.
         * What the server sent before it went (its FATAL message, or the
         * whole result) may still be readable: take it, then reset. */
        c->broken = true;
        PQconsumeInput(pg);
        collect(c);
        if (c->pg == pg) conn_reset(c, PQstatus(pg) == CONNECTION_BAD ? PQerrorMessage(pg)
                                                                       : uv_strerror(status));
        return;
    }
    if (c->events & UV_WRITABLE) {
        /* Still sending: libpq wants PQflush on every readiness. */
        int f = PQflush(pg);
        if (f < 0) {
            conn_reset(c, PQerrorMessage(pg));
            return;
        }
        if (f == 0 && watch_set(c, UV_READABLE, false) != 0) {
            conn_reset(c, "cannot watch the socket");
            return;
        }
    }
    if (events & UV_READABLE) {
        int alive = PQconsumeInput(pg);
        if (!alive) c->broken = true;
        /* Even when the connection just failed, results already received
         * (up to ReadyForQuery) are still good: take them first. */
        collect(c);
        if (c->pg != pg) return; /* reset by a callback */
        if (!alive || PQstatus(pg) == CONNECTION_BAD) conn_reset(c, PQerrorMessage(pg));
    }
}

static void on_connect_timeout(uv_timer_t *t) {
    struct pg_conn *c = t->data;
    if (c->state != C_CONNECTING) return;
    report_problem(c->pool, "cannot connect", "connect timed out");
    conn_reset(c, "connect timed out");
}

static void conn_start(struct pg_conn *c) {
    struct hf_pg_pool *pool = c->pool;
    if (pool->closing) return;
    /* Keywords before dbname are defaults the DSN may override; an empty
     * value is ignored by libpq. */
    static const char *const keys[] = {"fallback_application_name", "dbname", NULL};
    const char *values[] = {pool->app_name ? pool->app_name : "", pool->dsn, NULL};
    PGconn *pg = PQconnectStartParams(keys, values, 1);
    if (!pg || PQstatus(pg) == CONNECTION_BAD) {
        report_problem(pool, "cannot connect", pg ? PQerrorMessage(pg) : "out of memory");
        PQfinish(pg);
        schedule_reconnect(c);
        return;
    }
    PQsetNoticeProcessor(pg, on_notice, c);
    c->pg = pg;
    set_state(c, C_CONNECTING);
    uv_timer_start(&c->timer, on_connect_timeout, pool->connect_timeout_ms, 0);
    /* Before the first PQconnectPoll: behave as if it said "writing". */
    int rc = watch_set(c, UV_WRITABLE, true);
    if (rc != 0) {
        report_problem(pool, "cannot watch the socket", uv_strerror(rc));
        conn_reset(c, "cannot watch the socket");
    }
}

/* ---- the pool ---- */

/* strdup that keeps NULL. false: out of memory. */
static bool dup_opt(char **out, const char *s) {
    *out = s ? strdup(s) : NULL;
    return !s || *out;
}

struct hf_pg_pool *hf_pg_pool_create(uv_loop_t *loop, const struct hf_pg_pool_options *opts,
                                     const struct hf_pg_setup *setup, hf_pg_state_fn *on_state,
                                     void *ud) {
    unsigned n = opts->pool_size ? opts->pool_size : 1;
    struct hf_pg_pool *pool = calloc(1, sizeof *pool + n * sizeof(struct pg_conn));
    if (!pool) return NULL;
    const char *columns = setup && setup->columns && *setup->columns ? setup->columns : NULL;
    size_t sql_len = sizeof SQL_SETUP + (columns ? 2 + strlen(columns) : 0);
    pool->setup_sql = malloc(sql_len);
    if (!dup_opt(&pool->dsn, opts->dsn ? opts->dsn : "") ||
        !dup_opt(&pool->app_name, opts->application_name) || !pool->setup_sql) {
        free(pool->dsn);
        free(pool->app_name);
        free(pool->setup_sql);
        free(pool);
        return NULL;
    }
    snprintf(pool->setup_sql, sql_len, "%s%s%s", SQL_SETUP, columns ? ", " : "",
             columns ? columns : "");
    pool->check = setup ? setup->check : NULL;
    pool->loop = loop;
    pool->connect_timeout_ms = opts->connect_timeout_ms;
    pool->statement_timeout_ms = opts->statement_timeout_ms;
    pool->prepare = opts->prepare_statements;
    pool->on_state = on_state;
    pool->ud = ud;
    pool->n = n;
    hf_metrics_gauge_set(HF_G_PG_POOL_SIZE, n);
    hf_metrics_gauge_set(HF_G_PG_CONNECTED, 0);
    for (unsigned i = 0; i < n; i++) {
        struct pg_conn *c = &pool->conns[i];
        c->pool = pool;
        c->index = i;
        uv_timer_init(loop, &c->timer);
        c->timer.data = c;
        pool->open_handles++;
        /* Connect from the loop so that no callback runs inside create(). */
        uv_timer_start(&c->timer, on_backoff, 0, 0);
    }
    uv_timer_init(loop, &pool->kick);
    pool->kick.data = pool;
    pool->open_handles++;
    return pool;
}

static void on_conn_timer_closed(uv_handle_t *h) {
    struct pg_conn *c = h->data;
    struct hf_pg_pool *pool = c->pool;
    pool->open_handles--;
    maybe_free_pool(pool);
}

static void on_pool_timer_closed(uv_handle_t *h) {
    struct hf_pg_pool *pool = h->data;
    pool->open_handles--;
    maybe_free_pool(pool);
}

void hf_pg_pool_close(struct hf_pg_pool *pool) {
    if (!pool || pool->closing) return;
    pool->closing = true;
    fail_queue(pool, "shutting down");
    for (unsigned i = 0; i < pool->n; i++) {
        struct pg_conn *c = &pool->conns[i];
        uv_timer_stop(&c->timer);
        conn_reset(c, "shutting down");
        c->state = C_CLOSED;
        uv_close((uv_handle_t *)&c->timer, on_conn_timer_closed);
    }
    hf_metrics_gauge_set(HF_G_PG_CONNECTED, 0);
    uv_close((uv_handle_t *)&pool->kick, on_pool_timer_closed);
}
