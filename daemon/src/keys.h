/* keys.h - the Redis key layout: hf:{<ns>:<partition>}:<id> and :#fence. */
#ifndef HF_KEYS_H
#define HF_KEYS_H

#include <stddef.h>

/* A set of keys for one request, in one allocation: keys[0] is the
 * partition's fence counter, keys[1..n] the hold keys of the ids in order. */
struct hf_keyset {
    size_t count;      /* n ids + 1 */
    const char **keys;
    size_t *lens;
};

/* Build the keys; ns, partition and ids must already be validated.
 * Returns NULL on allocation failure. Free with hf_keyset_free. */
struct hf_keyset *hf_keyset_build(const char *ns, const char *partition,
                                  char *const *ids, size_t n_ids);
void hf_keyset_free(struct hf_keyset *ks);

/* Pools (docs/pools.md): keys[0] the fence counter, keys[1] the partition's
 * default capacity (:#pooldefault), then per pool its hash (:#pool:<pool>)
 * and its holds (:#pexp:<pool>), so count = 2 + 2 * n_pools. Pool names are
 * validated like ids ('#' and ':' never occur in one). */
#define HF_POOL_KEYS_BEFORE 2
struct hf_keyset *hf_pool_keyset_build(const char *ns, const char *partition,
                                       char *const *pools, size_t n_pools);

#endif
