/* ops_hold.c - Hold: all-or-nothing grant of 1..N ids under a fresh token,
 * optionally confirmed by replicas (WAIT) before it counts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "metrics.h"
#include "numfmt.h"
#include "ops_common.h"
#include "ops_pool.h"
#include "pools.h"
#include "policy.h"
#include "redis_front.h"
#include "session.h"
#include "wait_line.h"


/* The op's context. */
struct hold_call {
    struct hf_target target;
    struct hf_request *req;
    struct hf_target *t;        /* &target */
    struct hf_redis_conn *conn; /* the connection whose script made the grant */
    uint32_t ttl;
    uint64_t fence;
    char random[HF_TOKEN_RANDOM_CHARS + 1];
    char token[HF_TOKEN_MAX_LEN + 1];
    char why_withdrawn_buf[160];
    const char *why_withdrawn; /* answer to give once the grant is withdrawn */
    bool session;              /* bound to the connection (docs/sessions.md) */
    uint64_t sent_at;          /* loop time the hold script was sent */
    char ttl_s[24];
    struct hf_wait *wait;      /* wait_ms: waiting in line (wait_line.c) */
};

static void finish(struct hold_call *hc) { hf_request_op_done(hc->req); }

static void free_hold_call(void *ctx) {
    struct hold_call *hc = ctx;
    hf_wait_free(hc->wait);
    hf_target_clear(&hc->target);
}

static void on_undo_reply(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct hold_call *hc = privdata;
    if (status != HF_REDIS_OK || r->type == REDIS_REPLY_ERROR)
        log_warn("hold cid=%s: could not withdraw an unusable grant; it expires in %u ms",
                 hc->req->correlation_id, hc->ttl);
    else
        hf_wait_wake(hc->req->d, hc->t, false); /* whoever waits in line tries now */
    /* Answered only now, so a retry never meets its own withdrawn grant. */
    if (hc->why_withdrawn)
        hf_request_fail(hc->req, HF_CODE(UNAVAILABLE), NULL, NULL, "%s", hc->why_withdrawn);
    finish(hc);
}

/* Give back a grant nobody will use (deadline passed, replicas missing). */
static void withdraw_grant(struct hold_call *hc) {
    const char *args[] = {hc->token};
    size_t lens[] = {strlen(hc->token)};
    struct hf_keyset *ks = hc->t->keys;
    if (hf_front_call(hc->req->d->redis, NULL, HF_FN_RELEASE, ks->count - 1, ks->keys + 1,
                        ks->lens + 1, 1, args, lens, hc->req->cfg->redis_command_timeout_ms,
                        on_undo_reply, hc) != 0) {
        log_warn("hold cid=%s: could not withdraw an unusable grant; it expires in %u ms",
                 hc->req->correlation_id, hc->ttl);
        if (hc->why_withdrawn)
            hf_request_fail(hc->req, HF_CODE(UNAVAILABLE), NULL, NULL, "%s", hc->why_withdrawn);
        finish(hc);
    }
}

static void answer_granted(struct hold_call *hc) {
    hf_response_msg resp = HOLDFAST__V1__RESPONSE__INIT;
    Holdfast__V1__HoldResponse hr = HOLDFAST__V1__HOLD_RESPONSE__INIT;
    hr.token = hc->token;
    hr.fence = hc->fence;
    hr.ttl_ms = hc->ttl;
    resp.code = HF_CODE(OK);
    resp.result_case = HOLDFAST__V1__RESPONSE__RESULT_HOLD;
    resp.hold = &hr;
    hf_request_reply(hc->req, &resp);
}

/* A session hold joins its connection's session before it is answered, so a
 * Release or Confirm that follows finds it there. */
static bool keep_in_session(struct hold_call *hc) {
    struct hf_request *req = hc->req;
    struct hf_session *s = hf_request_session(req, true);
    struct hf_keyset *ks = hc->t->keys;
    struct hf_session_hold h = {
        .ns = hc->t->ns->name,
        .partition = req->partition,
        .keys = ks->keys + 1,
        .key_lens = ks->lens + 1,
        .n_keys = ks->count - 1,
        .token = hc->token,
        .fence = hc->fence,
        .ttl_ms = hc->ttl,
        .sent_at_ms = hc->sent_at,
    };
    if (s && hf_session_add(s, &h)) return true;
    if (hf_request_client_gone(req)) {
        hf_metrics_inc(HF_C_LATE_GRANTS_RELEASED);
        hc->why_withdrawn = "the client disconnected before the grant";
    } else {
        hc->why_withdrawn = "out of memory keeping the session hold; withdrawn";
    }
    return false;
}

