/* ops_confirm.c - Confirm: turning a hold into a PostgreSQL claim ("Confirm"
 * in the design: the part that must never be wrong).
 *
 * validate -> Redis confirm_check (every id still holds this token; the TTL
 * is stretched to the confirm window; gives the fence) -> holdfast.confirm()
 * (one statement, one transaction: idempotency, fence check, claims) ->
 * owner-checked mark (or release) of the hold -> answer from the database's
 * result. A failed mark never changes that answer.
 * Hold gone -> holdfast.confirm_gone(): the key is bound to HOLD_LOST (or
 * CONFIRMED) for good, unless an earlier attempt with it has a result, which
 * is then replayed; either way no later attempt can commit under the key.
 * The statement's result, in doubt or not, is handled by confirm_call.c.
 *
 * The token goes to Redis only: PostgreSQL gets the fence, never the token. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "confirm_call.h"
#include "ops_pool.h"
#include "pools.h"
#include "log.h"
#include "metrics.h"
#include "wait_line.h"
#include "pg_pool.h"
#include "redis_front.h"
#include "validate.h"

static const char SQL_CONFIRM[] =
    "SELECT " HF_OUTCOME_COLUMNS " FROM holdfast.confirm($1, $2, $3::text[], $4::bigint, $5, $6,"
    " $7::bytea, $8::integer)";
static const char SQL_CONFIRM_GONE[] =
    "SELECT " HF_OUTCOME_COLUMNS " FROM holdfast.confirm_gone($1, $2, $3::text[], $4, $5,"
    " $6::bytea, $7, $8, $9::integer)";

static void answer_confirmed(struct claim_call *cc) {
    struct hf_request *req = cc->req;
    if (req->answered) return;
    const struct hf_outcome *o = &cc->out;
    Holdfast__V1__Claim *claims = calloc(o->n ? o->n : 1, sizeof *claims);
    Holdfast__V1__Claim **ptrs = calloc(o->n ? o->n : 1, sizeof *ptrs);
    if (!claims || !ptrs) {
        free(claims);
        free(ptrs);
        hf_request_fail(req, HF_CODE(RESOURCE_EXHAUSTED), NULL, NULL,
                        "out of memory (the confirm is committed; retry with the same "
                        "idempotency key to get its result)");
        return;
    }
    hf_response_msg resp = HOLDFAST__V1__RESPONSE__INIT;
    Holdfast__V1__ConfirmResponse cr = HOLDFAST__V1__CONFIRM_RESPONSE__INIT;
    for (size_t i = 0; i < o->n; i++) {
        holdfast__v1__claim__init(&claims[i]);
        claims[i].resource_id = o->rows[i].resource;
        claims[i].fence = (uint64_t)o->rows[i].fence;
        claims[i].reference = o->rows[i].reference ? o->rows[i].reference : "";
        claims[i].confirmed_at_unix_ms = o->rows[i].at_ms;
        ptrs[i] = &claims[i];
    }
    cr.fence = o->n ? (uint64_t)o->rows[0].fence : cc->fence;
    cr.n_claims = o->n;
    cr.claims = ptrs;
    cr.replayed = o->replayed;
    resp.code = HF_CODE(OK);
    resp.result_case = HOLDFAST__V1__RESPONSE__RESULT_CONFIRM;
    resp.confirm = &cr;
    hf_request_reply(req, &resp);
    free(claims);
    free(ptrs);
}

/* After a commit: swap the holds for the confirmed marker (or delete them),
 * owner-checked by the token. */
static const char *mark_hold(struct claim_call *cc, uint32_t timeout, hf_redis_cb *reply) {
    struct hf_request *req = cc->req;
    char ttl[16];
    snprintf(ttl, sizeof ttl, "%u", cc->t->ns->confirmed_marker_ttl_ms);
    const char *args[] = {cc->token, ttl};
    size_t lens[] = {strlen(cc->token), strlen(ttl)};
    struct hf_keyset *ks = cc->t->keys;
    if (!req->d->redis ||
        hf_front_call(req->d->redis, NULL, HF_FN_MARK_CONFIRMED, ks->count - 1, ks->keys + 1,
                      ks->lens + 1, 2, args, lens, timeout, reply, cc) != 0)
        return "redis not connected";
    return NULL;
}

static size_t holds_to_mark(const struct claim_call *cc) { return cc->t->n_ids; }

