/* ops_pool_claim.c - Confirm and Cancel of units (namespaces of kind
 * "pools", docs/pools.md), on the flow Confirm and Cancel of ids share
 * (confirm_call.c): the same checks, idempotency, in-doubt resolution and
 * finality; the statements are holdfast.pool_confirm(), pool_confirm_gone()
 * and pool_cancel().
 *
 * Confirm: Redis hf1_pool_confirm_check (the token holds exactly these units
 * in every pool; their expiry becomes the confirm window; the fence) ->
 * holdfast.pool_confirm() (sold + units <= capacity under the pools' row
 * locks, one claim per hold) -> hf1_pool_mark_sold (the token's units leave
 * the holds, the pools' new state goes into the mirror) -> the answer.
 * Cancel: holdfast.pool_cancel() -> the pools' new state into the mirror.
 * A failed Redis update after a commit never changes the answer. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "confirm_call.h"
#include "log.h"
#include "metrics.h"
#include "ops_pool.h"
#include "redis_front.h"
#include "validate.h"

static const char SQL_POOL_CONFIRM[] =
    "SELECT code, replayed, resource, fence, reference, at_ms, own, capacity, sold, version"
    " FROM holdfast.pool_confirm($1, $2, $3::text[], $4::bigint, $5, $6, $7::bytea,"
    " $8::integer)";
static const char SQL_POOL_CONFIRM_GONE[] =
    "SELECT " HF_OUTCOME_COLUMNS " FROM holdfast.pool_confirm_gone($1, $2, $3::text[], $4, $5,"
    " $6::bytea, $7, $8::integer)";
static const char SQL_POOL_CANCEL[] =
    "SELECT code, replayed, resource, fence, reference, at_ms, own, capacity, sold, version"
    " FROM holdfast.pool_cancel($1, $2, $3::text[], $4, $5, $6::integer)";

/* The request's units, for the answers (a replay answers the same units:
 * they are part of the request the key is bound to). */
static Holdfast__V1__PoolTake **units_of(const struct hf_pool_target *p,
                                        Holdfast__V1__PoolTake *items) {
    Holdfast__V1__PoolTake **ptrs = calloc(p->n ? p->n : 1, sizeof *ptrs);
    if (!ptrs) return NULL;
    for (size_t i = 0; i < p->n; i++) {
        holdfast__v1__pool_take__init(&items[i]);
        items[i].pool = p->names[i];
        items[i].count = p->counts[i];
        ptrs[i] = &items[i];
    }
    return ptrs;
}

/* The pools' state after the call, from the result rows, in the target's
 * order (rows of a replay carry none: known stays false). */
static struct hf_pool_row *rows_state(const struct claim_call *cc) {
    const struct hf_pool_target *p = cc->pools;
    struct hf_pool_row *rows = calloc(p->n ? p->n : 1, sizeof *rows);
    if (!rows) return NULL;
    for (size_t i = 0; i < cc->out.n; i++) {
        const struct hf_outcome_row *o = &cc->out.rows[i];
        if (!o->has_state) continue;
        for (size_t j = 0; j < p->n; j++) {
            if (strcmp(o->resource, p->names[j]) != 0) continue;
            rows[j] = (struct hf_pool_row){.known = true, .own = o->own, .capacity = o->capacity,
                                           .sold = o->sold, .version = o->version};
        }
    }
    return rows;
}

/* ---- Confirm ---- */

static void answer_confirmed(struct claim_call *cc) {
    struct hf_request *req = cc->req;
    if (req->answered) return;
    const struct hf_pool_target *p = cc->pools;
    Holdfast__V1__PoolTake *items = calloc(p->n ? p->n : 1, sizeof *items);
    Holdfast__V1__PoolTake **ptrs = items ? units_of(p, items) : NULL;
    if (!ptrs) {
        free(items);
        hf_request_fail(req, HF_CODE(RESOURCE_EXHAUSTED), NULL, NULL,
                        "out of memory (the confirm is committed; retry with the same "
                        "idempotency key to get its result)");
        return;
    }
    hf_response_msg resp = HOLDFAST__V1__RESPONSE__INIT;
    Holdfast__V1__ConfirmResponse cr = HOLDFAST__V1__CONFIRM_RESPONSE__INIT;
    const struct hf_outcome *o = &cc->out;
    cr.fence = o->n && o->rows[0].fence > 0 ? (uint64_t)o->rows[0].fence : cc->fence;
    cr.replayed = o->replayed;
    cr.n_units = p->n;
    cr.units = ptrs;
    cr.confirmed_at_unix_ms = o->n ? o->rows[0].at_ms : 0;
    resp.code = HF_CODE(OK);
    resp.result_case = HOLDFAST__V1__RESPONSE__RESULT_CONFIRM;
    resp.confirm = &cr;
    hf_request_reply(req, &resp);
    free(items);
    free(ptrs);
}

