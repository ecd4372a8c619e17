/* claim.h - what Confirm and Cancel share, as a library the two ops call in
 * the order of their algorithm (docs/confirm.md): the checks, the one
 * statement (its result refused / not sent / in doubt -> confirm_resolve.c,
 * all settled here), the answer to a refusal, and the timing and logging of
 * the Redis update after a decision. The ops decide what comes next. */
#ifndef HF_CLAIM_H
#define HF_CLAIM_H

#include <stdbool.h>
#include <stdint.h>

#include "confirm_db.h"
#include "confirm_outcome.h"
#include "confirm_resolve.h"
#include "target.h"

/* One Confirm or Cancel: the op's context. */
struct hf_claim {
    struct hf_target target;
    struct hf_request *req;
    bool confirm;          /* a Confirm; else a Cancel */
    const char *op;        /* the kind's confirm_op or cancel_op: SQL op name, logs */
    const char *token;     /* Confirm: borrowed from the request; Redis only */
    uint64_t fence;
    const char *key;
    const char *reference;
    const char *payload;
    size_t payload_len;
    char *ids_array;       /* the target's labels as a PostgreSQL text[] literal */
    bool hold_ours;        /* confirm_check passed: ours to mark after a commit */
    const char *gone_why;  /* Confirm, hold gone: why, for a first HOLD_LOST answer */
    struct hf_keyset *clear_keys; /* Cancel of seats: the cancelled ids' keys */
    struct hf_outcome out;
    struct hf_db_note note; /* the log line's db= and after= */
    /* Private. */
    void (*decided)(struct hf_claim *c);
    struct hf_resolve resolve;
};

/* The context with its target parsed; op is "confirm" or "cancel" (the
 * kind's name for it is taken). NULL: the request has been answered. */
struct hf_claim *hf_claim_create(struct hf_request *req, const struct hf_target_fields *f,
                                 bool confirm);
/* A confirmable namespace, PostgreSQL configured and connected, a valid key
 * and reference, and the admit hook's yes. false: answered. */
bool hf_claim_check(struct hf_claim *c, const char *key, const char *reference);
/* Checks passed: the op starts, and from here every path ends in
 * hf_claim_done. false: the request has been answered. */
bool hf_claim_start(struct hf_claim *c);
void hf_claim_done(struct hf_claim *c);

/* Lock waits inside the SQL function end by then (ms), so a blocked call
 * rolls back cleanly inside the request's deadline. */
uint32_t hf_claim_lock_budget(const struct hf_claim *c);
/* Run the op's statement with the common leading parameters (ns, partition,
 * the labels' array) followed by `more` (text; payload_at: the index in
 * `more` of a binary payload, or -1). `decided` runs once the database's
 * decision is in c->out (in doubt: once it was settled); any other end is
 * answered here and ends with hf_claim_done. */
void hf_claim_run(struct hf_claim *c, const char *sql, const char *const *more, int n_more,
                  int payload_at, void (*decided)(struct hf_claim *c));
/* c->out is a refusal (anything but OK): answer it and end. */
void hf_claim_refused(struct hf_claim *c);

/* The timeout for a Redis call after the database decided; with too little
 * time left *answer_first says to answer before sending it. */
uint32_t hf_claim_after_timeout(struct hf_claim *c, bool *answer_first);
/* That Redis call failed: logged and counted, never an error. */
void hf_claim_after_failed(struct hf_claim *c, const char *why, const char *what_follows);

#endif
