/* hold_grant.c - the steps after Redis grants a hold (see hold_grant.h). */
#include "hold_grant.h"

#include <stdio.h>
#include <string.h>

#include "config.h"
#include "log.h"
#include "metrics.h"
#include "numfmt.h"
#include "ops_common.h"
#include "policy.h"
#include "wake_hub.h"

bool hf_grant_prepare(struct hf_grant *g) {
    if (hf_token_random(g->random) == 0) return true;
    hf_request_fail(g->req, HF_CODE(INTERNAL), NULL, NULL, "getrandom failed");
    return false;
}

static void answer_withdrawn(struct hf_grant *g) {
    /* Answered only now, so a retry never meets its own withdrawn grant. */
    if (g->why_withdrawn)
        hf_request_fail(g->req, HF_CODE(UNAVAILABLE), NULL, NULL, "%s", g->why_withdrawn);
    g->done(g);
}

static void on_undo_reply(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct hf_grant *g = privdata;
    if (status != HF_REDIS_OK || r->type == REDIS_REPLY_ERROR)
        log_warn("hold cid=%s: could not withdraw an unusable grant; it expires in %u ms",
                 g->req->correlation_id, g->ttl);
    else /* given back: the line tries now */
        hf_wake_lines(g->req->d->wakes, hf_keys_lines(g->t->keys), false);
    answer_withdrawn(g);
}

/* Give back a grant nobody will use, owner-checked by the release function. */
static void withdraw(struct hf_grant *g) {
    struct hf_argv args;
    hf_argv_init(&args);
    hf_argv_add_str(&args, g->token);
    if (hf_target_call(g->req, g->t, HF_STEP_RELEASE, NULL, &args, on_undo_reply, g) != 0) {
        log_warn("hold cid=%s: could not withdraw an unusable grant; it expires in %u ms",
                 g->req->correlation_id, g->ttl);
        answer_withdrawn(g);
    }
}

static void answer(struct hf_grant *g) {
    if (g->keep && !g->keep(g)) {
        withdraw(g);
        return;
    }
    Holdfast__V1__HoldResponse hr = HOLDFAST__V1__HOLD_RESPONSE__INIT;
    hr.token = g->token;
    hr.fence = g->fence;
    hr.ttl_ms = g->ttl;
    HF_REPLY_OK(g->req, hold, HOLD, &hr);
    g->done(g);
}

static void on_wait_reply(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct hf_grant *g = privdata;
    struct hf_request *req = g->req;
    long long acks = status == HF_REDIS_OK && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    if (acks >= (long long)g->t->ns->min_replicas_ack && !req->answered) {
        answer(g);
        return;
    }
    if (!req->answered) {
        hf_metrics_inc(HF_C_REPLICA_ACK_FAILURES);
        snprintf(g->why_withdrawn_buf, sizeof g->why_withdrawn_buf,
                 "only %lld of %u replicas acknowledged the hold; withdrawn", acks < 0 ? 0 : acks,
                 g->t->ns->min_replicas_ack);
        g->why_withdrawn = g->why_withdrawn_buf;
    } else {
        hf_metrics_inc(HF_C_LATE_GRANTS_RELEASED);
    }
    withdraw(g);
}

void hf_grant_granted(struct hf_grant *g, const redisReply *r) {
    struct hf_request *req = g->req;
    const redisReply *fence = r->elements > 1 ? r->element[1] : NULL;
    size_t token_len = 0;
    if (fence && fence->type == REDIS_REPLY_STRING && fence->len > 0 && fence->len <= 20) {
        /* "<fence>.<random>": sizeof token covers 20 + 1 + the random part. */
        memcpy(g->token, fence->str, fence->len);
        g->token[fence->len] = '.';
        memcpy(g->token + fence->len + 1, g->random, HF_TOKEN_RANDOM_CHARS + 1);
        token_len = fence->len + 1 + HF_TOKEN_RANDOM_CHARS;
    }
    if (!token_len || !hf_token_parse(g->token, token_len, &g->fence)) {
        hf_request_fail(req, HF_CODE(INTERNAL), NULL, NULL, "hold script returned a bad fence");
        g->done(g);
        return;
    }
    hf_request_note_token(req, g->token, token_len);
    if (req->answered || hf_request_client_gone(req)) {
        /* The deadline passed while Redis was granting, or the client has
         * gone: nobody will ever know this token, so give it back now. */
        hf_metrics_inc(HF_C_LATE_GRANTS_RELEASED);
        if (!req->answered) g->why_withdrawn = "the client disconnected before the grant";
        withdraw(g);
        return;
    }
    uint32_t replicas = g->t->ns->min_replicas_ack;
    if (replicas == 0) {
        answer(g);
        return;
    }
    /* WAIT covers the writes of this connection, which made the grant. */
    char n[21], ms[21];
    hf_u64_dec(n, replicas);
    hf_u64_dec(ms, hf_request_backend_timeout(req, g->t->ns->replicas_ack_timeout_ms));
    const char *argv[] = {"WAIT", n, ms};
    uint32_t budget = hf_request_remaining_ms(req) + g->t->ns->replicas_ack_timeout_ms;
    if (hf_redis_conn_command(g->conn, 3, argv, NULL, budget, on_wait_reply, g) != 0) {
        hf_metrics_inc(HF_C_REPLICA_ACK_FAILURES);
        g->why_withdrawn = "redis connection lost before replicas acknowledged; withdrawn";
        withdraw(g);
    }
}

bool hf_grant_admitted(struct hf_request *req, const struct hf_target *t, uint32_t *ttl) {
    struct hf_hold_facts facts = {
        .op = "hold",
        .partition = req->partition,
        .ids = t->labels,
        .n_ids = t->n,
        .ttl_ms = *ttl,
        .correlation_id = req->correlation_id,
        .uid = req->peer_uid,
        .gid = req->peer_gid,
    };
    return hf_admitted(req, t->ns, &facts, ttl);
}
