/* ops_capacity.c - SetCapacity and GetCapacity: the capacity of a pool, or
 * the partition's default, in PostgreSQL (the system of record; docs/
 * pools.md), mirrored into Redis after it is read or written.
 *
 * SetCapacity is one call of holdfast.set_capacity(): it raises or lowers
 * the capacity under the pool's row lock and refuses to go below what is
 * sold (for the default: below what any pool that follows it has sold). It
 * sets an absolute value, so a retry after an unknown outcome is safe and
 * needs no idempotency key. GetCapacity reads holdfast.pool_state(). Both
 * then write the state into the Redis mirror (versioned, so it never goes
 * back to an older state); a failure there is logged, never an error. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "confirm_db.h"
#include "confirm_outcome.h"
#include "log.h"
#include "numfmt.h"
#include "ops_table.h"
#include "pool_mirror.h"
#include "redis_front.h"
#include "validate.h"

static const char SQL_SET_CAPACITY[] =
    "SELECT code, pool, own, capacity, sold, version FROM holdfast.set_capacity($1, $2, $3,"
    " $4::bigint, $5::integer)";

/* As confirm_call.c: a sent statement's connection is dropped only this
 * long after the server's own statement_timeout. */
#define PG_GRACE_MS 1000
#define LOCK_MARGIN_MS 50
/* The mirror write after the database must end before the deadline. */
#define AFTER_RESERVE_MS 10

/* The op's context (both ops). */
struct capacity_call {
    struct hf_target target;
    struct hf_request *req;
    struct hf_db_note note;   /* the log line's db= and after= */
    bool is_default;          /* SetCapacity of the partition's default */
    struct hf_pool_row *rows; /* GetCapacity: per pool; SetCapacity: the pool */
    struct hf_pool_row def;
    char pool_name[HF_NAME_MAX + 2]; /* SetCapacity: the pool, "*" for the default */
    char *one_pool[1];
    /* SetCapacity's answer */
    char code[16];
    char answer_pool[HF_NAME_MAX + 1];
};

static void free_capacity_call(void *ctx) {
    struct capacity_call *cc = ctx;
    hf_target_clear(&cc->target);
    free(cc->rows);
}

static size_t capacity_log_fields(const void *ctx, char *out, size_t cap) {
    return hf_db_note_format(&((const struct capacity_call *)ctx)->note, out, cap);
}

/* The context of both ops, logging its database outcome. */
static struct capacity_call *capacity_call_create(struct hf_request *req) {
    struct capacity_call *cc = hf_request_context(req, sizeof *cc, free_capacity_call);
    if (!cc) return NULL;
    cc->req = req;
    hf_request_log_fields(req, capacity_log_fields);
    return cc;
}

static uint32_t after_timeout(struct hf_request *req, bool *answer_first) {
    uint32_t timeout = req->cfg->redis_command_timeout_ms;
    uint32_t left = hf_request_remaining_ms(req);
    *answer_first = req->answered || left <= 2 * AFTER_RESERVE_MS;
    if (!*answer_first && left - AFTER_RESERVE_MS < timeout) timeout = left - AFTER_RESERVE_MS;
    return timeout;
}

static void answer_pg_failure(struct hf_request *req, const struct hf_pg_result *r,
                              const char *what) {
    switch (r->status) {
    case HF_PG_NOT_SENT:
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL, "postgres: %s; nothing was sent",
                        r->message);
        return;
    case HF_PG_IN_DOUBT:
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL,
                        "postgres: %s; the outcome of %s is unknown (GetCapacity shows the "
                        "capacity in effect; setting it again is safe)", r->message, what);
        return;
    default:
        break;
    }
    switch (hf_sqlstate_classify(r->sqlstate)) {
    case HF_SQLSTATE_DEADLINE:
        hf_request_fail(req, HF_CODE(DEADLINE_EXCEEDED), NULL, NULL,
                        "the database did not finish in time (%s); nothing was changed",
                        r->message);
        break;
    case HF_SQLSTATE_RETRYABLE:
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL,
                        "postgres: %s (SQLSTATE %s); nothing was changed", r->message,
                        r->sqlstate);
        break;
    case HF_SQLSTATE_SCHEMA:
        log_error("%s cid=%s: postgres schema or privileges are not usable: %s (SQLSTATE %s); "
                  "run holdfastd --migrate and check the role's grants",
                  req->op->name, req->correlation_id, r->message, r->sqlstate);
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL,
                        "postgres schema holdfast is missing or not usable (SQLSTATE %s)",
                        r->sqlstate);
        break;
    case HF_SQLSTATE_OTHER:
        log_error("%s cid=%s: postgres refused the statement: %s (SQLSTATE %s)", req->op->name,
                  req->correlation_id, r->message, r->sqlstate);
        hf_request_fail(req, HF_CODE(INTERNAL), NULL, NULL,
                        "the database refused %s (SQLSTATE %s)", what, r->sqlstate);
        break;
    }
}

