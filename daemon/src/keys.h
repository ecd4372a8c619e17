/* keys.h - the Redis key layout. Every key of a partition carries the hash
 * tag {<ns>:<partition>}, so a partition lives on one cluster slot:
 *
 *   hf:{ns:partition}:#fence          the fence counter
 *   hf:{ns:partition}:<id>            a seat's hold (value: the token)
 *   hf:{ns:partition}:#pooldefault    pools: the partition's default capacity
 *   hf:{ns:partition}:#pool:<pool>    pools: a pool's hash (docs/pools.md)
 *   hf:{ns:partition}:#pexp:<pool>    pools: its holds by expiry
 *   hf:{ns:partition}:#waiters        waiting in line: the live tickets
 *   hf:{ns:partition}:#line:<id>      a seat's line (docs/waiting.md)
 *   hf:{ns:partition}:#pline:<pool>   a pool's line
 *
 * Names are validated before they get here ([A-Za-z0-9._-], or an id with
 * "@<leg>"), so no name can forge a '#'-key or another partition's tag. */
#ifndef HF_KEYS_H
#define HF_KEYS_H

#include <stdbool.h>
#include <stddef.h>

#include "argv.h"

/* How the keys of one target are laid out. */
enum hf_key_layout {
    HF_KEYS_SEATS, /* fence, one hold key per id */
    HF_KEYS_POOLS, /* fence, default, per pool its hash and its holds */
};

/* Every key a request on one target may name, in one allocation, in the
 * order the library's functions take them:
 *
 *   [0]             the fence counter
 *   [1, waiters)    the hold keys (pools: the default first, then per pool
 *                   its hash and its holds)
 *   [waiters]       the partition's waiters
 *   (waiters, count) one line per item
 *
 * so each function's keys are one contiguous run (hf_keys_run). */
struct hf_keyset {
    size_t count;
    size_t waiters;  /* index of the waiters key */
    const char **keys;
    size_t *lens;
};

/* ns, partition and items must already be validated. NULL on OOM. */
struct hf_keyset *hf_keyset_build(enum hf_key_layout layout, const char *ns,
                                  const char *partition, char *const *items, size_t n_items);
/* NULL is a no-op. */
void hf_keyset_free(struct hf_keyset *ks);

/* keys[from, to) of a keyset. */
struct hf_strs hf_keys_run(const struct hf_keyset *ks, size_t from, size_t to);
/* The partition's waiters and the lines: what a wake-up or leaving a line takes. */
struct hf_strs hf_keys_lines(const struct hf_keyset *ks);

/* The waiters key and the lines of seat hold keys of one partition (a
 * session's, which keeps only its hold keys), in one allocation like a
 * keyset (its [0] is the waiters key, waiters = 0). NULL on OOM or when a
 * key is not a seat hold key. */
struct hf_keyset *hf_keyset_lines_of(const char *const *hold_keys, const size_t *lens, size_t n);

/* The length of "hf:{<ns>:<partition>}:" in front of a key, 0 when the key
 * has another shape. */
size_t hf_key_prefix_len(const char *key, size_t len);

#endif
