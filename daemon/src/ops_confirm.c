/* ops_confirm.c - Confirm: turning a hold into a PostgreSQL claim, for every
 * kind of target (docs/confirm.md: the part that must never be wrong):
 *
 *   check  Redis confirm_check: the target still holds exactly this token
 *          (and, for units, these counts); its TTL becomes the confirm
 *          window; the fence comes back.
 *   claim  one statement, one transaction: idempotency, fence check, claims
 *          (holdfast.confirm / pool_confirm). The hold gone instead: the
 *          gone statement binds the key to HOLD_LOST (or CONFIRMED) for good,
 *          unless an earlier attempt with it has a result, which is replayed.
 *   mark   after a commit (or its replay) while the hold was ours: the
 *          owner-checked Redis update (the confirmed marker, or the units
 *          sold); its failure never changes the answer.
 *   wake   waiters for what it marked answer now.
 *   answer from the database's result.
 *
 * The token goes to Redis only: PostgreSQL gets the fence, never the token. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "claim.h"
#include "log.h"
#include "metrics.h"
#include "numfmt.h"
#include "ops_common.h"
#include "wake_hub.h"

/* ---- wake, answer ---- */

static void answer(struct hf_claim *c) {
    c->target.kind->answer_confirmed(c);
    hf_claim_done(c);
}

/* Sold: every waiter in line for it answers CONFIRMED now (with no marker
 * the seats are simply free: the heads try). */
static void wake(struct hf_claim *c) {
    if (!c->target.kind->wakes_on_sale) return;
    hf_wake_lines(c->req->d->wakes, hf_keys_lines(c->target.keys),
                  c->target.ns->confirmed_marker_ttl_ms > 0);
}

/* ---- mark ---- */

static void on_marked(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct hf_claim *c = privdata;
    const struct hf_kind *k = c->target.kind;
    if (status == HF_REDIS_OK && r->type == REDIS_REPLY_INTEGER) {
        size_t expected = k->marks_expected(c);
        if (r->integer > 0) wake(c);
        if (r->integer == (long long)expected) {
            c->note.after = k->marked(c);
        } else {
            /* Not ours any more (expired past the confirm window, or lost in
             * a failover): PostgreSQL holds the sale all the same. */
            c->note.after = r->integer == 0 ? "hold_gone" : "partly_marked";
            log_warn("confirm cid=%s: committed, but only %lld of %zu %s were still this "
                     "token's to mark", c->req->correlation_id, r->integer, expected,
                     k->name);
        }
    } else {
        hf_metrics_inc(HF_C_RELEASE_AFTER_CONFIRM_FAILED);
        hf_claim_after_failed(c, hf_redis_failure_text(status, r), k->after_mark_fails);
    }
    answer(c);
}

/* The database decided OK (new, replayed or settled after a doubt). */
static void on_claimed(struct hf_claim *c) {
    if (!c->hold_ours) { /* the gone path answered with an earlier attempt's sale */
        answer(c);
        return;
    }
    bool answer_first;
    uint32_t timeout = hf_claim_after_timeout(c, &answer_first);
    if (answer_first) c->target.kind->answer_confirmed(c);
    if (c->target.kind->mark(c, timeout, on_marked, c) == 0) return;
    hf_metrics_inc(HF_C_RELEASE_AFTER_CONFIRM_FAILED);
    hf_claim_after_failed(c, "redis not connected", c->target.kind->after_mark_fails);
    answer(c);
}

/* ---- claim ---- */

static void run_confirm(struct hf_claim *c) {
    char fence[21], lock[21];
    hf_u64_dec(fence, c->fence);
    hf_u64_dec(lock, hf_claim_lock_budget(c));
    const char *more[] = {fence, c->key, c->reference, c->payload, lock};
    hf_claim_run(c, c->target.kind->sql_confirm, more, 5, 3, on_claimed);
}

/* Bind the key to its final answer unless an earlier attempt with it has a
 * result: the gone statement waits for any attempt that has bound the key
 * and not finished, so this answer is final either way (docs/confirm.md,
 * "Every answer is final"). */
