/* target.c - the door every request on a target comes through: namespace and
 * partition checked once for every kind, then the kind's items and keys. */
#include "target.h"

#include <stdlib.h>
#include <string.h>

#include "ops_common.h"
#include "validate.h"

static const struct hf_kind *kind_of(const struct hf_namespace *ns) {
    return ns->kind == HF_KIND_POOLS ? &hf_kind_pools : &hf_kind_seats;
}

/* The namespace: required, well-formed, configured. */
static const struct hf_namespace *namespace_of(struct hf_request *req, const char *name) {
    if (!name || !*name) {
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), "namespace", NULL, "namespace is required");
        return NULL;
    }
    if (!hf_valid_name(name, strlen(name))) {
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), "namespace", NULL,
                        "namespace must be 1-128 bytes of [A-Za-z0-9._-]");
        return NULL;
    }
    const struct hf_namespace *ns = hf_config_namespace(req->cfg, name);
    if (!ns)
        hf_request_fail(req, HF_CODE(NOT_FOUND), "namespace", NULL,
                        "namespace '%s' is not configured", name);
    return ns;
}

bool hf_target_parse(struct hf_request *req, struct hf_target *t,
                     const struct hf_target_fields *f, enum hf_target_need need) {
    const struct hf_namespace *ns = namespace_of(req, f->ns);
    if (!ns) return false;
    req->ns = ns->name;
    if (!f->partition || !hf_valid_name(f->partition, strlen(f->partition))) {
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), "partition", NULL,
                        "partition must be 1-128 bytes of [A-Za-z0-9._-]");
        return false;
    }
    req->partition = f->partition;
    t->ns = ns;
    t->kind = kind_of(ns);
    t->partition = f->partition;
    if (!t->kind->parse(req, t, f, need)) return false;
    /* The log line names the ids (legs), or the units ("adult=2"). */
    req->ids = t->labels;
    req->n_ids = t->n;
    t->keys = hf_keyset_build(t->kind->layout, ns->name, f->partition, t->items, t->n);
    if (!t->keys) {
        hf_request_fail(req, HF_CODE(RESOURCE_EXHAUSTED), NULL, NULL, "out of memory");
        return false;
    }
    return true;
}

void hf_target_clear(struct hf_target *t) {
    hf_keyset_free(t->keys);
    free(t->owned);
    memset(t, 0, sizeof *t);
}

static void free_target_context(void *ctx) { hf_target_clear(ctx); }

struct hf_target *hf_target_context(struct hf_request *req) {
    return hf_request_context(req, sizeof(struct hf_target), free_target_context);
}

enum hf_script_fn hf_target_fn(const struct hf_target *t, enum hf_step step) {
    return t->kind->steps[step].fn;
}

struct hf_strs hf_target_keys(const struct hf_target *t, enum hf_step step) {
    const struct hf_keyset *ks = t->keys;
    size_t to = step == HF_STEP_HOLD_WAIT ? ks->count : ks->waiters;
    return hf_keys_run(ks, t->kind->steps[step].keys_from, to);
}

struct hf_strs hf_target_hold_keys(const struct hf_target *t) {
    if (t->kind->layout != HF_KEYS_SEATS) return (struct hf_strs){0};
    return hf_keys_run(t->keys, 1, t->keys->waiters);
}

int hf_target_call(struct hf_request *req, const struct hf_target *t, enum hf_step step,
                   struct hf_redis_conn **conn, const struct hf_argv *args, hf_redis_cb *cb,
                   void *privdata) {
    return hf_front_call(req->d->redis, conn, hf_target_fn(t, step), hf_target_keys(t, step),
                         args, req->cfg->redis_command_timeout_ms, cb, privdata);
}

void hf_target_answer_code(struct hf_request *req, const struct hf_target *t, long long code,
                           long long index, long long extra) {
    t->kind->answer_code(req, t, code, index, extra);
}

void hf_target_answer_reply(struct hf_request *req, const struct hf_target *t,
                            const redisReply *r) {
    long long code;
    if (!hf_reply_code(r, &code)) {
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL, "redis refused the script");
        return;
    }
    long long extra = r->elements > 2 ? hf_reply_int(r, 2) : -1;
    t->kind->answer_code(req, t, code, hf_reply_int(r, 1), extra);
}

bool hf_target_answer_status(struct hf_request *req, const struct hf_target *t,
                             const redisReply *r) {
    return t->kind->answer_status(req, t, r);
}

bool hf_target_missing_state(const struct hf_target *t, long long code) {
    return t->kind->load_state && code == HF_SC_POOL_MISS;
}

void hf_target_load_state(struct hf_target_load *l) { l->t->kind->load_state(l); }
