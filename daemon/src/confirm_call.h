/* confirm_call.h - what Confirm and Cancel share: the op's context (a claim
 * call), the checks, the one statement with its result handling (refused,
 * not sent, in doubt -> confirm_resolve.c), and the answer from the
 * database's decision. Each op supplies what happens after an OK. */
#ifndef HF_CONFIRM_CALL_H
#define HF_CONFIRM_CALL_H

#include <stdbool.h>
#include <stdint.h>

#include "confirm_outcome.h"
#include "confirm_resolve.h"
#include "ops_common.h"
#include "pools.h"

struct claim_call;

struct claim_kind {
    const char *word; /* "confirm" | "cancel": SQL op name, logs */
    /* The database said OK (new, replayed or resolved): answer, update
     * Redis if needed, and end with hf_claim_done. */
    void (*on_ok)(struct claim_call *cc);
    /* What follows when the Redis update after a commit fails (for the log). */
    const char *if_update_fails;
    /* Units of pools (ops_pool_claim.c): answers name pools. */
    bool units;
    /* Confirms (hf_claim_confirmed): the answer from cc->out, and the
     * owner-checked Redis step after a commit, which sends one call whose
     * integer reply counts the items it marked and returns NULL, or returns
     * why it sent nothing. */
    void (*answer)(struct claim_call *cc);
    const char *(*mark)(struct claim_call *cc, uint32_t timeout, hf_redis_cb *reply);
    /* What the mark should count, and cc->req->after_result when it does. */
    size_t (*marks_expected)(const struct claim_call *cc);
    const char *(*marked)(const struct claim_call *cc);
    /* Optional: the mark changed n > 0 items (Confirm wakes their waiters,
     * docs/waiting.md). */
    void (*after_marked)(struct claim_call *cc, long long n);
};

/* One Confirm or Cancel: the op's context. */
struct claim_call {
    struct hf_target target;
    struct hf_request *req;
    struct hf_target *t; /* &target */
    const struct claim_kind *kind;
    const char *token;   /* Confirm: borrowed from the request; Redis only */
    uint64_t fence;
    const char *key;
    const char *reference;
    const char *payload;
    size_t payload_len;
    char *ids_array;     /* the ids as a PostgreSQL text[] literal */
    bool hold_ours;      /* confirm_check passed: ours to mark after a commit */
    const char *gone_why; /* Confirm, hold gone: why, for a first HOLD_LOST answer */
    struct hf_keyset *clear_keys; /* Cancel: keys of the cancelled ids */
    struct hf_pool_target *pools; /* units of pools: the target cc->t points into */
    struct hf_outcome out;
    struct hf_resolve resolve;
};

/* The context, with its target parsed. NULL: the request has been answered. */
struct claim_call *hf_claim_create(struct hf_request *req, const struct claim_kind *kind,
                                   const char *ns, const char *partition, char **ids,
                                   size_t n_ids, const Holdfast__V1__Segment *segment);
/* The same for units of pools (hf_pool_target_parse): cc->pools, and cc->t
 * pointing at its target, whose ids are the "pool=count" items. */
struct claim_call *hf_claim_create_pools(struct hf_request *req, const struct claim_kind *kind,
                                         const char *ns, const char *partition, size_t n_ids,
                                         Holdfast__V1__PoolTake *const *units, size_t n_units);
/* What both need: a confirmable namespace, PostgreSQL, a valid key and
 * reference. false: the request has been answered. */
bool hf_claim_check(struct claim_call *cc, const char *key, const char *reference);
/* Checks passed: the op starts, and from here every path ends in
 * hf_claim_done. false: the request has been answered. */
bool hf_claim_start(struct claim_call *cc);
void hf_claim_done(struct claim_call *cc);

/* Lock waits inside the SQL function end by then (ms), so a blocked call
 * rolls back cleanly inside the request's deadline. */
uint32_t hf_claim_lock_budget(const struct claim_call *cc);
/* Run the op's statement; its result is settled by hf_claim_settle. */
void hf_claim_run(struct claim_call *cc, const char *sql, int nparams, const char *const *values,
                  const int *lengths, const int *formats);
/* Answer from cc->out (the database's decision). */
void hf_claim_settle(struct claim_call *cc);

/* The timeout for a Redis call after the database decided; with too little
 * time left *answer_first says to answer before sending it. */
uint32_t hf_claim_after_timeout(struct claim_call *cc, bool *answer_first);
/* That Redis call failed: logged and counted, never an error. */
void hf_claim_after_failed(struct claim_call *cc, const char *why);

/* A confirm_check reply (script: its name, for the answer): false when the
 * op is over (Redis failed or refused, the deadline passed, the fence does
 * not match the token's: answered and done); true with *code, and with
 * cc->hold_ours set when the hold is still this token's. */
bool hf_claim_check_reply(struct claim_call *cc, enum hf_redis_status status,
                          const redisReply *r, const char *script, long long *code);

/* A confirm's on_ok: when the hold was ours, the kind's mark then the
 * answer (the answer first when time is short); otherwise the answer. Ends
 * with hf_claim_done. */
void hf_claim_confirmed(struct claim_call *cc);

#endif
