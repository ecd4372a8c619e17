/* confirm_db.c - the confirm code's database side: what holdfast adds to
 * the generic PostgreSQL pool (the schema-version check in each
 * connection's set-up round trip, the pruning of idempotency records on its
 * own timer) and the one table of what a SQLSTATE means to us. */
#include "confirm_db.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pg_migrate.h"

#define PRUNE_FIRST_MS 1000
#define PRUNE_INTERVAL_MS 60000
#define PRUNE_AGAIN_MS 1000 /* a whole batch went: more are waiting */
#define PRUNE_BATCH "1000"

static const char SQL_PRUNE[] = "SELECT holdfast.prune_idempotency($1::integer, $2::integer)";

/* ---- SQLSTATEs ---- */

/* Exact codes first: they take precedence over their class. */
static const struct {
    const char *code; /* five characters, or a two-character class */
    enum hf_sqlstate_kind kind;
} SQLSTATES[] = {
    {"55P03", HF_SQLSTATE_DEADLINE},  /* lock_not_available: our lock_timeout */
    {"57014", HF_SQLSTATE_DEADLINE},  /* query_canceled: statement_timeout */
    {"42883", HF_SQLSTATE_SCHEMA},    /* undefined_function */
    {"3F000", HF_SQLSTATE_SCHEMA},    /* invalid_schema_name */
    {"42P01", HF_SQLSTATE_SCHEMA},    /* undefined_table */
    {"42501", HF_SQLSTATE_SCHEMA},    /* insufficient_privilege: the role's grants */
    {"08", HF_SQLSTATE_RETRYABLE},    /* connection exception */
    {"40", HF_SQLSTATE_RETRYABLE},    /* transaction rollback: serialization, deadlock */
    {"53", HF_SQLSTATE_RETRYABLE},    /* insufficient resources */
    {"55", HF_SQLSTATE_RETRYABLE},    /* object not in prerequisite state */
    {"57", HF_SQLSTATE_RETRYABLE},    /* operator intervention (shutdown, cancel) */
    {"58", HF_SQLSTATE_RETRYABLE},    /* system error (I/O) */
};

enum hf_sqlstate_kind hf_sqlstate_classify(const char *sqlstate) {
    if (!sqlstate || strlen(sqlstate) != 5) return HF_SQLSTATE_OTHER;
    for (size_t i = 0; i < sizeof SQLSTATES / sizeof SQLSTATES[0]; i++)
        if (strncmp(sqlstate, SQLSTATES[i].code, strlen(SQLSTATES[i].code)) == 0)
            return SQLSTATES[i].kind;
    return HF_SQLSTATE_OTHER;
}

size_t hf_db_note_format(const struct hf_db_note *n, char *out, size_t cap) {
    size_t len = 0;
    const char *names[2] = {" db=", " after="};
    const char *values[2] = {n->db, n->after};
    for (int i = 0; i < 2; i++) {
        if (!values[i]) continue;
        size_t nl = strlen(names[i]), vl = strlen(values[i]);
        if (len + nl + vl >= cap) break;
        memcpy(out + len, names[i], nl);
        memcpy(out + len + nl, values[i], vl);
        len += nl + vl;
    }
    if (cap) out[len] = '\0';
    return len;
}

/* ---- trace context ---- */

const char *hf_sql_traced(const char *traceparent, const char *sql, char *buf, size_t buflen) {
    if (!traceparent || !*traceparent) return sql;
    int n = snprintf(buf, buflen, "/* traceparent='%s' */ %s", traceparent, sql);
    return n > 0 && (size_t)n < buflen ? buf : sql;
}

/* ---- the pool's owner ---- */

struct confirm_db {
    struct hf_pg_pool *pool;
    hf_pg_state_fn *on_state; /* the daemon's */
    void *ud;
    uv_timer_t prune;
    uint32_t retention_s;
    uint32_t statement_timeout_ms;
    int required;             /* the schema version this binary needs */
    bool prune_in_flight;
    bool closing;
};

/* The set-up round trip's last column is holdfast.schema_version(). */
static bool check_schema(void *ud, const struct hf_pg_result *r, int first_column, char *say,
                         size_t saylen) {
    struct confirm_db *db = ud;
    if (r->status != HF_PG_OK) {
        if (r->status == HF_PG_ERROR && hf_sqlstate_classify(r->sqlstate) == HF_SQLSTATE_SCHEMA)
            snprintf(say, saylen,
                     "schema holdfast is missing or not usable (run holdfastd --migrate, and "
                     "check the role's grants): %s", r->message);
        return false;
    }
    if (PQnfields(r->res) <= first_column || PQgetisnull(r->res, 0, first_column)) {
        snprintf(say, saylen, "session set-up failed: no schema version");
        return false;
    }
    int version = atoi(PQgetvalue(r->res, 0, first_column));
    if (version < db->required) {
        snprintf(say, saylen,
                 "run holdfastd --migrate: schema holdfast is at version %d, this daemon needs %d",
                 version, db->required);
        return false;
    }
    snprintf(say, saylen, "schema version %d", version);
    return true;
}

