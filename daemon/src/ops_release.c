/* ops_release.c - Release: delete every key this token holds; say whether
 * all were released, or which one was held by another / not held /
 * confirmed. Through the library's script, or through native
 * DELEX key IFEQ token where the server has it (then a 0 is classified
 * with a GET, since DELEX alone cannot tell expired from another owner). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "numfmt.h"
#include "ops_common.h"
#include "ops_pool.h"
#include "pools.h"
#include "redis_front.h"
#include "session.h"
#include "wait_line.h"


#define CONFIRMED_PREFIX "!confirmed:"

/* released == n_ids -> OK; else the code of the first id not released. */
static void answer(struct hf_request *req, const struct hf_target *t, uint32_t released,
                   long long first_code, long long first_index, bool woken) {
    /* Redis answered: none of these keys is this token's any more, so they
     * leave the connection's session hold, if it is one. */
    hf_session_released(hf_request_session(req, false), req->msg->release->token,
                        t->keys->keys + 1, t->keys->lens + 1, t->keys->count - 1);
    /* Whoever waits in line for them tries now (docs/waiting.md). */
    if (released && !woken) hf_wait_wake(req->d, t, false);
    hf_response_msg resp = HOLDFAST__V1__RESPONSE__INIT;
    Holdfast__V1__ReleaseResponse rr = HOLDFAST__V1__RELEASE_RESPONSE__INIT;
    Holdfast__V1__ErrorDetail detail = HOLDFAST__V1__ERROR_DETAIL__INIT;
    char message[320] = "";
    rr.released = released;
    resp.result_case = HOLDFAST__V1__RESPONSE__RESULT_RELEASE;
    resp.release = &rr;
    if (first_code == HF_SC_GRANTED) {
        resp.code = HF_CODE(OK);
    } else {
        const char *id = first_index >= 1 && (size_t)first_index <= t->n_ids
                             ? t->ids[first_index - 1] : "";
        const char *what = "is not held (expired or never held)";
        resp.code = HF_CODE(NOT_HELD);
        if (first_code == HF_SC_HELD_BY_ANOTHER) {
            resp.code = HF_CODE(HELD_BY_ANOTHER);
            what = "is held by another token";
        } else if (first_code == HF_SC_CONFIRMED) {
            resp.code = HF_CODE(CONFIRMED);
            what = "is confirmed";
        }
        snprintf(message, sizeof message, "'%s' %s; %u of %zu released", id, what, released,
                 t->n_ids);
        resp.message = message;
        detail.resource_id = (char *)id;
        resp.error = &detail;
    }
    hf_request_reply(req, &resp);
}

struct delex_item;

/* The op's context (the DELEX fields are used on that path only). */
struct release_call {
    struct hf_target target;
    struct hf_request *req;
    struct hf_target *t;    /* &target */
    size_t outstanding;
    uint32_t released;
    bool failed;
    enum hf_redis_status failure;
    long long first_code;   /* classification of the first id not released */
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

static void on_release_reply(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct release_call *rc = privdata;
    struct hf_request *req = rc->req;
    struct hf_target *t = rc->t;
    long long code;
    if (status != HF_REDIS_OK) {
        hf_answer_redis_failure(req, t->ns, status, "release");
    } else if (!hf_reply_code(r, &code) || code < HF_SC_GRANTED || code > HF_SC_CONFIRMED) {
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL, "redis refused the release script");
    } else {
        answer(req, t, (uint32_t)hf_reply_int(r, 1), code, hf_reply_int(r, 2), true);
    }
    hf_request_op_done(req);
}

/* ---- the DELEX path ---- */

