/* target.h - what a request acts on. A namespace's kind (seats or pools)
 * decides how the request's fields become items and keys, and supplies the
 * few things that differ per kind: the library function of each step, the
 * answers from its codes and replies, the claim statements, the Redis update
 * after a commit. From there every op has one path for every kind; segments
 * are seats whose items are legs ("<id>@<leg>", expanded at the door).
 *
 * Validators answer the request themselves when they fail (false). */
#ifndef HF_TARGET_H
#define HF_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "argv.h"
#include "confirm_outcome.h"
#include "keys.h"
#include "redis_front.h"
#include "request.h"

struct hf_kind;
struct hf_target_load;

/* The fields of a request that name its target (borrowed from its message). */
struct hf_target_fields {
    const char *ns;
    const char *partition;
    char **ids;
    size_t n_ids;
    const Holdfast__V1__Segment *segment;
    Holdfast__V1__PoolTake *const *units; /* units with counts (Hold, Confirm, Cancel) */
    size_t n_units;
    char **pools;                         /* pool names (Extend, Release, Status) */
    size_t n_pools;
};

/* What a request acts on; lives inside the op's context. */
struct hf_target {
    const struct hf_namespace *ns;
    const struct hf_kind *kind;
    const char *partition;
    char **items;           /* seat ids (legs expanded) or pool names */
    size_t n;
    uint32_t *counts;       /* units per pool; NULL for seats or names only */
    char **labels;          /* what logs and hooks see: the ids, or "pool=count" */
    struct hf_strs count_args; /* the counts as decimal strings (n = 0 without) */
    struct hf_keyset *keys;
    void *owned;            /* the kind's one allocation behind items/labels/counts */
};

/* The steps of the ops in Redis: each a library function and a run of the
 * target's keys. */
enum hf_step {
    HF_STEP_HOLD,          /* keys [0, waiters): hold */
    HF_STEP_HOLD_WAIT,     /* every key: hold, or queue (docs/waiting.md) */
    HF_STEP_EXTEND,
    HF_STEP_RELEASE,       /* the owner-checked release (also of a withdrawn grant) */
    HF_STEP_STATUS,
    HF_STEP_CONFIRM_CHECK,
    HF_STEP__COUNT
};

/* What the op needs the request to name. */
enum hf_target_need {
    HF_NEED_ITEMS,      /* Hold, Confirm, Cancel: seats' ids; pools' units with counts */
    HF_NEED_NAMES,      /* Extend, Release, Status: seats' ids; pool names */
    HF_NEED_POOL_NAMES, /* SetCapacity, GetCapacity: pool names (none: all), pools only */
};

/* Validate namespace, partition and the kind's items into *t and build its
 * keys (clear it with hf_target_clear from the context's free function).
 * Sets the request's ns, partition and ids for the log line. */
bool hf_target_parse(struct hf_request *req, struct hf_target *t,
                     const struct hf_target_fields *f, enum hf_target_need need);
void hf_target_clear(struct hf_target *t);
/* A context that is only a target (Extend, Status). */
struct hf_target *hf_target_context(struct hf_request *req);

/* The step's function and keys. */
enum hf_script_fn hf_target_fn(const struct hf_target *t, enum hf_step step);
struct hf_strs hf_target_keys(const struct hf_target *t, enum hf_step step);
/* Only the hold keys (seats: one per id, pools: none): what a session keeps. */
struct hf_strs hf_target_hold_keys(const struct hf_target *t);
/* Call the step's function on the target's keys; as hf_front_call. */
int hf_target_call(struct hf_request *req, const struct hf_target *t, enum hf_step step,
                   struct hf_redis_conn **conn, const struct hf_argv *args, hf_redis_cb *cb,
                   void *privdata) __attribute__((warn_unused_result));

/* ---- answers ---- */

/* A library code that is not GRANTED, from reply r ({code, index, extra});
 * r NULL: code and index as given, extra unknown. */
void hf_target_answer_code(struct hf_request *req, const struct hf_target *t, long long code,
                           long long index, long long extra);
/* The same from a whole reply {code, index[, extra]}. */
void hf_target_answer_reply(struct hf_request *req, const struct hf_target *t,
                            const redisReply *r);
/* The Status answer from the status function's reply; false when it has
 * another shape. */
bool hf_target_answer_status(struct hf_request *req, const struct hf_target *t,
                             const redisReply *r);
/* The item a 1-based index names ("?" when out of range). */
static inline const char *hf_target_item(const struct hf_target *t, long long index) {
    return index >= 1 && (size_t)index <= t->n ? t->items[index - 1] : "?";
}

/* ---- the state a kind keeps beside Redis (pools: the capacity mirror) ---- */

