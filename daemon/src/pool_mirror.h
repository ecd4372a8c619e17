/* pool_mirror.h - the Redis mirror of what PostgreSQL has for pools
 * (capacity, sold, version; docs/pools.md): loaded on a miss, written after
 * every commit and every capacity read or change. */
#ifndef HF_POOL_MIRROR_H
#define HF_POOL_MIRROR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pg_pool.h"
#include "target.h"

/* A pool's capacity; Lua's numbers are exact far beyond it. */
#define HF_POOL_MAX_CAPACITY 1000000000000ull

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
 * mirror of the pools of t. The reply is the number of pools the token
 * still held. As hf_front_call. */
int hf_pool_mirror_write(struct hf_request *req, const struct hf_target *t, const char *token,
                         const struct hf_pool_row *rows, const struct hf_pool_row *def,
                         uint32_t timeout_ms, hf_redis_cb *cb, void *privdata)
    __attribute__((warn_unused_result));

/* Parse holdfast.pool_state() rows (pool, own, capacity, sold, version; the
 * default last, as '*') into rows[0..n-1] and *def. false: not that shape. */
bool hf_pool_state_parse(const PGresult *res, size_t n, struct hf_pool_row *rows,
                         struct hf_pool_row *def);
/* SELECT ... FROM holdfast.pool_state($1, $2, $3::text[]) */
extern const char HF_SQL_POOL_STATE[];

/* Loading the mirror from PostgreSQL: holdfast.pool_state(), then
 * hf1_pool_mark_sold without a token (the pools kind's load_state). */
void hf_pool_mirror_load(struct hf_target_load *l);

#endif
