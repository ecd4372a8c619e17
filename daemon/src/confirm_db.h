/* confirm_db.h - the confirm code's database side: the PostgreSQL pool set
 * up for holdfast (schema version checked on every connection), the
 * periodic pruning of idempotency records, and what a SQLSTATE means to
 * Confirm and Cancel. */
#ifndef HF_CONFIRM_DB_H
#define HF_CONFIRM_DB_H

#include <uv.h>

#include "config.h"
#include "pg_pool.h"

enum hf_sqlstate_kind {
    HF_SQLSTATE_OTHER,     /* the statement itself was refused: not worth retrying */
    HF_SQLSTATE_DEADLINE,  /* lock_timeout or statement_timeout ended it */
    HF_SQLSTATE_RETRYABLE, /* transient (serialization, resources, server state,
                              connection): the same request may succeed later */
    HF_SQLSTATE_SCHEMA,    /* schema holdfast missing, or not usable by this role */
};

/* What an op on the database adds to its request's log line: db= (commit,
 * rollback, replay, lost, unknown, not_sent) and after= (what happened in
 * Redis after the decision). NULL: not said. */
struct hf_db_note {
    const char *db;
    const char *after;
};
/* " db=... after=..." (what is set) into out; its length. */
size_t hf_db_note_format(const struct hf_db_note *n, char *out, size_t cap);

/* The kind of a five-character SQLSTATE; OTHER for NULL or anything else. */
enum hf_sqlstate_kind hf_sqlstate_classify(const char *sqlstate);

/* The statement text a Confirm or Cancel sends: `sql` itself, or, for a
 * request that carried a traceparent (validated by hf_traceparent_parse:
 * lowercase hex and dashes only), `sql` behind a leading SQL comment that
 * holds traceparent='00-...' (written into buf), so PostgreSQL's statement
 * log and pg_stat_activity show the caller's trace. The plain text runs as a
 * prepared statement of its session; a traced one cannot (its text differs
 * per request), so tracing costs a parse; pg_stat_statements ignores
 * comments. `sql` alone when buf is too small. */
const char *hf_sql_traced(const char *traceparent, const char *sql, char *buf, size_t buflen);

/* The pool for postgres.* of `cfg` (read now; the settings are start-only):
 * a connection is ready once holdfast.schema_version() is at least
 * hf_pg_schema_required(). Also prunes idempotency records older than
 * postgres.idempotency_retention_s, about a second after start, then every
 * 30-90 s. on_state(ud, ready) as for hf_pg_pool_create(). NULL on OOM. */
struct hf_pg_pool *hf_confirm_db_create(uv_loop_t *loop, const struct hf_config *cfg,
                                        hf_pg_state_fn *on_state, void *ud);

/* Stop pruning and close the pool (hf_pg_pool_close()). Only for a pool made
 * by hf_confirm_db_create(); NULL is a no-op. */
void hf_confirm_db_close(struct hf_pg_pool *pool);

#endif