static bool pg_usable(struct hf_request *req, struct capacity_call *cc) {
    if (!req->d->pg) {
        hf_request_fail(req, HF_CODE(FAILED_PRECONDITION), NULL, NULL,
                        "%s needs PostgreSQL (postgres.dsn), which this daemon does not have "
                        "configured", req->op->name);
        return false;
    }
    if (!req->d->pg_ready) {
        cc->note.db = "not_sent";
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL, "postgres is not connected");
        return false;
    }
    return true;
}

static void fill_capacity(Holdfast__V1__PoolCapacity *pc, const char *pool,
                          const struct hf_pool_row *r, const struct hf_pool_row *def) {
    long long cap = r->own ? r->capacity : def ? def->capacity : 0;
    pc->pool = (char *)pool;
    pc->capacity = cap > 0 ? (uint64_t)cap : 0;
    pc->sold = r->sold > 0 ? (uint64_t)r->sold : 0;
    pc->partition_default = !r->own;
}

/* ---- SetCapacity ---- */

static void answer_set(struct capacity_call *cc) {
    struct hf_request *req = cc->req;
    if (req->answered) return;
    Holdfast__V1__SetCapacityResponse sr = HOLDFAST__V1__SET_CAPACITY_RESPONSE__INIT;
    Holdfast__V1__PoolCapacity pc = HOLDFAST__V1__POOL_CAPACITY__INIT;
    const struct hf_pool_row *r = cc->is_default ? &cc->def : &cc->rows[0];
    fill_capacity(&pc, cc->is_default ? "" : cc->answer_pool, r, NULL);
    if (cc->is_default) pc.partition_default = true;
    sr.pool = &pc;
    HF_REPLY_OK(req, set_capacity, SET_CAPACITY, &sr);
}

static void on_set_mirrored(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct capacity_call *cc = privdata;
    if (status == HF_REDIS_OK && r->type == REDIS_REPLY_INTEGER) {
        cc->note.after = "mirrored";
    } else {
        cc->note.after = "failed";
        log_warn("set_capacity cid=%s: committed, but the redis mirror was not updated (%s); it "
                 "catches up at the pool's next change or load", cc->req->correlation_id,
                 hf_redis_failure_text(status, r));
    }
    answer_set(cc);
    hf_request_op_done(cc->req);
}

