/* confirm_resolve.c - in-doubt Confirm and Cancel statements, settled. */
#include "confirm_resolve.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "confirm_db.h"
#include "log.h"
#include "numfmt.h"
#include "metrics.h"

#define RESOLVE_RETRY_MS 50
/* How long resolve() waits for the old server process to end. */
#define RESOLVE_WAIT_MS 1000

static const char SQL_RESOLVE[] =
    "SELECT " HF_OUTCOME_COLUMNS " FROM holdfast.resolve($1, $2, $3, $4, $5::text[], $6,"
    " $7::bytea, $8::integer, $9::bigint, $10::integer)";

static void attempt(void *arg);

static void finish(struct hf_resolve *rs, enum hf_resolved how, const char *why) {
    rs->done(rs->arg, how, why);
}

static void retry(struct hf_resolve *rs, const char *why) {
    snprintf(rs->why, sizeof rs->why, "%s", why);
    if (uv_now(rs->req->d->loop) + RESOLVE_RETRY_MS >= rs->until) {
        finish(rs, HF_RESOLVED_UNKNOWN, rs->why);
        return;
    }
    hf_request_timer_start(rs->req, RESOLVE_RETRY_MS, attempt, rs);
}

static void on_result(void *privdata, const struct hf_pg_result *r) {
    struct hf_resolve *rs = privdata;
    struct hf_request *req = rs->req;
    if (r->status != HF_PG_OK) {
        retry(rs, r->message);
        return;
    }
    if (!hf_outcome_parse(r->res, rs->out)) {
        retry(rs, "unexpected result from holdfast.resolve()");
        return;
    }
    switch (rs->out->code) {
    case HF_OUT_ABSENT:
        /* The server process that had it is gone and the key is not there. */
        log_info("%s cid=%s: in-doubt outcome settled: it did not commit", rs->op,
                 req->correlation_id);
        finish(rs, HF_RESOLVED_ROLLED_BACK, NULL);
        return;
    case HF_OUT_UNKNOWN:
        retry(rs, "the server process that ran it has not ended yet");
        return;
    default:
        log_info("%s cid=%s: in-doubt outcome settled from the idempotency record: %s", rs->op,
                 req->correlation_id, rs->out->code == HF_OUT_OK ? "committed" : "rolled back");
        rs->out->replayed = false;
        finish(rs, HF_RESOLVED_RECORDED, NULL);
        return;
    }
}

static void attempt(void *arg) {
    struct hf_resolve *rs = arg;
    struct hf_request *req = rs->req;
    uint64_t now = uv_now(req->d->loop);
    if (now >= rs->until) {
        finish(rs, HF_RESOLVED_UNKNOWN, rs->why[0] ? rs->why : "no time left");
        return;
    }
    uint32_t left = (uint32_t)(rs->until - now);
    uint32_t wait = left / 2 ? left / 2 : 1;
    if (wait > RESOLVE_WAIT_MS) wait = RESOLVE_WAIT_MS;
    char pid[21], start[21], wait_s[21];
    /* pid 0 = the statement's server process is not known: never final. */
    int backend = rs->backend_start_us ? rs->backend_pid : 0;
    hf_u64_dec(pid, backend > 0 ? (uint64_t)backend : 0);
    hf_u64_dec(start, rs->backend_start_us > 0 ? (uint64_t)rs->backend_start_us : 0);
    hf_u64_dec(wait_s, wait);
    const char *values[10] = {rs->op,      rs->ns,        rs->key, rs->partition, rs->ids_array,
                              rs->reference, rs->payload, pid,     start,         wait_s};
    int lengths[10] = {0, 0, 0, 0, 0, 0, (int)rs->payload_len, 0, 0, 0};
    int formats[10] = {0, 0, 0, 0, 0, 0, 1, 0, 0, 0};
    char traced[sizeof SQL_RESOLVE + HF_TRACEPARENT_LEN + 32];
    const char *sql = hf_sql_traced(req->traceparent, SQL_RESOLVE, traced, sizeof traced);
    int rc = hf_pg_query(req->d->pg, sql, 10, values, lengths, formats, left, left,
                         on_result, rs);
    if (rc == -ESHUTDOWN || (rc != 0 && !req->d->pg)) finish(rs, HF_RESOLVED_UNKNOWN, "shutting down");
    else if (rc != 0) retry(rs, "postgres is not connected");
}

void hf_resolve_start(struct hf_resolve *rs, const struct hf_pg_result *r) {
    struct hf_request *req = rs->req;
    hf_metrics_inc(HF_C_CONFIRM_IN_DOUBT);
    rs->backend_pid = r->backend_pid;
    rs->backend_start_us = r->backend_start_us;
    snprintf(rs->why, sizeof rs->why, "%s", r->message);
    /* After the answer (the deadline passed) it is still worth knowing: a
     * committed confirm still gets its hold marked. */
    rs->until = req->answered ? uv_now(req->d->loop) + req->cfg->pg_statement_timeout_ms
                              : req->deadline_ms;
    log_warn("%s cid=%s: outcome unknown (%s); asking the database on another connection",
             rs->op, req->correlation_id, r->message);
    attempt(rs);
}