static const char *holds_marked(const struct claim_call *cc) {
    return cc->t->ns->confirmed_marker_ttl_ms ? "marked" : "released";
}

/* Sold: every waiter in line for them answers CONFIRMED now (with no
 * marker they are simply free: the head tries). */
static void wake_waiters(struct claim_call *cc, long long n) {
    (void)n;
    hf_wait_wake(cc->req->d, cc->t, cc->t->ns->confirmed_marker_ttl_ms > 0);
}

static const struct claim_kind confirm_kind = {
    .word = "confirm",
    .on_ok = hf_claim_confirmed,
    .answer = answer_confirmed,
    .mark = mark_hold,
    .marks_expected = holds_to_mark,
    .marked = holds_marked,
    .after_marked = wake_waiters,
    .if_update_fails = "the hold expires by itself at the end of the confirm window",
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
    hf_claim_run(cc, SQL_CONFIRM, 8, values, lengths, formats);
}

/* ---- the hold is gone ---- */

/* Bind the key to HOLD_LOST (or CONFIRMED) unless an earlier attempt with
 * it has a result: holdfast.confirm_gone() waits for any attempt that has
 * bound the key and not finished, so this answer is final either way
 * (docs/confirm.md, "Every answer is final"). */
static void run_confirm_gone(struct claim_call *cc, long long state, long long index) {
    struct hf_request *req = cc->req;
    const char *id = index >= 1 && (size_t)index <= cc->t->n_ids ? cc->t->ids[index - 1]
                                                                   : cc->t->ids[0];
    const char *code = state == HF_SC_CONFIRMED ? "CONFIRMED" : "HOLD_LOST";
    cc->gone_why = state == HF_SC_HELD_BY_ANOTHER
                       ? "is held by another token: this hold was lost"
                       : "is no longer held by this token (expired or released)";
    char lock[16];
    snprintf(lock, sizeof lock, "%u", hf_claim_lock_budget(cc));
    const char *values[9] = {cc->t->ns->name, req->partition, cc->ids_array, cc->key,
                             cc->reference,   cc->payload,    code,          id,
                             lock};
    int lengths[9] = {0, 0, 0, 0, 0, (int)cc->payload_len, 0, 0, 0};
    int formats[9] = {0, 0, 0, 0, 0, 1, 0, 0, 0};
    hf_claim_run(cc, SQL_CONFIRM_GONE, 9, values, lengths, formats);
}

/* ---- Redis: is the hold still ours? ---- */

static void on_check_reply(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct claim_call *cc = privdata;
    long long code;
    if (!hf_claim_check_reply(cc, status, r, "confirm_check", &code)) return;
    if (cc->hold_ours) run_confirm(cc);
    else run_confirm_gone(cc, code, hf_reply_int(r, 1));
}

void hf_op_confirm(struct hf_request *req) {
    Holdfast__V1__ConfirmRequest *m = req->msg->confirm;
    if (hf_pool_request(req, m->namespace_, m->n_units)) {
        hf_pool_confirm(req);
        return;
    }
    struct claim_call *cc =
        hf_claim_create(req, &confirm_kind, m->namespace_, m->partition, m->ids, m->n_ids,
                        m->segment);
    if (!cc) return;
    struct hf_target *t = cc->t;
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
    /* A session hold being confirmed is the Confirm's (docs/sessions.md). */
    hf_request_session_pause(req, m->token, true);
    cc->token = m->token;
    cc->fence = fence;
    if (m->payload.len) {
        cc->payload = (const char *)m->payload.data;
        cc->payload_len = m->payload.len;
    }
    char window[16];
    snprintf(window, sizeof window, "%u", t->ns->confirm_window_ms);
    const char *args[] = {cc->token, window};
    size_t lens[] = {strlen(cc->token), strlen(window)};
    struct hf_keyset *ks = t->keys;
    if (!req->d->redis ||
        hf_front_call(req->d->redis, NULL, HF_FN_CONFIRM_CHECK, ks->count - 1, ks->keys + 1,
                        ks->lens + 1, 2, args, lens,
                        req->cfg->redis_command_timeout_ms,
                        on_check_reply, cc) != 0) {
        hf_answer_redis_failure(req, t->ns, HF_REDIS_NOT_SENT, "confirm check");
        hf_claim_done(cc);
    }
}