static void on_state(void *ud, unsigned ready) {
    struct confirm_db *db = ud;
    if (db->on_state) db->on_state(db->ud, ready);
}

/* ---- pruning ---- */

static uint64_t jittered(uint64_t ms) { return ms / 2 + uv_hrtime() % ms; }

static void on_prune_timer(uv_timer_t *t);

static void on_pruned(void *privdata, const struct hf_pg_result *r) {
    struct confirm_db *db = privdata;
    db->prune_in_flight = false;
    if (db->closing) return;
    uint64_t next = jittered(PRUNE_INTERVAL_MS);
    if (r->status == HF_PG_OK && PQntuples(r->res) == 1) {
        long n = atol(PQgetvalue(r->res, 0, 0));
        if (n > 0)
            log_info("postgres: pruned %ld idempotency records older than %u s", n,
                     db->retention_s);
        if (n >= atol(PRUNE_BATCH)) next = PRUNE_AGAIN_MS;
    } else {
        log_warn("postgres: pruning idempotency records failed (%s): %s",
                 hf_pg_status_name(r->status), r->message);
    }
    uv_timer_start(&db->prune, on_prune_timer, next, 0);
}

static void on_prune_timer(uv_timer_t *t) {
    struct confirm_db *db = t->data;
    if (db->closing || db->prune_in_flight) return;
    char retention[16];
    snprintf(retention, sizeof retention, "%u", db->retention_s);
    const char *values[] = {retention, PRUNE_BATCH};
    if (hf_pg_query(db->pool, SQL_PRUNE, 2, values, NULL, NULL, db->statement_timeout_ms + 1000,
                    db->statement_timeout_ms + 1000,
                    on_pruned, db) == 0) {
        db->prune_in_flight = true;
        return;
    }
    /* Not connected yet (or any more): try again soon, not in a minute. */
    uv_timer_start(&db->prune, on_prune_timer,
                   hf_pg_pool_ready_count(db->pool) ? jittered(PRUNE_INTERVAL_MS) : PRUNE_FIRST_MS,
                   0);
}

/* ---- create and close ---- */

struct hf_pg_pool *hf_confirm_db_create(uv_loop_t *loop, const struct hf_config *cfg,
                                        hf_pg_state_fn *on_state_fn, void *ud) {
    struct confirm_db *db = calloc(1, sizeof *db);
    if (!db) return NULL;
    db->on_state = on_state_fn;
    db->ud = ud;
    db->retention_s = cfg->pg_idempotency_retention_s;
    db->statement_timeout_ms = cfg->pg_statement_timeout_ms;
    db->required = hf_pg_schema_required();
    const struct hf_pg_pool_options opts = {
        .dsn = cfg->pg_dsn,
        .application_name = "holdfastd",
        .pool_size = cfg->pg_pool_size,
        .connect_timeout_ms = cfg->pg_connect_timeout_ms,
        .statement_timeout_ms = cfg->pg_statement_timeout_ms,
        .prepare_statements = cfg->pg_prepare_statements,
    };
    static const struct hf_pg_setup setup = {
        .columns = "holdfast.schema_version()",
        .check = check_schema,
    };
    db->pool = hf_pg_pool_create(loop, &opts, &setup, on_state, db);
    if (!db->pool) {
        free(db);
        return NULL;
    }
    uv_timer_init(loop, &db->prune);
    db->prune.data = db;
    uv_timer_start(&db->prune, on_prune_timer, PRUNE_FIRST_MS, 0);
    return db->pool;
}

static void on_prune_closed(uv_handle_t *h) { free(h->data); }

void hf_confirm_db_close(struct hf_pg_pool *pool) {
    struct confirm_db *db = hf_pg_pool_owner(pool);
    if (!db || db->closing) return;
    db->closing = true;
    uv_timer_stop(&db->prune);
    /* A prune in flight ends (NOT_SENT or IN_DOUBT) inside this call, while
     * db is still there to receive it. */
    hf_pg_pool_close(pool);
    uv_close((uv_handle_t *)&db->prune, on_prune_closed);
}
