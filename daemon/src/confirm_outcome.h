/* confirm_outcome.h - what holdfast.confirm/cancel/lookup/resolve return,
 * copied out of libpq's result (which callbacks only borrow); and the ids as
 * a text[] parameter. No I/O. */
#ifndef HF_CONFIRM_OUTCOME_H
#define HF_CONFIRM_OUTCOME_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The columns of holdfast.outcome, in order. */
#define HF_OUTCOME_COLUMNS "code, replayed, resource, fence, reference, at_ms"

enum hf_outcome_code {
    HF_OUT_OK,
    HF_OUT_CONFLICT,
    HF_OUT_STALE,
    HF_OUT_MISMATCH, /* the key was used for another request */
    HF_OUT_HOLD_LOST, /* confirm_gone: the key answers HOLD_LOST for good */
    HF_OUT_CONFIRMED, /* confirm_gone: ... CONFIRMED (a marker replaced the hold) */
    HF_OUT_NOT_CLAIMED,     /* cancel: an id has no claim; nothing cancelled */
    HF_OUT_OTHER_REFERENCE, /* cancel: an id is claimed under another reference */
    HF_OUT_SOLD_OUT, /* pool confirm: too few units left unsold (fence: how many) */
    HF_OUT_ABSENT,   /* look-ups: no record for the key */
    HF_OUT_UNKNOWN,  /* resolve: no record, and the statement may still run */
};

struct hf_outcome_row {
    char *resource;
    int64_t fence; /* 0 when NULL */
    char *reference;
    int64_t at_ms;
    /* Pool functions (holdfast.pool_outcome): the pool's state after the
     * call, for the Redis mirror; has_state false in replays. */
    bool has_state;
    bool own;
    int64_t capacity, sold, version;
};

struct hf_outcome {
    enum hf_outcome_code code;
    bool replayed;
    size_t n;
    struct hf_outcome_row *rows; /* the rows that name a resource */
};

/* Replace *o with the rows of `res`. false: not an outcome (or OOM). */
bool hf_outcome_parse(const PGresult *res, struct hf_outcome *o);
void hf_outcome_clear(struct hf_outcome *o);

/* {"12","13"} for a text[] parameter; malloc'd, NULL on OOM. */
char *hf_pg_text_array(char *const *ids, size_t n);

#endif
