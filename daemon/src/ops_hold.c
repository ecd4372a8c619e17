/* ops_hold.c - Hold: all-or-nothing grant of a target (seats, legs or units
 * of pools) under a fresh token, optionally waiting in line for it, bound to
 * the connection (a session hold) or confirmed by replicas (WAIT) before it
 * counts. When Redis lacks state the kind keeps in PostgreSQL (a pool's
 * capacity), it is loaded and the hold tried once more. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "hold_grant.h"
#include "metrics.h"
#include "ops_common.h"
#include "session.h"
#include "target.h"
#include "wait.h"

/* The op's context. */
struct hold_call {
    struct hf_target target;
    struct hf_grant grant;
    struct hf_request *req;
    struct hf_argv args;        /* random, TTL[, units per pool]: a wait sends them again */
    bool session;               /* bound to the connection (docs/sessions.md) */
    bool loaded;                /* the kind's state was loaded once already */
    uint64_t sent_at;           /* loop time the first try was sent */
    uint64_t wait_until;        /* wait_ms: loop time the wait ends (0: none) */
    struct hf_wait *wait;
    struct hf_target_load load;
};

static void free_hold_call(void *ctx) {
    struct hold_call *hc = ctx;
    hf_wait_free(hc->wait);
    hf_argv_free(&hc->args);
    hf_target_clear(&hc->target);
}

static void grant_done(struct hf_grant *g) { hf_request_op_done(g->req); }

/* A session hold joins its connection's session before it is answered, so a
 * Release or Confirm that follows finds it there. */
static bool keep_in_session(struct hf_grant *g) {
    struct hold_call *hc = (struct hold_call *)((char *)g - offsetof(struct hold_call, grant));
    struct hf_request *req = hc->req;
    struct hf_session *s = hf_request_session(req, true);
    struct hf_strs keys = hf_target_hold_keys(&hc->target);
    struct hf_session_hold h = {
        .ns = hc->target.ns->name,
        .partition = req->partition,
        .keys = keys.v,
        .key_lens = keys.lens,
        .n_keys = keys.n,
        .token = g->token,
        .fence = g->fence,
        .ttl_ms = g->ttl,
        .sent_at_ms = hc->sent_at,
    };
    if (s && hf_session_add(s, &h)) return true;
    if (hf_request_client_gone(req)) {
        hf_metrics_inc(HF_C_LATE_GRANTS_RELEASED);
        g->why_withdrawn = "the client disconnected before the grant";
    } else {
        g->why_withdrawn = "out of memory keeping the session hold; withdrawn";
    }
    return false;
}

static void send_hold(struct hold_call *hc);

static void on_loaded(void *arg, bool ok, const char *why) {
    struct hold_call *hc = arg;
    if (!ok) hf_request_fail(hc->req, HF_CODE(UNAVAILABLE), NULL, NULL, "%s", why);
    if (!ok || hc->req->answered) { /* the deadline passed while loading: hold nothing */
        hf_request_op_done(hc->req);
        return;
    }
    /* Any connection will do (the first call's may be gone by now); the one
     * that grants is where a WAIT must follow. */
    hc->grant.conn = NULL;
    send_hold(hc);
}

static void on_hold_reply(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct hold_call *hc = privdata;
    struct hf_request *req = hc->req;
    long long code;
    if (status != HF_REDIS_OK) {
        hf_answer_redis_failure(req, hc->target.ns, status, "hold");
    } else if (!hf_reply_code(r, &code)) {
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL, "redis refused the hold script");
    } else if (code == HF_SC_GRANTED) {
        hf_grant_granted(&hc->grant, r); /* ends the op */
        return;
    } else if (hf_target_missing_state(&hc->target, code) && !hc->loaded && !req->answered) {
        hc->loaded = true;
        hc->load = (struct hf_target_load){
            .req = req, .t = &hc->target, .done = on_loaded, .arg = hc};
        hf_target_load_state(&hc->load);
        return;
    } else {
        hf_target_answer_reply(req, &hc->target, r);
    }
    hf_request_op_done(req);
}

