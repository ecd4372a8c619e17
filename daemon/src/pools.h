/* pools.h - what the operations on pools share (namespaces of kind "pools",
 * docs/pools.md): the target (units or pools of one partition) and its keys,
 * answers from the library's pool codes, and the Redis mirror of what
 * PostgreSQL has (capacity, sold, version): loaded on a miss, written after
 * every commit. Each validator answers the request itself when it fails. */
#ifndef HF_POOLS_H
#define HF_POOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ops_common.h"
#include "pg_pool.h"

/* Units one request may take from, confirm for or cancel of one pool. */
#define HF_POOL_MAX_UNITS 1000000u
/* A pool's capacity; Lua's numbers are exact far beyond it. */
#define HF_POOL_MAX_CAPACITY 1000000000000ull

/* What a pool request acts on; lives inside the op's context. */
struct hf_pool_target {
    /* t.ns; t.keys from hf_pool_keyset_build; t.ids = "pool=count" items
     * (with counts) or the pool names, t.n_ids = n. */
    struct hf_target t;
    char **names;      /* borrowed from the request's message */
    uint32_t *counts;  /* NULL when the request names pools only */
    char **units;      /* "pool=count", one allocation; NULL without counts */
    char **count_s;    /* the counts in decimal, for the scripts */
    size_t n;
};

/* The op goes to the pool code: the request names units or pools, or its
 * namespace is of kind "pools". */
bool hf_pool_request(const struct hf_request *req, const char *ns, size_t n_pool_items);

/* Validate the namespace (of kind pools), the partition and either `units`
 * (with_counts: counts 1..HF_POOL_MAX_UNITS) or `pools` (names; allow_empty:
 * 0 of them is fine) into *p; n_ids: the request's ids, which must be empty.
 * false: the request has been answered. Clear *p with hf_pool_target_clear. */
bool hf_pool_target_parse(struct hf_request *req, struct hf_pool_target *p, const char *ns,
                          const char *partition, size_t n_ids,
                          Holdfast__V1__PoolTake *const *units, size_t n_units,
                          char **pools, size_t n_pools, bool with_counts, bool allow_empty);
void hf_pool_target_clear(struct hf_pool_target *p);

/* The keys of the per-pool pairs (hash, holds), and the same preceded by
 * the partition's default. */
const char *const *hf_pool_pair_keys(const struct hf_pool_target *p, size_t *n,
                                     const size_t **lens);
const char *const *hf_pool_default_keys(const struct hf_pool_target *p, size_t *n,
                                        const size_t **lens);

/* Answer from a pool code that is not GRANTED (index 1-based into the
 * pools; extra: units free / left / held, as the code says). */
void hf_pool_answer_code(struct hf_request *req, const struct hf_pool_target *p,
                         long long code, long long index, long long extra);

/* ---- the mirror ---- */

/* A pool as PostgreSQL has it. known=false: leave the mirror alone. */
struct hf_pool_row {
    bool known;
    bool own;          /* a capacity of its own; else the partition's default */
    long long capacity;
    long long sold;
    long long version; /* 0: no row yet */
};

/* hf1_pool_mark_sold: take `token`'s units (if it is not NULL) out of the
 * holds and write rows[i] (NULL: none) and *def (NULL: none) into the
 * mirror. The reply is the number of pools the token still held. As
 * hf_front_call. */
int hf_pool_mirror_write(struct hf_request *req, const struct hf_pool_target *p,
                         const char *token, const struct hf_pool_row *rows,
                         const struct hf_pool_row *def, uint32_t timeout_ms, hf_redis_cb *cb,
                         void *privdata) __attribute__((warn_unused_result));

/* Parse holdfast.pool_state() rows (pool, own, capacity, sold, version; the
 * default last, as '*') into rows[0..n-1] and *def. false: not that shape. */
bool hf_pool_state_parse(const PGresult *res, size_t n, struct hf_pool_row *rows,
                         struct hf_pool_row *def);
/* SELECT ... FROM holdfast.pool_state($1, $2, $3::text[]) */
extern const char HF_SQL_POOL_STATE[];

/* Loading the mirror from PostgreSQL: holdfast.pool_state(), then
 * hf1_pool_mark_sold without a token. Lives in the op's context; the op is
 * started (hf_request_op_start) while it runs. done(arg, ok, why) runs
 * exactly once; with ok=false the request is not answered yet. */
struct hf_pool_mirror {
    struct hf_request *req;
    const struct hf_pool_target *p;
    void (*done)(void *arg, bool ok, const char *why);
    void *arg;
    char why[200];
};
void hf_pool_mirror_load(struct hf_pool_mirror *m);

#endif