/* After a commit (or its replay): the token's units leave the holds (sold,
 * or given back when this answers an earlier sale), and the pools' state
 * from PostgreSQL goes into the mirror. */
static const char *mark_sold(struct claim_call *cc, uint32_t timeout, hf_redis_cb *reply) {
    struct hf_pool_row *rows = rows_state(cc);
    if (!rows) return "out of memory";
    int rc = hf_pool_mirror_write(cc->req, cc->pools, cc->token, rows, NULL, timeout, reply, cc);
    free(rows);
    return rc == 0 ? NULL : "redis not connected";
}

static size_t pools_to_mark(const struct claim_call *cc) { return cc->pools->n; }

static const char *pools_marked(const struct claim_call *cc) {
    return cc->out.replayed ? "released" : "sold";
}

static const struct claim_kind pool_confirm_kind = {
    .word = "pool_confirm",
    .on_ok = hf_claim_confirmed,
    .answer = answer_confirmed,
    .mark = mark_sold,
    .marks_expected = pools_to_mark,
    .marked = pools_marked,
    .if_update_fails = "the hold's units return to the pool at the end of the confirm window "
                       "and the mirror catches up at the pool's next change",
    .units = true,
};

static void run_confirm(struct claim_call *cc) {
    struct hf_request *req = cc->req;
    char fence[24], lock[16];
    snprintf(fence, sizeof fence, "%" PRIu64, cc->fence);
    snprintf(lock, sizeof lock, "%u", hf_claim_lock_budget(cc));
    const char *values[8] = {cc->t->ns->name, req->partition, cc->ids_array, fence,
                             cc->key,         cc->reference,  cc->payload,   lock};
    int lengths[8] = {0, 0, 0, 0, 0, 0, (int)cc->payload_len, 0};
    int formats[8] = {0, 0, 0, 0, 0, 0, 1, 0};
    hf_claim_run(cc, SQL_POOL_CONFIRM, 8, values, lengths, formats);
}

/* The hold is gone: the key answers HOLD_LOST for good, unless an attempt
 * with it has a result (docs/confirm.md, "Every answer is final"). */
static void run_confirm_gone(struct claim_call *cc, long long index) {
    struct hf_request *req = cc->req;
    const struct hf_pool_target *p = cc->pools;
    const char *pool = index >= 1 && (size_t)index <= p->n ? p->names[index - 1] : p->names[0];
    cc->gone_why = "holds no units of this token any more (expired or released)";
    char lock[16];
    snprintf(lock, sizeof lock, "%u", hf_claim_lock_budget(cc));
    const char *values[8] = {cc->t->ns->name, req->partition, cc->ids_array, cc->key,
                             cc->reference,   cc->payload,    pool,          lock};
    int lengths[8] = {0, 0, 0, 0, 0, (int)cc->payload_len, 0, 0};
    int formats[8] = {0, 0, 0, 0, 0, 1, 0, 0};
    hf_claim_run(cc, SQL_POOL_CONFIRM_GONE, 8, values, lengths, formats);
}

static void on_check_reply(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct claim_call *cc = privdata;
    struct hf_request *req = cc->req;
    long long code;
    if (!hf_claim_check_reply(cc, status, r, "pool confirm_check", &code)) return;
    if (cc->hold_ours) {
        run_confirm(cc);
        return;
    }
    if (code == HF_SC_NOT_HELD) {
        run_confirm_gone(cc, hf_reply_int(r, 1));
        return;
    }
    /* Other units than the token holds: the request is wrong, nothing is
     * decided (the key stays free). */
    hf_pool_answer_code(req, cc->pools, code, hf_reply_int(r, 1), hf_reply_int(r, 2));
    hf_claim_done(cc);
}

void hf_pool_confirm(struct hf_request *req) {
    Holdfast__V1__ConfirmRequest *m = req->msg->confirm;
    struct claim_call *cc = hf_claim_create_pools(req, &pool_confirm_kind, m->namespace_,
                                                  m->partition, m->n_ids, m->units, m->n_units);
    if (!cc) return;
    if (!hf_token_check(req, m->token, true)) return;
    if (m->payload.len > HF_MAX_PAYLOAD_BYTES) {
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), "payload", NULL,
                        "payload is %zu bytes; at most %d", m->payload.len, HF_MAX_PAYLOAD_BYTES);
        return;
    }
    uint64_t fence = 0;
    hf_token_parse(m->token, strlen(m->token), &fence);
    if (fence == 0 || fence > INT64_MAX) {
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), "token", NULL,
                        "the token's fence is out of range");
        return;
    }
    if (!hf_claim_check(cc, m->idempotency_key, m->reference)) return;
    if (!hf_claim_start(cc)) return;
    cc->token = m->token;
    cc->fence = fence;
    if (m->payload.len) {
        cc->payload = (const char *)m->payload.data;
        cc->payload_len = m->payload.len;
    }
    const struct hf_pool_target *p = cc->pools;
    char window[16];
    snprintf(window, sizeof window, "%u", cc->t->ns->confirm_window_ms);
    size_t nargs = 2 + p->n;
    const char **args = calloc(nargs, sizeof *args);
    size_t *lens = calloc(nargs, sizeof *lens);
    int rc = -1;
    if (args && lens) {
        args[0] = cc->token;
        args[1] = window;
        for (size_t i = 0; i < p->n; i++) args[2 + i] = p->count_s[i];
        for (size_t i = 0; i < nargs; i++) lens[i] = strlen(args[i]);
        size_t nkeys;
        const size_t *keylens;
        const char *const *keys = hf_pool_pair_keys(p, &nkeys, &keylens);
        rc = req->d->redis ? hf_front_call(req->d->redis, NULL, HF_FN_POOL_CONFIRM_CHECK, nkeys,
                                           keys, keylens, nargs, args, lens,
                                           req->cfg->redis_command_timeout_ms, on_check_reply, cc)
                           : -1;
    }
    free(args);
    free(lens);
    if (rc != 0) {
        hf_answer_redis_failure(req, cc->t->ns, HF_REDIS_NOT_SENT, "confirm check");
        hf_claim_done(cc);
    }
}