static void grant(struct hold_call *hc) {
    if (hc->session && !keep_in_session(hc)) {
        withdraw_grant(hc);
        return;
    }
    answer_granted(hc);
    finish(hc);
}

static void on_wait_reply(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct hold_call *hc = privdata;
    struct hf_request *req = hc->req;
    long long acks = status == HF_REDIS_OK && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    if (acks >= (long long)hc->t->ns->min_replicas_ack && !req->answered) {
        grant(hc);
        return;
    }
    if (!req->answered) {
        hf_metrics_inc(HF_C_REPLICA_ACK_FAILURES);
        snprintf(hc->why_withdrawn_buf, sizeof hc->why_withdrawn_buf,
                 "only %lld of %u replicas acknowledged the hold; withdrawn", acks < 0 ? 0 : acks,
                 hc->t->ns->min_replicas_ack);
        hc->why_withdrawn = hc->why_withdrawn_buf;
    } else {
        hf_metrics_inc(HF_C_LATE_GRANTS_RELEASED);
    }
    withdraw_grant(hc);
}

static void on_hold_reply(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct hold_call *hc = privdata;
    struct hf_request *req = hc->req;
    long long code;
    if (status != HF_REDIS_OK) {
        hf_answer_redis_failure(req, hc->t->ns, status, "hold");
        finish(hc);
        return;
    }
    if (!hf_reply_code(r, &code)) {
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL, "redis refused the hold script");
        finish(hc);
        return;
    }
    if (code != HF_SC_GRANTED) {
        hf_answer_script_code(req, hc->t, code, hf_reply_int(r, 1));
        finish(hc);
        return;
    }
    const redisReply *fence = r->elements > 1 ? r->element[1] : NULL;
    size_t token_len = 0;
    if (fence && fence->type == REDIS_REPLY_STRING && fence->len <= 20) {
        /* "<fence>.<random>": sizeof token covers 20 + 1 + the random part. */
        memcpy(hc->token, fence->str, fence->len);
        hc->token[fence->len] = '.';
        memcpy(hc->token + fence->len + 1, hc->random, HF_TOKEN_RANDOM_CHARS + 1);
        token_len = fence->len + 1 + HF_TOKEN_RANDOM_CHARS;
    }
    if (!token_len || !hf_token_parse(hc->token, token_len, &hc->fence)) {
        hf_request_fail(req, HF_CODE(INTERNAL), NULL, NULL, "hold script returned a bad fence");
        finish(hc);
        return;
    }
    hf_request_note_token(req, hc->token, token_len);
    if (req->answered || hf_request_client_gone(req)) {
        /* The deadline passed while Redis was granting, or the client has
         * gone: nobody will ever know this token, so give the resources back
         * now. */
        hf_metrics_inc(HF_C_LATE_GRANTS_RELEASED);
        if (!req->answered) hc->why_withdrawn = "the client disconnected before the grant";
        withdraw_grant(hc);
        return;
    }
    uint32_t replicas = hc->t->ns->min_replicas_ack;
    if (replicas == 0) {
        grant(hc);
        return;
    }
    /* WAIT covers the writes of this connection, which made the grant. */
    char n[16], ms[16];
    snprintf(n, sizeof n, "%u", replicas);
    snprintf(ms, sizeof ms, "%u",
             hf_request_backend_timeout(req, hc->t->ns->replicas_ack_timeout_ms));
    const char *argv[] = {"WAIT", n, ms};
    uint32_t budget = hf_request_remaining_ms(req) + hc->t->ns->replicas_ack_timeout_ms;
    if (hf_redis_conn_command(hc->conn, 3, argv, NULL, budget, on_wait_reply, hc) != 0) {
        hf_metrics_inc(HF_C_REPLICA_ACK_FAILURES);
        hc->why_withdrawn = "redis connection lost before replicas acknowledged; withdrawn";
        withdraw_grant(hc);
    }
}

