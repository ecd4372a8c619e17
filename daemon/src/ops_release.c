/* ops_release.c - Release: give back everything this token holds of the
 * target; say whether all of it was released, or the first item held by
 * another / not held / confirmed. Whoever waits in line for what it freed
 * tries now: in the same call (seats: hf1_release_wake) or right after.
 * Seats may go through the server's native DELEX key IFEQ token (Redis 8.4+)
 * or DELIFEQ (Valkey 9); a 0 is then classified with a GET, since the
 * command alone cannot tell expired from another owner. */
#include <stdlib.h>
#include <string.h>

#include "ops_common.h"
#include "session.h"
#include "target.h"
#include "wake_hub.h"

#define CONFIRMED_PREFIX "!confirmed:"

struct delex_item;

/* The op's context (the DELEX fields are used on that path only). */
struct release_call {
    struct hf_target target;
    struct hf_request *req;
    size_t outstanding;
    uint32_t released;
    bool failed;
    enum hf_redis_status failure;
    long long first_code;   /* classification of the first item not released */
    size_t first_index;     /* 1-based, 0 = none yet */
    unsigned char *deleted; /* per id: 1 when DELEX returned 1 */
    struct delex_item *items;
};

/* One id's DELEX (then GET) call. */
struct delex_item {
    struct release_call *call;
    size_t index; /* 0-based id index */
};

static void free_release_call(void *ctx) {
    struct release_call *rc = ctx;
    hf_target_clear(&rc->target);
    free(rc->deleted);
    free(rc->items);
}

/* released everything -> OK; else the code of the first item not released. */
static void answer(struct release_call *rc, uint32_t released, long long first_code,
                   long long first_index, bool woken) {
    struct hf_request *req = rc->req;
    const struct hf_target *t = &rc->target;
    /* Redis answered: none of these keys is this token's any more, so they
     * leave the connection's session hold, if it is one. */
    struct hf_strs held = hf_target_hold_keys(t);
    hf_session_released(hf_request_session(req, false), req->msg->release->token, held.v,
                        held.lens, held.n);
    if (released && !woken) hf_wake_lines(req->d->wakes, hf_keys_lines(t->keys), false);
    hf_response_msg resp = HOLDFAST__V1__RESPONSE__INIT;
    Holdfast__V1__ReleaseResponse rr = HOLDFAST__V1__RELEASE_RESPONSE__INIT;
    Holdfast__V1__ErrorDetail detail = HOLDFAST__V1__ERROR_DETAIL__INIT;
    char message[320];
    rr.released = released;
    resp.result_case = HOLDFAST__V1__RESPONSE__RESULT_RELEASE;
    resp.release = &rr;
    resp.code = HF_CODE(OK);
    if (first_code != HF_SC_GRANTED) {
        resp.code = first_code == HF_SC_HELD_BY_ANOTHER ? HF_CODE(HELD_BY_ANOTHER)
                    : first_code == HF_SC_CONFIRMED     ? HF_CODE(CONFIRMED)
                                                        : HF_CODE(NOT_HELD);
        t->kind->release_message(t, first_code, first_index, released, message, sizeof message);
        resp.message = message;
        detail.resource_id = (char *)hf_target_item(t, first_index);
        resp.error = &detail;
    }
    hf_request_reply(req, &resp);
}

/* {GRANTED, released} | {first other state, released, its index} */
static void on_release_reply(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct release_call *rc = privdata;
    struct hf_request *req = rc->req;
    long long code;
    if (status != HF_REDIS_OK) {
        hf_answer_redis_failure(req, rc->target.ns, status, "release");
    } else if (!hf_reply_code(r, &code) || code < HF_SC_GRANTED || code > HF_SC_CONFIRMED) {
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL, "redis refused the release script");
    } else {
        answer(rc, (uint32_t)hf_reply_int(r, 1), code, hf_reply_int(r, 2),
               rc->target.kind->release_wakes);
    }
    hf_request_op_done(req);
}

/* ---- the DELEX path (seats) ---- */

static void delex_finish(struct release_call *dc) {
    if (dc->failed)
        hf_answer_redis_failure(dc->req, dc->target.ns, dc->failure, "release");
    else
        answer(dc, dc->released, dc->first_index ? dc->first_code : HF_SC_GRANTED,
               (long long)dc->first_index, false);
    hf_request_op_done(dc->req);
}

static void on_classify(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct delex_item *item = privdata;
    struct release_call *dc = item->call;
    if (!dc->first_index || item->index + 1 < dc->first_index) {
        dc->first_index = item->index + 1;
        /* When the GET fails the release itself is still done; we only cannot
         * say why this id was not ours: "not held" is the honest minimum. */
        dc->first_code = HF_SC_NOT_HELD;
        if (status == HF_REDIS_OK && r->type == REDIS_REPLY_STRING)
            dc->first_code = strncmp(r->str, CONFIRMED_PREFIX, strlen(CONFIRMED_PREFIX)) == 0
                                 ? HF_SC_CONFIRMED
                                 : HF_SC_HELD_BY_ANOTHER;
    }
    if (--dc->outstanding == 0) delex_finish(dc);
}