static void on_set_result(void *privdata, const struct hf_pg_result *r) {
    struct capacity_call *cc = privdata;
    struct hf_request *req = cc->req;
    if (r->status != HF_PG_OK) {
        cc->note.db = r->status == HF_PG_IN_DOUBT ? "unknown"
                          : r->status == HF_PG_NOT_SENT ? "not_sent" : "rollback";
        answer_pg_failure(req, r, "the capacity change");
        hf_request_op_done(req);
        return;
    }
    const PGresult *res = r->res;
    if (PQntuples(res) != 1 || PQnfields(res) < 6) {
        cc->note.db = "unknown";
        hf_request_fail(req, HF_CODE(INTERNAL), NULL, NULL, "unexpected result from the database");
        hf_request_op_done(req);
        return;
    }
    snprintf(cc->code, sizeof cc->code, "%s", PQgetvalue(res, 0, 0));
    snprintf(cc->answer_pool, sizeof cc->answer_pool, "%s", PQgetvalue(res, 0, 1));
    struct hf_pool_row row = {
        .known = true,
        .own = PQgetvalue(res, 0, 2)[0] == 't',
        .capacity = PQgetisnull(res, 0, 3) ? 0 : strtoll(PQgetvalue(res, 0, 3), NULL, 10),
        .sold = strtoll(PQgetvalue(res, 0, 4), NULL, 10),
        .version = strtoll(PQgetvalue(res, 0, 5), NULL, 10),
    };
    if (strcmp(cc->code, "OK") != 0) {
        cc->note.db = "rollback";
        const char *pool = cc->answer_pool;
        if (cc->is_default)
            hf_request_fail(req, HF_CODE(FAILED_PRECONDITION), "capacity", pool,
                            "pool '%s' follows the partition's default and has %lld units sold; "
                            "a default of %" PRIu64 " is below that; nothing was changed", pool,
                            row.sold, req->msg->set_capacity->capacity);
        else
            hf_request_fail(req, HF_CODE(FAILED_PRECONDITION), "capacity", pool,
                            "pool '%s' has %lld units sold; a capacity of %" PRIu64
                            " is below that; nothing was changed", pool, row.sold,
                            req->msg->set_capacity->capacity);
        hf_request_op_done(req);
        return;
    }
    cc->note.db = "commit";
    if (cc->is_default) cc->def = row;
    else cc->rows[0] = row;
    bool answer_first;
    uint32_t timeout = after_timeout(req, &answer_first);
    if (answer_first) answer_set(cc);
    if (hf_pool_mirror_write(req, &cc->target, NULL, cc->is_default ? NULL : cc->rows,
                             cc->is_default ? &cc->def : NULL, timeout, on_set_mirrored,
                             cc) != 0) {
        cc->note.after = "failed";
        log_warn("set_capacity cid=%s: committed, but redis is not connected to mirror it",
                 req->correlation_id);
        answer_set(cc);
        hf_request_op_done(req);
    }
}

void hf_op_set_capacity(struct hf_request *req) {
    Holdfast__V1__SetCapacityRequest *m = req->msg->set_capacity;
    struct capacity_call *cc = capacity_call_create(req);
    if (!cc) return;
    cc->is_default = m->partition_default;
    const char *pool = m->pool ? m->pool : "";
    if (cc->is_default && *pool) {
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), "pool", NULL,
                        "pool must be empty with partition_default");
        return;
    }
    if (!cc->is_default && !*pool) {
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), "pool", NULL,
                        "pool is required (or partition_default)");
        return;
    }
    if (!cc->is_default && !hf_valid_name(pool, strlen(pool))) {
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), "pool", NULL,
                        "pool names must be 1-128 bytes of [A-Za-z0-9._-]");
        return;
    }
    snprintf(cc->pool_name, sizeof cc->pool_name, "%s", pool);
    cc->one_pool[0] = cc->pool_name;
    struct hf_target_fields f = {.ns = m->namespace_, .partition = m->partition,
                                 .pools = cc->one_pool, .n_pools = cc->is_default ? 0 : 1};
    if (!hf_target_parse(req, &cc->target, &f, HF_NEED_POOL_NAMES)) return;
    if (m->capacity > HF_POOL_MAX_CAPACITY) {
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), "capacity", NULL,
                        "capacity must be 0..%llu", HF_POOL_MAX_CAPACITY);
        return;
    }
    if (!pg_usable(req, cc)) return;
    cc->rows = calloc(1, sizeof *cc->rows);
    if (!cc->rows) {
        hf_request_fail(req, HF_CODE(RESOURCE_EXHAUSTED), NULL, NULL, "out of memory");
        return;
    }
    char capacity[21], lock[21];
    hf_u64_dec(capacity, m->capacity);
    uint32_t left = hf_request_remaining_ms(req);
    hf_u64_dec(lock, left > 2 * LOCK_MARGIN_MS ? left - LOCK_MARGIN_MS : 1);
    const char *values[5] = {cc->target.ns->name, req->partition,
                             cc->is_default ? "*" : cc->pool_name, capacity, lock};
    hf_request_op_start(req);
    int rc = hf_pg_query(req->d->pg, SQL_SET_CAPACITY, 5, values, NULL, NULL, left,
                         req->cfg->pg_statement_timeout_ms + PG_GRACE_MS, on_set_result, cc);
    if (rc != 0) {
        cc->note.db = "not_sent";
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL, "postgres %s",
                        rc == -ENOTCONN ? "is not connected" : strerror(-rc));
        hf_request_op_done(req);
    }
}

