/* ops_cancel.c - Cancel: all or nothing, scoped to one order, for every kind
 * of target. The request names the reference its claims were confirmed
 * with; the cancel statement (holdfast.cancel / pool_cancel) moves the
 * claims into the history only when all of them are claimed under it (else
 * NOT_FOUND / CONFLICT naming the item, nothing cancelled), idempotent by
 * key (fences stay, so an older holder stays stale); then Redis follows
 * (seats: the confirmed markers dropped, so the seats can be held again at
 * once; pools: the mirror). That update's failure never changes the answer. */
#include "claim.h"
#include "numfmt.h"
#include "ops_table.h"

static void answer(struct hf_claim *c) {
    c->target.kind->answer_cancelled(c);
    hf_claim_done(c);
}

static void on_updated(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct hf_claim *c = privdata;
    if (status == HF_REDIS_OK && r->type == REDIS_REPLY_INTEGER)
        c->note.after = c->target.kind->after_cancel_done;
    else
        hf_claim_after_failed(c, hf_redis_failure_text(status, r),
                              c->target.kind->after_cancel_fails);
    answer(c);
}

/* The database decided OK: a replay changed nothing, so Redis has nothing
 * to follow. */
static void on_cancelled(struct hf_claim *c) {
    if (c->out.replayed) {
        answer(c);
        return;
    }
    bool answer_first;
    uint32_t timeout = hf_claim_after_timeout(c, &answer_first);
    if (answer_first) c->target.kind->answer_cancelled(c);
    int rc = c->target.kind->after_cancel(c, timeout, on_updated, c);
    if (rc == 0) return;
    if (rc < 0) hf_claim_after_failed(c, "redis not connected", c->target.kind->after_cancel_fails);
    answer(c);
}

void hf_op_cancel(struct hf_request *req) {
    Holdfast__V1__CancelRequest *m = req->msg->cancel;
    struct hf_target_fields f = {
        .ns = m->namespace_, .partition = m->partition, .ids = m->ids, .n_ids = m->n_ids,
        .segment = m->segment, .units = m->units, .n_units = m->n_units};
    struct hf_claim *c = hf_claim_create(req, &f, false);
    if (!c || !hf_claim_check(c, m->idempotency_key, m->reference)) return;
    if (!c->reference[0]) {
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), "reference", NULL,
                        "reference is required: the reference the %s were confirmed with "
                        "(the order this cancel refunds)",
                        c->target.kind->layout == HF_KEYS_POOLS ? "units" : "claims");
        return;
    }
    if (!hf_claim_start(c)) return;
    char lock[21];
    hf_u64_dec(lock, hf_claim_lock_budget(c));
    const char *more[] = {c->key, c->reference, lock};
    hf_claim_run(c, c->target.kind->sql_cancel, more, 3, -1, on_cancelled);
}
