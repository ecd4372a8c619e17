/* keys.c - builds hold and fence keys. The hash tag {ns:partition} keeps a
 * partition on one cluster slot so multi-id scripts never hit CROSSSLOT. */
#include "keys.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FENCE_SUFFIX "#fence"

struct hf_keyset *hf_keyset_build(const char *ns, const char *partition,
                                  char *const *ids, size_t n_ids) {
    size_t prefix_len = strlen("hf:{") + strlen(ns) + 1 + strlen(partition) + strlen("}:");
    size_t text = prefix_len + strlen(FENCE_SUFFIX) + 1;
    for (size_t i = 0; i < n_ids; i++) text += prefix_len + strlen(ids[i]) + 1;
    size_t count = n_ids + 1;
    size_t header = sizeof(struct hf_keyset) + count * (sizeof(char *) + sizeof(size_t));
    struct hf_keyset *ks = malloc(header + text);
    if (!ks) return NULL;
    ks->count = count;
    ks->keys = (const char **)(ks + 1);
    ks->lens = (size_t *)(ks->keys + count);
    char *p = (char *)(ks->lens + count);
    /* "hf:{<ns>:<partition>}:" once, then copied in front of every suffix. */
    char *prefix = p;
    size_t nl = strlen(ns), pl = strlen(partition);
    memcpy(p, "hf:{", 4);
    memcpy(p + 4, ns, nl);
    p[4 + nl] = ':';
    memcpy(p + 5 + nl, partition, pl);
    memcpy(p + 5 + nl + pl, "}:", 2);
    for (size_t i = 0; i < count; i++) {
        const char *suffix = i == 0 ? FENCE_SUFFIX : ids[i - 1];
        size_t sl = strlen(suffix);
        if (p != prefix) memcpy(p, prefix, prefix_len);
        memcpy(p + prefix_len, suffix, sl);
        p[prefix_len + sl] = '\0';
        ks->keys[i] = p;
        ks->lens[i] = prefix_len + sl;
        p += prefix_len + sl + 1;
    }
    return ks;
}

void hf_keyset_free(struct hf_keyset *ks) { free(ks); }

#define POOL_DEFAULT_SUFFIX "#pooldefault"
#define POOL_HASH_PREFIX "#pool:"
#define POOL_HOLDS_PREFIX "#pexp:"

struct hf_keyset *hf_pool_keyset_build(const char *ns, const char *partition,
                                       char *const *pools, size_t n_pools) {
    size_t prefix_len = strlen("hf:{") + strlen(ns) + 1 + strlen(partition) + strlen("}:");
    size_t text = 2 * (prefix_len + 1) + strlen(FENCE_SUFFIX) + strlen(POOL_DEFAULT_SUFFIX);
    for (size_t i = 0; i < n_pools; i++)
        text += 2 * (prefix_len + strlen(pools[i]) + 1) + strlen(POOL_HASH_PREFIX) +
                strlen(POOL_HOLDS_PREFIX);
    size_t count = HF_POOL_KEYS_BEFORE + 2 * n_pools;
    size_t header = sizeof(struct hf_keyset) + count * (sizeof(char *) + sizeof(size_t));
    struct hf_keyset *ks = malloc(header + text);
    if (!ks) return NULL;
    ks->count = count;
    ks->keys = (const char **)(ks + 1);
    ks->lens = (size_t *)(ks->keys + count);
    char *p = (char *)(ks->lens + count);
    for (size_t i = 0; i < count; i++) {
        int n;
        if (i == 0)
            n = sprintf(p, "hf:{%s:%s}:%s", ns, partition, FENCE_SUFFIX);
        else if (i == 1)
            n = sprintf(p, "hf:{%s:%s}:%s", ns, partition, POOL_DEFAULT_SUFFIX);
        else
            n = sprintf(p, "hf:{%s:%s}:%s%s", ns, partition,
                        (i - HF_POOL_KEYS_BEFORE) % 2 ? POOL_HOLDS_PREFIX : POOL_HASH_PREFIX,
                        pools[(i - HF_POOL_KEYS_BEFORE) / 2]);
        ks->keys[i] = p;
        ks->lens[i] = (size_t)n;
        p += n + 1;
    }
    return ks;
}