/* ---- GetCapacity ---- */

static void answer_get(struct capacity_call *cc) {
    struct hf_request *req = cc->req;
    if (req->answered) return;
    const struct hf_target *p = &cc->target;
    Holdfast__V1__PoolCapacity **items;
    void *mem = hf_request_items(req, p->n, sizeof **items, (void ***)&items, "out of memory");
    if (!mem) return;
    for (size_t i = 0; i < p->n; i++) {
        holdfast__v1__pool_capacity__init(items[i]);
        fill_capacity(items[i], p->items[i], &cc->rows[i], &cc->def);
    }
    Holdfast__V1__GetCapacityResponse gr = HOLDFAST__V1__GET_CAPACITY_RESPONSE__INIT;
    gr.n_pools = p->n;
    gr.pools = items;
    gr.default_capacity = cc->def.capacity > 0 ? (uint64_t)cc->def.capacity : 0;
    HF_REPLY_OK(req, get_capacity, GET_CAPACITY, &gr);
    free(mem);
}

static void on_get_mirrored(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct capacity_call *cc = privdata;
    cc->note.after =
        status == HF_REDIS_OK && r->type == REDIS_REPLY_INTEGER ? "mirrored" : "failed";
    answer_get(cc);
    hf_request_op_done(cc->req);
}

static void on_get_result(void *privdata, const struct hf_pg_result *r) {
    struct capacity_call *cc = privdata;
    struct hf_request *req = cc->req;
    if (r->status != HF_PG_OK) {
        answer_pg_failure(req, r, "the capacity look-up");
        hf_request_op_done(req);
        return;
    }
    if (!hf_pool_state_parse(r->res, cc->target.n, cc->rows, &cc->def)) {
        hf_request_fail(req, HF_CODE(INTERNAL), NULL, NULL, "unexpected result from the database");
        hf_request_op_done(req);
        return;
    }
    /* What PostgreSQL says is also what the mirror should say. */
    bool answer_first;
    uint32_t timeout = after_timeout(req, &answer_first);
    if (answer_first) answer_get(cc);
    if (hf_pool_mirror_write(req, &cc->target, NULL, cc->rows, &cc->def, timeout, on_get_mirrored,
                             cc) != 0) {
        cc->note.after = "failed";
        answer_get(cc);
        hf_request_op_done(req);
    }
}

void hf_op_get_capacity(struct hf_request *req) {
    Holdfast__V1__GetCapacityRequest *m = req->msg->get_capacity;
    struct capacity_call *cc = capacity_call_create(req);
    if (!cc) return;
    struct hf_target_fields f = {.ns = m->namespace_, .partition = m->partition,
                                 .pools = m->pools, .n_pools = m->n_pools};
    if (!hf_target_parse(req, &cc->target, &f, HF_NEED_POOL_NAMES)) return;
    if (!pg_usable(req, cc)) return;
    cc->rows = calloc(cc->target.n + 1, sizeof *cc->rows);
    char *names = cc->rows ? hf_pg_text_array(cc->target.items, cc->target.n) : NULL;
    if (!names) {
        hf_request_fail(req, HF_CODE(RESOURCE_EXHAUSTED), NULL, NULL, "out of memory");
        return;
    }
    const char *values[3] = {cc->target.ns->name, req->partition, names};
    uint32_t left = hf_request_remaining_ms(req);
    hf_request_op_start(req);
    int rc = hf_pg_query(req->d->pg, HF_SQL_POOL_STATE, 3, values, NULL, NULL, left,
                         req->cfg->pg_statement_timeout_ms + PG_GRACE_MS, on_get_result, cc);
    free(names);
    if (rc != 0) {
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL, "postgres %s",
                        rc == -ENOTCONN ? "is not connected" : strerror(-rc));
        hf_request_op_done(req);
    }
}