/* The reply said Redis lacks state the kind loads from PostgreSQL. */
bool hf_target_missing_state(const struct hf_target *t, long long code);
/* Load it; done(arg, ok, why) runs exactly once (ok=false: not answered yet).
 * The op is started (hf_request_op_start) while it runs. */
struct hf_target_load {
    struct hf_request *req;
    const struct hf_target *t;
    void (*done)(void *arg, bool ok, const char *why);
    void *arg;
    char why[200];
};
void hf_target_load_state(struct hf_target_load *l);

/* ---- the kinds ----
 *
 * What differs between the kinds of target, and nothing else: how a
 * request's fields become items, the library function and first key of each
 * step, the answers from the library's codes and from a status reply, the
 * claim statements and the Redis update after them. Each kind fills one
 * table (kind_seats.c, kind_pools.c); hf_target_parse picks it by the
 * namespace's kind, and the ops call these as helpers in straight-line code.
 * A kind calls keys.c, the front end and the request layer, never target.c:
 * target.c refers to the kinds' tables, and tools/check-calls.py fails on a
 * circle. */

struct hf_claim;

/* A step's function and the first of the target's keys it takes; it takes
 * them up to the waiters key (to the end for HF_STEP_HOLD_WAIT). */
struct hf_kind_step {
    enum hf_script_fn fn;
    uint8_t keys_from;
};

struct hf_kind {
    const char *name;             /* "seats" | "pools", for messages */
    enum hf_key_layout layout;
    struct hf_kind_step steps[HF_STEP__COUNT];
    /* A hold may be bound to its connection (docs/sessions.md). */
    bool sessions;
    /* Release frees and wakes in one call (hf1_release_wake on every key);
     * without, a release that freed something wakes the lines after it. */
    bool release_wakes;
    /* Release may go through the server's compare-and-delete (DELEX): the
     * hold keys are plain strings holding the token. */
    bool delex;
    /* The library answers HF_SC_POOL_MISS when Redis lacks state the kind
     * keeps in PostgreSQL: this loads it (NULL: the kind keeps none). */
    void (*load_state)(struct hf_target_load *l);

    /* Items from the request's fields into t->items, n, counts, labels,
     * count_args, owned. false: answered. */
    bool (*parse)(struct hf_request *req, struct hf_target *t, const struct hf_target_fields *f,
                  enum hf_target_need need);
    void (*answer_code)(struct hf_request *req, const struct hf_target *t, long long code,
                        long long index, long long extra);
    bool (*answer_status)(struct hf_request *req, const struct hf_target *t, const redisReply *r);
    /* The message of a Release that did not release everything: the first
     * item it did not (code, 1-based index) and how much it did. */
    void (*release_message)(const struct hf_target *t, long long code, long long index,
                            uint32_t released, char *out, size_t len);

    /* ---- claims (Confirm and Cancel, docs/confirm.md) ---- */
    const char *confirm_op, *cancel_op; /* holdfast.idempotency op names, logs */
    const char *sql_confirm, *sql_cancel;
    /* The hold is gone: the statement that binds the key to its final answer
     * and its parameters (the common ones are filled in by the op). */
    const char *sql_gone;
    /* Which confirm_check codes mean "gone" (the key is bound for good);
     * any other code is a wrong request, answered without binding. */
    bool (*is_gone)(long long code);
    /* The kind's own parameters of sql_gone, after the common six:
     * seats: the answer code and the id; pools: the pool. */
    size_t (*gone_params)(const struct hf_target *t, long long code, long long index,
                          const char **values);
    /* After a committed (or replayed) Confirm: the owner-checked Redis call
     * that marks the hold sold; its reply is the number of items marked.
     * 0, or negative when nothing was sent. */
    int (*mark)(struct hf_claim *c, uint32_t timeout_ms, hf_redis_cb *cb, void *privdata);
    size_t (*marks_expected)(const struct hf_claim *c);
    const char *(*marked)(const struct hf_claim *c); /* the log's after= when all were */
    /* A sale frees nothing to wait for, except seats without a marker
     * (released instead) and, with one, waiters who now answer CONFIRMED. */
    bool wakes_on_sale;
    void (*answer_confirmed)(struct hf_claim *c);
    /* After a committed Cancel: the Redis update (seats: drop the markers;
     * pools: the mirror), 0 or negative when nothing was sent (nothing to
     * send: 1); and the answer. */
    int (*after_cancel)(struct hf_claim *c, uint32_t timeout_ms, hf_redis_cb *cb,
                        void *privdata);
    const char *after_cancel_done; /* the log's after= */
    const char *after_cancel_fails; /* what follows when it fails, for the log */
    const char *after_mark_fails;
    void (*answer_cancelled)(struct hf_claim *c);
};

extern const struct hf_kind hf_kind_seats; /* kind_seats.c */
extern const struct hf_kind hf_kind_pools; /* kind_pools.c */

#endif
