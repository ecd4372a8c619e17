/* ops_pool.c - Hold, Extend, Release and Status on pools (namespaces of kind
 * "pools", docs/pools.md). A hold takes units of 1..N pools of one partition,
 * all or nothing, under a fresh token with a fence and a TTL like any hold;
 * its units come back by themselves when it expires (the library trims
 * expired holds in every call). When the Redis mirror lacks a pool's
 * capacity, it is loaded from PostgreSQL and the call made once more. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hold_grant.h"
#include "metrics.h"
#include "ops_pool.h"
#include "pools.h"
#include "redis_front.h"
#include "wait_line.h"

/* ---- Hold ---- */

/* The op's context. */
struct pool_hold_call {
    struct hf_pool_target target;
    struct hf_grant grant;
    struct hf_request *req;
    struct hf_pool_target *p;   /* &target */
    struct hf_pool_mirror mirror;
    bool loaded;                /* the mirror was loaded once already */
    char ttl_s[16];
    uint64_t wait_until;        /* wait_ms: loop time the wait ends (0: none) */
    struct hf_wait *wait;       /* waiting in line for units (docs/waiting.md) */
    const char **args;          /* the hold's ARGV, kept for the wait's tries */
};

static void free_pool_hold_call(void *ctx) {
    struct pool_hold_call *hc = ctx;
    hf_wait_free(hc->wait);
    free(hc->args);
    hf_pool_target_clear(&hc->target);
}

static void hold_finish(struct pool_hold_call *hc) { hf_request_op_done(hc->req); }

static void grant_done(struct hf_grant *g) { hf_request_op_done(g->req); }

static void send_hold(struct pool_hold_call *hc);

static void on_hold_loaded(void *arg, bool ok, const char *why) {
    struct pool_hold_call *hc = arg;
    if (!ok) {
        hf_request_fail(hc->req, HF_CODE(UNAVAILABLE), NULL, NULL, "%s", why);
        hold_finish(hc);
        return;
    }
    if (hc->req->answered) {
        hold_finish(hc); /* the deadline passed while loading: hold nothing */
        return;
    }
    /* Any connection will do (the first call's may be gone by now); the
     * one that grants is where a WAIT must follow. */
    hc->grant.conn = NULL;
    send_hold(hc);
}

static void on_hold_reply(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct pool_hold_call *hc = privdata;
    struct hf_request *req = hc->req;
    long long code;
    if (status != HF_REDIS_OK) {
        hf_answer_redis_failure(req, hc->p->t.ns, status, "hold");
        hold_finish(hc);
        return;
    }
    if (!hf_reply_code(r, &code)) {
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL,
                        "redis refused the pool hold script");
        hold_finish(hc);
        return;
    }
    if (code == HF_SC_GRANTED) {
        hf_grant_granted(&hc->grant, r); /* ends the op */
        return;
    }
    if (code == HF_SC_POOL_MISS && !hc->loaded && !req->answered) {
        hc->loaded = true;
        hc->mirror = (struct hf_pool_mirror){
            .req = req, .p = hc->p, .done = on_hold_loaded, .arg = hc};
        hf_pool_mirror_load(&hc->mirror);
        return;
    }
    if (code == HF_SC_POOL_MISS)
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL,
                        "the capacity of the pools is not in redis, even after loading it");
    else
        hf_pool_answer_code(req, hc->p, code, hf_reply_int(r, 1), hf_reply_int(r, 2));
    hold_finish(hc);
}

/* A wait that ran out: answered as the pool that kept it waiting. */
static void on_wait_held(void *privdata, long long index, long long free_units) {
    struct pool_hold_call *hc = privdata;
    if (free_units >= 0) {
        hf_pool_answer_code(hc->req, hc->p, HF_SC_HELD_BY_ANOTHER, index, free_units);
        return;
    }
    const char *pool = index >= 1 && (size_t)index <= hc->p->n ? hc->p->names[index - 1] : "?";
    hf_request_fail(hc->req, HF_CODE(HELD_BY_ANOTHER), NULL, pool,
                    "pool '%s': other holds waiting in line came first", pool);
}

/* Waiting in line: the tries go through wait_line.c (the args stay in the
 * context for them). */
static int send_wait(struct pool_hold_call *hc) {
    struct hf_request *req = hc->req;
    struct hf_pool_target *p = hc->p;
    size_t nargs = 2 + p->n;
    if (!hc->args && !(hc->args = calloc(nargs, sizeof *hc->args))) return -1;
    hc->args[0] = hc->grant.random;
    hc->args[1] = hc->ttl_s;
    for (size_t i = 0; i < p->n; i++) hc->args[2 + i] = p->count_s[i];
    hf_wait_free(hc->wait); /* a wait before the mirror was loaded */
    hc->wait = NULL;
    uint64_t now = uv_now(req->d->loop);
    uint32_t wait_ms = hc->wait_until > now ? (uint32_t)(hc->wait_until - now) : 1;
    return hf_wait_start_pools(req, p->t.keys->keys, p->t.keys->lens, p->t.keys->count,
                               p->names, p->n, hc->args, nargs, wait_ms, &hc->grant.conn,
                               on_hold_reply, on_wait_held, hc, &hc->wait);
}