/* ---- Cancel ---- */

static void answer_cancelled(struct claim_call *cc) {
    struct hf_request *req = cc->req;
    if (req->answered) return;
    const struct hf_pool_target *p = cc->pools;
    Holdfast__V1__PoolTake *items = calloc(p->n ? p->n : 1, sizeof *items);
    Holdfast__V1__PoolTake **ptrs = items ? units_of(p, items) : NULL;
    if (!ptrs) {
        free(items);
        hf_request_fail(req, HF_CODE(RESOURCE_EXHAUSTED), NULL, NULL,
                        "out of memory (the cancel is committed; retry with the same "
                        "idempotency key to get its result)");
        return;
    }
    uint32_t total = 0;
    for (size_t i = 0; i < p->n; i++) total += p->counts[i];
    hf_response_msg resp = HOLDFAST__V1__RESPONSE__INIT;
    Holdfast__V1__CancelResponse cr = HOLDFAST__V1__CANCEL_RESPONSE__INIT;
    cr.cancelled = total;
    cr.replayed = cc->out.replayed;
    cr.n_units = p->n;
    cr.units = ptrs;
    resp.code = HF_CODE(OK);
    resp.result_case = HOLDFAST__V1__RESPONSE__RESULT_CANCEL;
    resp.cancel = &cr;
    hf_request_reply(req, &resp);
    free(items);
    free(ptrs);
}

static void on_mirrored(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct claim_call *cc = privdata;
    if (status == HF_REDIS_OK && r->type == REDIS_REPLY_INTEGER)
        cc->req->after_result = "mirrored";
    else
        hf_claim_after_failed(cc, hf_redis_failure_text(status, r));
    answer_cancelled(cc);
    hf_claim_done(cc);
}

static void on_cancel_ok(struct claim_call *cc) {
    struct hf_request *req = cc->req;
    bool answer_first;
    uint32_t timeout = hf_claim_after_timeout(cc, &answer_first);
    if (cc->out.replayed) {
        answer_cancelled(cc);
        hf_claim_done(cc);
        return;
    }
    if (answer_first) answer_cancelled(cc);
    struct hf_pool_row *rows = rows_state(cc);
    int rc = rows ? hf_pool_mirror_write(req, cc->pools, NULL, rows, NULL, timeout, on_mirrored,
                                         cc)
                  : -1;
    free(rows);
    if (rc != 0) {
        hf_claim_after_failed(cc, rows ? "redis not connected" : "out of memory");
        answer_cancelled(cc);
        hf_claim_done(cc);
    }
}

static const struct claim_kind pool_cancel_kind = {
    .word = "pool_cancel",
    .on_ok = on_cancel_ok,
    .if_update_fails = "the mirror catches up at the pool's next change",
    .units = true,
};

void hf_pool_cancel(struct hf_request *req) {
    Holdfast__V1__CancelRequest *m = req->msg->cancel;
    struct claim_call *cc = hf_claim_create_pools(req, &pool_cancel_kind, m->namespace_,
                                                  m->partition, m->n_ids, m->units, m->n_units);
    if (!cc) return;
    if (!hf_claim_check(cc, m->idempotency_key, m->reference)) return;
    if (!cc->reference[0]) {
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), "reference", NULL,
                        "reference is required: the reference the units were confirmed with "
                        "(the order this cancel refunds)");
        return;
    }
    if (!hf_claim_start(cc)) return;
    char lock[16];
    snprintf(lock, sizeof lock, "%u", hf_claim_lock_budget(cc));
    const char *values[6] = {cc->t->ns->name, req->partition, cc->ids_array,
                             cc->key,         cc->reference,  lock};
    hf_claim_run(cc, SQL_POOL_CANCEL, 6, values, NULL, NULL);
}
