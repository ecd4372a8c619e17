/* ops_hold.c - Hold: all-or-nothing grant of 1..N ids under a fresh token,
 * optionally confirmed by replicas (WAIT) before it counts. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hold_grant.h"
#include "metrics.h"
#include "numfmt.h"
#include "ops_common.h"
#include "ops_pool.h"
#include "pools.h"
#include "redis_front.h"
#include "session.h"
#include "wait_line.h"


/* The op's context. */
struct hold_call {
    struct hf_target target;
    struct hf_grant grant;
    struct hf_request *req;
    struct hf_target *t;        /* &target */
    bool session;               /* bound to the connection (docs/sessions.md) */
    uint64_t sent_at;           /* loop time the hold script was sent */
    char ttl_s[24];
    struct hf_wait *wait;       /* wait_ms: waiting in line (wait_line.c) */
};

static void free_hold_call(void *ctx) {
    struct hold_call *hc = ctx;
    hf_wait_free(hc->wait);
    hf_target_clear(&hc->target);
}

static void grant_done(struct hf_grant *g) { hf_request_op_done(g->req); }

/* A session hold joins its connection's session before it is answered, so a
 * Release or Confirm that follows finds it there. */
static bool keep_in_session(struct hf_grant *g) {
    struct hold_call *hc = (struct hold_call *)((char *)g - offsetof(struct hold_call, grant));
    struct hf_request *req = hc->req;
    struct hf_session *s = hf_request_session(req, true);
    struct hf_keyset *ks = hc->t->keys;
    struct hf_session_hold h = {
        .ns = hc->t->ns->name,
        .partition = req->partition,
        .keys = ks->keys + 1,
        .key_lens = ks->lens + 1,
        .n_keys = ks->count - 1,
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

static void on_hold_reply(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct hold_call *hc = privdata;
    struct hf_request *req = hc->req;
    long long code;
    if (status != HF_REDIS_OK) {
        hf_answer_redis_failure(req, hc->t->ns, status, "hold");
    } else if (!hf_reply_code(r, &code)) {
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL, "redis refused the hold script");
    } else if (code != HF_SC_GRANTED) {
        hf_answer_script_code(req, hc->t, code, hf_reply_int(r, 1));
    } else {
        hf_grant_granted(&hc->grant, r); /* ends the op */
        return;
    }
    hf_request_op_done(req);
}

void hf_op_hold(struct hf_request *req) {
    Holdfast__V1__HoldRequest *m = req->msg->hold;
    if (hf_pool_request(req, m->namespace_, m->n_units)) {
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
        if (!hf_grant_admitted(req, t->ns, t->ids, t->n_ids, &ttl)) return;
        ttl = session_ttl; /* the hook may refuse it, not change its TTL */
    } else {
        if (!hf_ttl_resolve(req, t->ns, m->ttl_ms, &ttl)) return;
        if (!hf_grant_admitted(req, t->ns, t->ids, t->n_ids, &ttl)) return;
    }
    /* The keys past the fence counter are the hold's: what a withdrawal
     * releases. */
    hc->grant = (struct hf_grant){
        .req = req,
        .ns = t->ns,
        .ttl = ttl,
        .release_fn = HF_FN_RELEASE,
        .n_keys = t->keys->count - 1,
        .keys = t->keys->keys + 1,
        .key_lens = t->keys->lens + 1,
        .keep = hc->session ? keep_in_session : NULL,
        .done = grant_done,
    };
    if (!hf_grant_prepare(&hc->grant)) return;
    char *ttl_s = hc->ttl_s; /* kept: a wait sends it again */
    size_t ttl_len = hf_u64_dec(ttl_s, ttl);
    const char *args[] = {hc->grant.random, ttl_s};
    size_t lens[] = {HF_TOKEN_RANDOM_CHARS, ttl_len};
    hf_request_op_start(req);
    hc->sent_at = uv_now(req->d->loop);
    /* grant.conn is set to the connection that ran the script (in a
     * cluster, possibly another node's after a redirection) before
     * on_hold_reply: a WAIT must follow on it. */
    int rc = m->wait_ms
                 ? hf_wait_start(req, t, hc->grant.random, ttl_s, m->wait_ms, &hc->grant.conn,
                                 on_hold_reply, hc, &hc->wait)
                 : hf_front_call(req->d->redis, &hc->grant.conn, HF_FN_HOLD, t->keys->count,
                                 t->keys->keys, t->keys->lens, 2, args, lens,
                                 req->cfg->redis_command_timeout_ms, on_hold_reply, hc);
    if (rc != 0) {
        hf_answer_redis_failure(req, t->ns, HF_REDIS_NOT_SENT, "hold");
        hf_request_op_done(req);
    }
}