static void send_hold(struct pool_hold_call *hc) {
    struct hf_request *req = hc->req;
    struct hf_pool_target *p = hc->p;
    if (hc->wait_until) {
        if (send_wait(hc) != 0) {
            hf_answer_redis_failure(req, p->t.ns, HF_REDIS_NOT_SENT, "hold");
            hold_finish(hc);
        }
        return;
    }
    size_t nargs = 2 + p->n;
    const char **args = calloc(nargs, sizeof *args);
    size_t *lens = calloc(nargs, sizeof *lens);
    int rc = -1;
    if (args && lens) {
        args[0] = hc->grant.random;
        args[1] = hc->ttl_s;
        for (size_t i = 0; i < p->n; i++) args[2 + i] = p->count_s[i];
        for (size_t i = 0; i < nargs; i++) lens[i] = strlen(args[i]);
        /* grant.conn is set to the connection that ran the script before
         * on_hold_reply (a WAIT must follow on it). */
        rc = hf_front_call(req->d->redis, &hc->grant.conn, HF_FN_POOL_HOLD, p->t.keys->count,
                           p->t.keys->keys, p->t.keys->lens, nargs, args, lens,
                           req->cfg->redis_command_timeout_ms, on_hold_reply, hc);
    }
    free(args);
    free(lens);
    if (rc != 0) {
        hf_answer_redis_failure(req, p->t.ns, HF_REDIS_NOT_SENT, "hold");
        hold_finish(hc);
    }
}

void hf_pool_hold(struct hf_request *req) {
    Holdfast__V1__HoldRequest *m = req->msg->hold;
    struct pool_hold_call *hc = hf_request_context(req, sizeof *hc, free_pool_hold_call);
    if (!hc) return;
    hc->req = req;
    struct hf_pool_target *p = hc->p = &hc->target;
    uint32_t ttl;
    if (!hf_pool_target_parse(req, p, m->namespace_, m->partition, m->n_ids, m->units,
                              m->n_units, NULL, 0, true, false))
        return;
    if (m->session) {
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), "session", NULL,
                        "units of pools cannot be held by a session; give the hold a TTL "
                        "(namespace '%s')", p->t.ns->name);
        return;
    }
    if (!hf_ttl_resolve(req, p->t.ns, m->ttl_ms, &ttl)) return;
    /* The namespace's admit hook sees the units as ids ("adult=2"). */
    if (!hf_grant_admitted(req, p->t.ns, p->units, p->n, &ttl)) return;
    snprintf(hc->ttl_s, sizeof hc->ttl_s, "%u", ttl);
    size_t nkeys;
    const size_t *keylens;
    const char *const *keys = hf_pool_pair_keys(p, &nkeys, &keylens);
    hc->grant = (struct hf_grant){
        .req = req,
        .ns = p->t.ns,
        .ttl = ttl,
        .release_fn = HF_FN_POOL_RELEASE,
        .n_keys = nkeys,
        .keys = keys,
        .key_lens = keylens,
        .done = grant_done,
    };
    if (!hf_grant_prepare(&hc->grant)) return;
    if (m->wait_ms) hc->wait_until = uv_now(req->d->loop) + m->wait_ms;
    hf_request_op_start(req);
    send_hold(hc);
}

/* ---- Extend, Release ---- */

/* The context of Extend, Release and Status. */
struct pool_call {
    struct hf_pool_target target;
    struct hf_request *req;
    struct hf_pool_target *p; /* &target */
    struct hf_pool_mirror mirror;
    bool loaded;
    const char *token;
};

static void free_pool_call(void *ctx) {
    struct pool_call *pc = ctx;
    hf_pool_target_clear(&pc->target);
}

static struct pool_call *pool_call_create(struct hf_request *req, const char *ns,
                                          const char *partition, size_t n_ids, char **pools,
                                          size_t n_pools) {
    struct pool_call *pc = hf_request_context(req, sizeof *pc, free_pool_call);
    if (!pc) return NULL;
    pc->req = req;
    pc->p = &pc->target;
    if (!hf_pool_target_parse(req, pc->p, ns, partition, n_ids, NULL, 0, pools, n_pools, false,
                              false))
        return NULL;
    return pc;
}