static void send_hold(struct hold_call *hc) {
    struct hf_request *req = hc->req;
    int rc;
    if (hc->wait_until) {
        hf_wait_free(hc->wait); /* a wait from before the state was loaded */
        hc->wait = NULL;
        uint64_t now = uv_now(req->d->loop);
        uint32_t wait_ms = hc->wait_until > now ? (uint32_t)(hc->wait_until - now) : 1;
        rc = hf_wait_start(req, &hc->target, &hc->args, wait_ms, &hc->grant.conn, on_hold_reply,
                           hc, &hc->wait);
    } else {
        /* grant.conn is set to the connection that ran the script (in a
         * cluster, possibly another node's after a redirection) before
         * on_hold_reply: a WAIT must follow on it. */
        rc = hf_target_call(req, &hc->target, HF_STEP_HOLD, &hc->grant.conn, &hc->args,
                            on_hold_reply, hc);
    }
    if (rc != 0) {
        hf_answer_redis_failure(req, hc->target.ns, HF_REDIS_NOT_SENT, "hold");
        hf_request_op_done(req);
    }
}

/* The TTL: the namespace's session TTL for a session hold (the hook may
 * refuse it, not change it), else the request's within the bounds. */
static bool resolve_ttl(struct hf_request *req, struct hold_call *hc, uint32_t *ttl) {
    const Holdfast__V1__HoldRequest *m = req->msg->hold;
    const struct hf_target *t = &hc->target;
    if (!m->session) {
        return hf_ttl_resolve(req, t->ns, m->ttl_ms, ttl) && hf_grant_admitted(req, t, ttl);
    }
    if (!t->kind->sessions) {
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), "session", NULL,
                        "units of pools cannot be held by a session; give the hold a TTL "
                        "(namespace '%s')", t->ns->name);
        return false;
    }
    if (m->ttl_ms) {
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), "ttl_ms", NULL,
                        "a session hold takes no ttl_ms: it lives as long as its "
                        "connection (namespace '%s' session_ttl_ms)", t->ns->name);
        return false;
    }
    hc->session = true;
    uint32_t session_ttl = *ttl = hf_session_ttl(t->ns);
    if (!hf_grant_admitted(req, t, ttl)) return false;
    *ttl = session_ttl;
    return true;
}

void hf_op_hold(struct hf_request *req) {
    Holdfast__V1__HoldRequest *m = req->msg->hold;
    struct hold_call *hc = hf_request_context(req, sizeof *hc, free_hold_call);
    if (!hc) return;
    hc->req = req;
    hf_argv_init(&hc->args);
    struct hf_target_fields f = {
        .ns = m->namespace_, .partition = m->partition, .ids = m->ids, .n_ids = m->n_ids,
        .segment = m->segment, .units = m->units, .n_units = m->n_units};
    uint32_t ttl;
    if (!hf_target_parse(req, &hc->target, &f, HF_NEED_ITEMS) || !resolve_ttl(req, hc, &ttl))
        return;
    hc->grant = (struct hf_grant){
        .req = req,
        .t = &hc->target,
        .ttl = ttl,
        .keep = hc->session ? keep_in_session : NULL,
        .done = grant_done,
    };
    if (!hf_grant_prepare(&hc->grant)) return;
    hf_argv_add(&hc->args, hc->grant.random, HF_TOKEN_RANDOM_CHARS);
    hf_argv_add_u64(&hc->args, ttl);
    hf_argv_add_strs(&hc->args, hc->target.count_args);
    if (m->wait_ms) hc->wait_until = uv_now(req->d->loop) + m->wait_ms;
    hf_request_op_start(req);
    hc->sent_at = uv_now(req->d->loop);
    send_hold(hc);
}