static void delex_finish(struct release_call *dc) {
    struct hf_request *req = dc->req;
    if (dc->failed)
        hf_answer_redis_failure(req, dc->t->ns, dc->failure, "release");
    else
        answer(req, dc->t, dc->released, dc->first_index ? dc->first_code : HF_SC_GRANTED,
               (long long)dc->first_index, false);
    hf_request_op_done(req);
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
    struct hf_keyset *ks = dc->t->keys;
    dc->outstanding = 1; /* guard while sending */
    for (size_t i = 0; i < dc->t->n_ids; i++) {
        if (dc->deleted[i]) continue;
        struct delex_item *item = &dc->items[i];
        const char *argv[] = {"GET", ks->keys[i + 1]};
        size_t lens[] = {3, ks->lens[i + 1]};
        if (hf_front_command(req->d->redis, NULL, ks->keys[i + 1], ks->lens[i + 1], 2, argv,
                               lens,
                               req->cfg->redis_command_timeout_ms,
                               on_classify, item) != 0) {
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
    if (!dc->failed && dc->released < dc->t->n_ids)
        classify_leftovers(dc);
    else
        delex_finish(dc);
}

static void release_with_delex(struct release_call *dc, const char *token) {
    struct hf_request *req = dc->req;
    struct hf_target *t = dc->t;
    dc->deleted = calloc(t->n_ids, 1);
    dc->items = calloc(t->n_ids, sizeof *dc->items);
    if (!dc->deleted || !dc->items) {
        hf_request_fail(req, HF_CODE(RESOURCE_EXHAUSTED), NULL, NULL, "out of memory");
        return;
    }
    for (size_t i = 0; i < t->n_ids; i++) dc->items[i] = (struct delex_item){dc, i};
    hf_request_op_start(req);
    /* One connection for all ids (one partition, so one node in a cluster). */
    struct hf_redis_conn *conn =
        hf_front_pick(req->d->redis, t->keys->keys[1], t->keys->lens[1]);
    dc->outstanding = 1; /* guard while sending */
    for (size_t i = 0; conn && i < t->n_ids; i++) {
        struct delex_item *item = &dc->items[i];
        /* DELEX key IFEQ token (Redis 8.4+) or DELIFEQ key token (Valkey 9). */
        const char *delex[] = {"DELEX", t->keys->keys[i + 1], "IFEQ", token};
        size_t delex_lens[] = {5, t->keys->lens[i + 1], 4, strlen(token)};
        const char *delifeq[] = {"DELIFEQ", t->keys->keys[i + 1], token};
        size_t delifeq_lens[] = {7, t->keys->lens[i + 1], strlen(token)};
        bool native_valkey = hf_front_release_command(req->d->redis) == HF_DELEX_DELIFEQ;
        const char **argv = native_valkey ? delifeq : delex;
        size_t *lens = native_valkey ? delifeq_lens : delex_lens;
        if (hf_front_command(req->d->redis, conn, t->keys->keys[i + 1], t->keys->lens[i + 1],
                               native_valkey ? 3 : 4, argv, lens,
                               req->cfg->redis_command_timeout_ms,
                               on_delex_reply, item) != 0) {
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

void hf_op_release(struct hf_request *req) {
    Holdfast__V1__ReleaseRequest *m = req->msg->release;
    if (hf_pool_request(req, m->namespace_, m->n_pools)) {
        hf_pool_release(req);
        return;
    }
    struct release_call *rc = hf_request_context(req, sizeof *rc, free_release_call);
    if (!rc) return;
    rc->req = req;
    struct hf_target *t = rc->t = &rc->target;
    if (!hf_target_parse(req, t, m->namespace_, m->partition, m->ids, m->n_ids,
                         m->segment)) return;
    if (!hf_token_check(req, m->token, true)) return;
    hf_request_session_pause(req, m->token, false);
    if (hf_front_release_uses_delex(req->d->redis)) {
        release_with_delex(rc, m->token);
        return;
    }
    /* One call releases and wakes whoever waits in line for what it freed
     * (docs/waiting.md): the hold keys, the partition's waiters, the lines. */
    size_t n = t->keys->count - 1;
    char **extra = NULL;
    size_t *extra_lens = NULL;
    const char **keys = malloc((2 * n + 1) * sizeof *keys);
    size_t *key_lens = malloc((2 * n + 1) * sizeof *key_lens);
    if (!keys || !key_lens ||
        !hf_wait_release_keys(t->keys->keys + 1, t->keys->lens + 1, n, &extra, &extra_lens)) {
        free(keys);
        free(key_lens);
        hf_request_fail(req, HF_CODE(RESOURCE_EXHAUSTED), NULL, NULL, "out of memory");
        return;
    }
    memcpy(keys, t->keys->keys + 1, n * sizeof *keys);
    memcpy(key_lens, t->keys->lens + 1, n * sizeof *key_lens);
    memcpy(keys + n, extra, (n + 1) * sizeof *keys);
    memcpy(key_lens + n, extra_lens, (n + 1) * sizeof *key_lens);
    char n_s[24];
    size_t n_len = hf_u64_dec(n_s, n);
    const char *args[] = {m->token, n_s};
    size_t lens[] = {strlen(m->token), n_len};
    hf_request_op_start(req);
    int rc_send = hf_front_call(req->d->redis, NULL, HF_FN_RELEASE_WAKE, 2 * n + 1, keys,
                                key_lens, 2, args, lens, req->cfg->redis_command_timeout_ms,
                                on_release_reply, rc);
    hf_wait_keys_free(extra, extra_lens, n + 1);
    free(keys);
    free(key_lens);
    if (rc_send != 0) {
        hf_answer_redis_failure(req, t->ns, HF_REDIS_NOT_SENT, "release");
        hf_request_op_done(req);
    }
}