static void on_extend_reply(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct pool_call *pc = privdata;
    struct hf_request *req = pc->req;
    long long code;
    if (status != HF_REDIS_OK) {
        hf_answer_redis_failure(req, pc->p->t.ns, status, "extend");
    } else if (!hf_reply_code(r, &code)) {
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL,
                        "redis refused the pool extend script");
    } else if (code != HF_SC_GRANTED) {
        hf_pool_answer_code(req, pc->p, code, hf_reply_int(r, 1), hf_reply_int(r, 2));
    } else {
        hf_response_msg resp = HOLDFAST__V1__RESPONSE__INIT;
        Holdfast__V1__ExtendResponse er = HOLDFAST__V1__EXTEND_RESPONSE__INIT;
        er.ttl_ms = req->msg->extend->ttl_ms;
        resp.code = HF_CODE(OK);
        resp.result_case = HOLDFAST__V1__RESPONSE__RESULT_EXTEND;
        resp.extend = &er;
        hf_request_reply(req, &resp);
    }
    hf_request_op_done(req);
}

void hf_pool_extend(struct hf_request *req) {
    Holdfast__V1__ExtendRequest *m = req->msg->extend;
    struct pool_call *pc =
        pool_call_create(req, m->namespace_, m->partition, m->n_ids, m->pools, m->n_pools);
    uint32_t ttl;
    if (!pc) return;
    if (!hf_ttl_resolve(req, pc->p->t.ns, m->ttl_ms, &ttl)) return;
    if (!hf_token_check(req, m->token, true)) return;
    m->ttl_ms = ttl; /* echoed in the answer */
    char ttl_s[16];
    snprintf(ttl_s, sizeof ttl_s, "%u", ttl);
    const char *args[] = {m->token, ttl_s};
    size_t lens[] = {strlen(m->token), strlen(ttl_s)};
    size_t nkeys;
    const size_t *keylens;
    const char *const *keys = hf_pool_pair_keys(pc->p, &nkeys, &keylens);
    hf_request_op_start(req);
    if (hf_front_call(req->d->redis, NULL, HF_FN_POOL_EXTEND, nkeys, keys, keylens, 2, args, lens,
                      req->cfg->redis_command_timeout_ms, on_extend_reply, pc) != 0) {
        hf_answer_redis_failure(req, pc->p->t.ns, HF_REDIS_NOT_SENT, "extend");
        hf_request_op_done(req);
    }
}

static void on_release_reply(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct pool_call *pc = privdata;
    struct hf_request *req = pc->req;
    long long code;
    if (status != HF_REDIS_OK) {
        hf_answer_redis_failure(req, pc->p->t.ns, status, "release");
    } else if (!hf_reply_code(r, &code) || (code != HF_SC_GRANTED && code != HF_SC_NOT_HELD)) {
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL,
                        "redis refused the pool release script");
    } else {
        hf_response_msg resp = HOLDFAST__V1__RESPONSE__INIT;
        Holdfast__V1__ReleaseResponse rr = HOLDFAST__V1__RELEASE_RESPONSE__INIT;
        Holdfast__V1__ErrorDetail detail = HOLDFAST__V1__ERROR_DETAIL__INIT;
        char message[320];
        rr.released = (uint32_t)hf_reply_int(r, 1);
        /* Units came back: whoever waits in line for them tries now. */
        if (rr.released)
            hf_wait_wake_pools(req->d, pc->p->t.keys->keys[0], pc->p->t.keys->lens[0],
                               pc->p->names, pc->p->n);
        resp.result_case = HOLDFAST__V1__RESPONSE__RESULT_RELEASE;
        resp.release = &rr;
        resp.code = HF_CODE(OK);
        if (code == HF_SC_NOT_HELD) {
            long long index = hf_reply_int(r, 2);
            const char *pool =
                index >= 1 && (size_t)index <= pc->p->n ? pc->p->names[index - 1] : "";
            resp.code = HF_CODE(NOT_HELD);
            snprintf(message, sizeof message,
                     "pool '%s': this token holds no units (expired, released or never held); "
                     "%u units released", pool, rr.released);
            resp.message = message;
            detail.resource_id = (char *)pool;
            resp.error = &detail;
        }
        hf_request_reply(req, &resp);
    }
    hf_request_op_done(req);
}

void hf_pool_release(struct hf_request *req) {
    Holdfast__V1__ReleaseRequest *m = req->msg->release;
    struct pool_call *pc =
        pool_call_create(req, m->namespace_, m->partition, m->n_ids, m->pools, m->n_pools);
    if (!pc) return;
    if (!hf_token_check(req, m->token, true)) return;
    const char *args[] = {m->token};
    size_t lens[] = {strlen(m->token)};
    size_t nkeys;
    const size_t *keylens;
    const char *const *keys = hf_pool_pair_keys(pc->p, &nkeys, &keylens);
    hf_request_op_start(req);
    if (hf_front_call(req->d->redis, NULL, HF_FN_POOL_RELEASE, nkeys, keys, keylens, 1, args,
                      lens, req->cfg->redis_command_timeout_ms, on_release_reply, pc) != 0) {
        hf_answer_redis_failure(req, pc->p->t.ns, HF_REDIS_NOT_SENT, "release");
        hf_request_op_done(req);
    }
}