static void run_gone(struct hf_claim *c, long long code, long long index) {
    const struct hf_kind *k = c->target.kind;
    c->gone_why = code == HF_SC_HELD_BY_ANOTHER
                      ? "is held by another token: this hold was lost"
                  : k->layout == HF_KEYS_POOLS
                      ? "holds no units of this token any more (expired or released)"
                      : "is no longer held by this token (expired or released)";
    char lock[21];
    hf_u64_dec(lock, hf_claim_lock_budget(c));
    const char *more[8] = {c->key, c->reference, c->payload};
    size_t n = 3 + k->gone_params(&c->target, code, index, more + 3);
    more[n++] = lock;
    hf_claim_run(c, k->sql_gone, more, (int)n, 2, on_claimed);
}

/* ---- check ---- */

static void on_checked(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct hf_claim *c = privdata;
    struct hf_request *req = c->req;
    long long code;
    if (status != HF_REDIS_OK) {
        hf_answer_redis_failure(req, c->target.ns, status, "confirm check");
    } else if (!hf_reply_code(r, &code)) {
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL,
                        "redis refused the confirm_check script");
    } else if (req->answered) {
        /* The deadline passed meanwhile: start nothing nobody waits for. */
    } else if (code == HF_SC_GRANTED && hf_reply_int(r, 1) != (long long)c->fence) {
        hf_request_fail(req, HF_CODE(INTERNAL), NULL, NULL,
                        "confirm_check returned a fence that does not match the token");
    } else if (code == HF_SC_GRANTED) {
        c->hold_ours = true;
        run_confirm(c);
        return;
    } else if (c->target.kind->is_gone(code)) {
        run_gone(c, code, hf_reply_int(r, 1));
        return;
    } else {
        /* The request is wrong (other units than the token holds): nothing
         * is decided, the key stays free. */
        hf_target_answer_reply(req, &c->target, r);
    }
    hf_claim_done(c);
}

/* The token's shape and fence, and the payload's size. */
static bool request_ok(struct hf_request *req, const Holdfast__V1__ConfirmRequest *m,
                       uint64_t *fence) {
    if (!hf_token_check(req, m->token, true)) return false;
    if (m->payload.len > HF_MAX_PAYLOAD_BYTES) {
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), "payload", NULL,
                        "payload is %zu bytes; at most %d", m->payload.len, HF_MAX_PAYLOAD_BYTES);
        return false;
    }
    *fence = 0;
    hf_token_parse(m->token, strlen(m->token), fence);
    if (*fence == 0 || *fence > INT64_MAX) {
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), "token", NULL,
                        "the token's fence is out of range");
        return false;
    }
    return true;
}

void hf_op_confirm(struct hf_request *req) {
    Holdfast__V1__ConfirmRequest *m = req->msg->confirm;
    struct hf_target_fields f = {
        .ns = m->namespace_, .partition = m->partition, .ids = m->ids, .n_ids = m->n_ids,
        .segment = m->segment, .units = m->units, .n_units = m->n_units};
    struct hf_claim *c = hf_claim_create(req, &f, true);
    uint64_t fence;
    if (!c || !request_ok(req, m, &fence)) return;
    if (!hf_claim_check(c, m->idempotency_key, m->reference) || !hf_claim_start(c)) return;
    /* A session hold being confirmed is the Confirm's (docs/sessions.md). */
    hf_request_session_pause(req, m->token, true);
    c->token = m->token;
    c->fence = fence;
    if (m->payload.len) {
        c->payload = (const char *)m->payload.data;
        c->payload_len = m->payload.len;
    }
    struct hf_argv args;
    hf_argv_init(&args);
    hf_argv_add_str(&args, c->token);
    hf_argv_add_u64(&args, c->target.ns->confirm_window_ms);
    hf_argv_add_strs(&args, c->target.count_args);
    int rc = hf_target_call(req, &c->target, HF_STEP_CONFIRM_CHECK, NULL, &args, on_checked, c);
    hf_argv_free(&args);
    if (rc != 0) {
        hf_answer_redis_failure(req, c->target.ns, HF_REDIS_NOT_SENT, "confirm check");
        hf_claim_done(c);
    }
}