static void classify_leftovers(struct release_call *dc) {
    struct hf_request *req = dc->req;
    struct hf_strs keys = hf_target_hold_keys(&dc->target);
    dc->outstanding = 1; /* guard while sending */
    for (size_t i = 0; i < keys.n; i++) {
        if (dc->deleted[i]) continue;
        const char *argv[] = {"GET", keys.v[i]};
        size_t lens[] = {3, keys.lens[i]};
        if (hf_front_command(req->d->redis, NULL, keys.v[i], keys.lens[i], 2, argv, lens,
                             req->cfg->redis_command_timeout_ms, on_classify,
                             &dc->items[i]) != 0) {
            if (!dc->first_index) {
                dc->first_index = i + 1;
                dc->first_code = HF_SC_NOT_HELD;
            }
            continue;
        }
        dc->outstanding++;
    }
    if (--dc->outstanding == 0) delex_finish(dc);
}

static void on_delex_reply(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct delex_item *item = privdata;
    struct release_call *dc = item->call;
    if (status != HF_REDIS_OK || r->type != REDIS_REPLY_INTEGER) {
        if (!dc->failed) dc->failure = status == HF_REDIS_OK ? HF_REDIS_DISCONNECTED : status;
        dc->failed = true;
    } else if (r->integer == 1) {
        dc->deleted[item->index] = 1;
        dc->released++;
    }
    if (--dc->outstanding > 0) return;
    if (!dc->failed && dc->released < dc->target.n)
        classify_leftovers(dc);
    else
        delex_finish(dc);
}

/* One command per id, all on one connection (one partition: one node). */
static bool send_delex(struct release_call *dc, struct hf_redis_conn *conn, const char *token,
                       size_t i) {
    struct hf_request *req = dc->req;
    struct hf_strs keys = hf_target_hold_keys(&dc->target);
    /* DELEX key IFEQ token (Redis 8.4+) or DELIFEQ key token (Valkey 9). */
    bool valkey = hf_front_release_command(req->d->redis) == HF_DELEX_DELIFEQ;
    const char *delex[] = {"DELEX", keys.v[i], "IFEQ", token};
    size_t delex_lens[] = {5, keys.lens[i], 4, strlen(token)};
    const char *delifeq[] = {"DELIFEQ", keys.v[i], token};
    size_t delifeq_lens[] = {7, keys.lens[i], strlen(token)};
    return hf_front_command(req->d->redis, conn, keys.v[i], keys.lens[i], valkey ? 3 : 4,
                            valkey ? delifeq : delex, valkey ? delifeq_lens : delex_lens,
                            req->cfg->redis_command_timeout_ms, on_delex_reply,
                            &dc->items[i]) == 0;
}

static void release_with_delex(struct release_call *dc, const char *token) {
    struct hf_request *req = dc->req;
    size_t n = dc->target.n;
    dc->deleted = calloc(n, 1);
    dc->items = calloc(n, sizeof *dc->items);
    if (!dc->deleted || !dc->items) {
        hf_request_fail(req, HF_CODE(RESOURCE_EXHAUSTED), NULL, NULL, "out of memory");
        return;
    }
    for (size_t i = 0; i < n; i++) dc->items[i] = (struct delex_item){dc, i};
    hf_request_op_start(req);
    struct hf_strs keys = hf_target_hold_keys(&dc->target);
    struct hf_redis_conn *conn = hf_front_pick(req->d->redis, keys.v[0], keys.lens[0]);
    dc->outstanding = 1; /* guard while sending */
    for (size_t i = 0; conn && i < n; i++) {
        if (!send_delex(dc, conn, token, i)) {
            dc->failed = true;
            dc->failure = HF_REDIS_NOT_SENT;
            break;
        }
        dc->outstanding++;
    }
    if (!conn) {
        dc->failed = true;
        dc->failure = HF_REDIS_NOT_SENT;
    }
    if (--dc->outstanding == 0) delex_finish(dc);
}

/* ---- the function path ---- */

/* Seats release and wake in one call: the hold keys, the partition's
 * waiters, the lines (docs/waiting.md); the others release, then wake. */
static int send_release(struct release_call *rc, const char *token) {
    struct hf_request *req = rc->req;
    const struct hf_target *t = &rc->target;
    struct hf_argv args;
    hf_argv_init(&args);
    hf_argv_add_str(&args, token);
    if (!t->kind->release_wakes)
        return hf_target_call(req, t, HF_STEP_RELEASE, NULL, &args, on_release_reply, rc);
    hf_argv_add_u64(&args, t->n);
    return hf_front_call(req->d->redis, NULL, HF_FN_RELEASE_WAKE,
                         hf_keys_run(t->keys, 1, t->keys->count), &args,
                         req->cfg->redis_command_timeout_ms, on_release_reply, rc);
}

void hf_op_release(struct hf_request *req) {
    Holdfast__V1__ReleaseRequest *m = req->msg->release;
    struct release_call *rc = hf_request_context(req, sizeof *rc, free_release_call);
    if (!rc) return;
    rc->req = req;
    struct hf_target_fields f = {
        .ns = m->namespace_, .partition = m->partition, .ids = m->ids, .n_ids = m->n_ids,
        .segment = m->segment, .pools = m->pools, .n_pools = m->n_pools};
    if (!hf_target_parse(req, &rc->target, &f, HF_NEED_NAMES)) return;
    if (!hf_token_check(req, m->token, true)) return;
    hf_request_session_pause(req, m->token, false);
    if (rc->target.kind->delex && hf_front_release_uses_delex(req->d->redis)) {
        release_with_delex(rc, m->token);
        return;
    }
    hf_request_op_start(req);
    if (send_release(rc, m->token) != 0) {
        hf_answer_redis_failure(req, rc->target.ns, HF_REDIS_NOT_SENT, "release");
        hf_request_op_done(req);
    }
}