/* ---- Status ---- */

static void send_status(struct pool_call *pc);

static void on_status_loaded(void *arg, bool ok, const char *why) {
    struct pool_call *pc = arg;
    if (!ok || pc->req->answered) {
        if (!ok) hf_request_fail(pc->req, HF_CODE(UNAVAILABLE), NULL, NULL, "%s", why);
        hf_request_op_done(pc->req);
        return;
    }
    send_status(pc);
}

static void answer_status(struct pool_call *pc, const redisReply *r) {
    struct hf_request *req = pc->req;
    const struct hf_pool_target *p = pc->p;
    Holdfast__V1__PoolStatus *items = calloc(p->n, sizeof *items);
    Holdfast__V1__PoolStatus **ptrs = calloc(p->n, sizeof *ptrs);
    if (!items || !ptrs) {
        hf_request_fail(req, HF_CODE(RESOURCE_EXHAUSTED), NULL, NULL, "out of memory");
    } else {
        for (size_t i = 0; i < p->n; i++) {
            holdfast__v1__pool_status__init(&items[i]);
            long long cap = hf_reply_int(r, 1 + 5 * i), sold = hf_reply_int(r, 2 + 5 * i);
            long long held = hf_reply_int(r, 3 + 5 * i);
            long long free_units = cap - sold - held;
            items[i].pool = p->names[i];
            items[i].capacity = cap > 0 ? (uint64_t)cap : 0;
            items[i].sold = sold > 0 ? (uint64_t)sold : 0;
            items[i].held = held > 0 ? (uint64_t)held : 0;
            items[i].free = free_units > 0 ? (uint64_t)free_units : 0;
            items[i].owned = (uint32_t)hf_reply_int(r, 4 + 5 * i);
            items[i].ttl_ms = hf_reply_int(r, 5 + 5 * i);
            ptrs[i] = &items[i];
        }
        hf_response_msg resp = HOLDFAST__V1__RESPONSE__INIT;
        Holdfast__V1__StatusResponse sr = HOLDFAST__V1__STATUS_RESPONSE__INIT;
        sr.n_pools = p->n;
        sr.pools = ptrs;
        resp.code = HF_CODE(OK);
        resp.result_case = HOLDFAST__V1__RESPONSE__RESULT_STATUS;
        resp.status = &sr;
        hf_request_reply(req, &resp);
    }
    free(items);
    free(ptrs);
}

static void on_status_reply(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct pool_call *pc = privdata;
    struct hf_request *req = pc->req;
    long long code;
    if (status != HF_REDIS_OK) {
        hf_answer_redis_failure(req, NULL, status, "status");
    } else if (!hf_reply_code(r, &code)) {
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL,
                        "redis refused the pool status script");
    } else if (code == HF_SC_POOL_MISS && !pc->loaded && !req->answered) {
        pc->loaded = true;
        pc->mirror = (struct hf_pool_mirror){
            .req = req, .p = pc->p, .done = on_status_loaded, .arg = pc};
        hf_pool_mirror_load(&pc->mirror);
        return;
    } else if (code != HF_SC_GRANTED || r->elements != 1 + 5 * pc->p->n) {
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL,
                        "the capacity of the pools is not in redis, even after loading it");
    } else {
        answer_status(pc, r);
    }
    hf_request_op_done(req);
}

static void send_status(struct pool_call *pc) {
    struct hf_request *req = pc->req;
    const char *args[] = {pc->token};
    size_t lens[] = {strlen(pc->token)};
    size_t nkeys;
    const size_t *keylens;
    const char *const *keys = hf_pool_default_keys(pc->p, &nkeys, &keylens);
    if (hf_front_call(req->d->redis, NULL, HF_FN_POOL_STATUS, nkeys, keys, keylens, 1, args, lens,
                      req->cfg->redis_command_timeout_ms, on_status_reply, pc) != 0) {
        hf_answer_redis_failure(req, NULL, HF_REDIS_NOT_SENT, "status");
        hf_request_op_done(req);
    }
}

void hf_pool_status(struct hf_request *req) {
    Holdfast__V1__StatusRequest *m = req->msg->status;
    struct pool_call *pc =
        pool_call_create(req, m->namespace_, m->partition, m->n_ids, m->pools, m->n_pools);
    if (!pc) return;
    if (!hf_token_check(req, m->token, false)) return;
    pc->token = m->token ? m->token : "";
    hf_request_op_start(req);
    send_status(pc);
}
