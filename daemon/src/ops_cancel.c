/* ops_cancel.c - Cancel: all or nothing, scoped to one order. The request
 * names the reference its claims were confirmed with; holdfast.cancel()
 * moves the claims into the history only when every id is claimed under it
 * (else NOT_FOUND / CONFLICT naming the id, nothing cancelled), idempotent
 * by key (fences stay, so an older holder stays stale); then the confirmed
 * markers in Redis are dropped so the resources can be held again at once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "confirm_call.h"
#include "ops_pool.h"
#include "pools.h"
#include "redis_front.h"

static const char SQL_CANCEL[] =
    "SELECT " HF_OUTCOME_COLUMNS " FROM holdfast.cancel($1, $2, $3::text[], $4, $5, $6::integer)";

static void answer_cancelled(struct claim_call *cc) {
    hf_response_msg resp = HOLDFAST__V1__RESPONSE__INIT;
    Holdfast__V1__CancelResponse cr = HOLDFAST__V1__CANCEL_RESPONSE__INIT;
    cr.cancelled = (uint32_t)cc->out.n;
    cr.replayed = cc->out.replayed;
    resp.code = HF_CODE(OK);
    resp.result_case = HOLDFAST__V1__RESPONSE__RESULT_CANCEL;
    resp.cancel = &cr;
    hf_request_reply(cc->req, &resp);
}

static void on_clear_reply(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct claim_call *cc = privdata;
    if (status == HF_REDIS_OK && r->type == REDIS_REPLY_INTEGER)
        cc->req->after_result = "cleared";
    else
        hf_claim_after_failed(cc, hf_redis_failure_text(status, r));
    answer_cancelled(cc);
    hf_claim_done(cc);
}

/* After a committed cancel: drop the confirmed markers of the cancelled ids
 * so the resources can be held again at once. */
static void clear_markers(struct claim_call *cc) {
    struct hf_request *req = cc->req;
    char **ids = calloc(cc->out.n, sizeof *ids);
    size_t n = 0;
    for (size_t i = 0; ids && i < cc->out.n; i++)
        for (size_t j = 0; j < cc->t->n_ids; j++)
            if (strcmp(cc->out.rows[i].resource, cc->t->ids[j]) == 0) ids[n++] = cc->t->ids[j];
    cc->clear_keys = ids && n ? hf_keyset_build(cc->t->ns->name, req->partition, ids, n) : NULL;
    free(ids);
    bool answer_first;
    uint32_t timeout = hf_claim_after_timeout(cc, &answer_first);
    if (answer_first) answer_cancelled(cc);
    struct hf_keyset *ks = cc->clear_keys;
    if (!ks || !req->d->redis ||
        hf_front_call(req->d->redis, NULL, HF_FN_CANCEL_CLEAR, ks->count - 1, ks->keys + 1,
                        ks->lens + 1, 0, NULL, NULL, timeout, on_clear_reply, cc) != 0) {
        hf_claim_after_failed(cc, ks ? "redis not connected" : "out of memory");
        answer_cancelled(cc);
        hf_claim_done(cc);
    }
}

static void on_ok(struct claim_call *cc) {
    if (!cc->out.replayed && cc->out.n > 0) {
        clear_markers(cc);
        return;
    }
    answer_cancelled(cc);
    hf_claim_done(cc);
}

static const struct claim_kind cancel_kind = {
    .word = "cancel",
    .on_ok = on_ok,
    .if_update_fails = "the confirmed markers stay until they expire",
};

static void run_cancel(struct claim_call *cc) {
    struct hf_request *req = cc->req;
    char lock[16];
    snprintf(lock, sizeof lock, "%u", hf_claim_lock_budget(cc));
    const char *values[6] = {cc->t->ns->name, req->partition, cc->ids_array,
                             cc->key,         cc->reference,  lock};
    hf_claim_run(cc, SQL_CANCEL, 6, values, NULL, NULL);
}

void hf_op_cancel(struct hf_request *req) {
    Holdfast__V1__CancelRequest *m = req->msg->cancel;
    if (hf_pool_request(req, m->namespace_, m->n_units)) {
        hf_pool_cancel(req);
        return;
    }
    struct claim_call *cc =
        hf_claim_create(req, &cancel_kind, m->namespace_, m->partition, m->ids, m->n_ids,
                        m->segment);
    if (!cc) return;
    if (!hf_claim_check(cc, m->idempotency_key, m->reference)) return;
    if (!cc->reference[0]) {
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), "reference", NULL,
                        "reference is required: the reference the claims were confirmed with "
                        "(the order this cancel refunds)");
        return;
    }
    if (!hf_claim_start(cc)) return;
    run_cancel(cc);
}