/* The namespace's admit hook, if any, may refuse the hold or set its TTL. */
static bool admitted_by_policy(struct hf_request *req, const struct hf_target *t,
                               uint32_t *ttl) {
    struct hf_hold_facts facts = {
        .op = "hold",
        .partition = req->partition,
        .ids = t->ids,
        .n_ids = t->n_ids,
        .ttl_ms = *ttl,
        .correlation_id = req->correlation_id,
        .uid = req->peer_uid,
        .gid = req->peer_gid,
    };
    char why[256];
    switch (hf_policy_admit(req->cfg, t->ns, &facts, ttl, why, sizeof why)) {
    case HF_ADMIT:
        return true;
    case HF_DENY:
        hf_request_fail(req, HF_CODE(PERMISSION_DENIED), NULL, NULL, "admit hook: %s", why);
        return false;
    default:
        hf_metrics_inc(HF_C_POLICY_HOOK_FAILURES);
        /* policy.c logs the reasons, at a bounded rate. */
        hf_request_fail(req, HF_CODE(INTERNAL), NULL, NULL, "the namespace's admit hook failed");
        return false;
    }
}

void hf_op_hold(struct hf_request *req) {
    Holdfast__V1__HoldRequest *m = req->msg->hold;
    if (hf_pool_request(req, m->namespace_, m->n_units)) {
        if (m->wait_ms) {
            hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), "wait_ms", NULL,
                            "holds of units take no wait_ms (docs/waiting.md)");
            return;
        }
        hf_pool_hold(req);
        return;
    }
    struct hold_call *hc = hf_request_context(req, sizeof *hc, free_hold_call);
    if (!hc) return;
    hc->req = req;
    struct hf_target *t = hc->t = &hc->target;
    uint32_t ttl;
    if (!hf_target_parse(req, t, m->namespace_, m->partition, m->ids, m->n_ids,
                         m->segment)) return;
    if (m->session) {
        /* A session hold's TTL is the namespace's session TTL, renewed
         * while the connection lives (docs/sessions.md). */
        if (m->ttl_ms) {
            hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), "ttl_ms", NULL,
                            "a session hold takes no ttl_ms: it lives as long as its "
                            "connection (namespace '%s' session_ttl_ms)", t->ns->name);
            return;
        }
        hc->session = true;
        ttl = hf_session_ttl(t->ns);
        uint32_t session_ttl = ttl;
        if (!admitted_by_policy(req, t, &ttl)) return;
        ttl = session_ttl; /* the hook may refuse it, not change its TTL */
    } else {
        if (!hf_ttl_resolve(req, t->ns, m->ttl_ms, &ttl)) return;
        if (!admitted_by_policy(req, t, &ttl)) return;
    }
    hc->ttl = ttl;
    if (hf_token_random(hc->random) != 0) {
        hf_request_fail(req, HF_CODE(INTERNAL), NULL, NULL, "getrandom failed");
        return;
    }
    char *ttl_s = hc->ttl_s;
    size_t ttl_len = hf_u64_dec(ttl_s, ttl);
    const char *args[] = {hc->random, ttl_s};
    size_t lens[] = {HF_TOKEN_RANDOM_CHARS, ttl_len};
    hf_request_op_start(req);
    hc->sent_at = uv_now(req->d->loop);
    /* hc->conn is set to the connection that ran the script (in a cluster,
     * possibly another node's after a redirection) before on_hold_reply. */
    int rc = m->wait_ms ? hf_wait_start(req, t, hc->random, ttl_s, m->wait_ms, &hc->conn,
                                        on_hold_reply, hc, &hc->wait)
                        : hf_front_call(req->d->redis, &hc->conn, HF_FN_HOLD, t->keys->count,
                                        t->keys->keys, t->keys->lens, 2, args, lens,
                                        req->cfg->redis_command_timeout_ms, on_hold_reply, hc);
    if (rc != 0) {
        hf_answer_redis_failure(req, t->ns, HF_REDIS_NOT_SENT, "hold");
        hf_request_op_done(req);
    }
}
