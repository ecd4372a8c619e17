/* keys.c - builds the keys of a target (see keys.h for the layout). */
#include "keys.h"

#include "validate.h"

#include <stdlib.h>
#include <string.h>

#define FENCE "#fence"
#define WAITERS "#waiters"
#define POOL_DEFAULT "#pooldefault"
#define POOL_HASH "#pool:"
#define POOL_HOLDS "#pexp:"
#define SEAT_LINE "#line:"
#define POOL_LINE "#pline:"

/* One key: the partition's prefix, a kind ("#line:", or "" for a seat's
 * hold), a name ("" for the fixed keys). */
struct part {
    const char *kind, *name;
    size_t kind_len, name_len;
};

static struct part part_of(const char *kind, const char *name) {
    return (struct part){kind, name, strlen(kind), strlen(name)};
}

/* The keyset for parts[0..count), each behind prefix. */
static struct hf_keyset *assemble(const char *prefix, size_t prefix_len, const struct part *parts,
                                  size_t count, size_t waiters) {
    size_t text = 0;
    for (size_t i = 0; i < count; i++)
        text += prefix_len + parts[i].kind_len + parts[i].name_len + 1;
    size_t header = sizeof(struct hf_keyset) + count * (sizeof(char *) + sizeof(size_t));
    struct hf_keyset *ks = malloc(header + text);
    if (!ks) return NULL;
    ks->count = count;
    ks->waiters = waiters;
    ks->keys = (const char **)(ks + 1);
    ks->lens = (size_t *)(ks->keys + count);
    char *p = (char *)(ks->lens + count);
    for (size_t i = 0; i < count; i++) {
        const struct part *k = &parts[i];
        ks->keys[i] = p;
        memcpy(p, prefix, prefix_len);
        memcpy(p + prefix_len, k->kind, k->kind_len);
        memcpy(p + prefix_len + k->kind_len, k->name, k->name_len);
        ks->lens[i] = prefix_len + k->kind_len + k->name_len;
        p[ks->lens[i]] = '\0';
        p += ks->lens[i] + 1;
    }
    return ks;
}

/* "hf:{<ns>:<partition>}:" into out (room for 2 * HF_NAME_MAX + 8: both are
 * validated names). */
static size_t write_prefix(char *out, const char *ns, const char *partition) {
    size_t nl = strlen(ns), pl = strlen(partition);
    memcpy(out, "hf:{", 4);
    memcpy(out + 4, ns, nl);
    out[4 + nl] = ':';
    memcpy(out + 5 + nl, partition, pl);
    memcpy(out + 5 + nl + pl, "}:", 2);
    return nl + pl + 7;
}

struct hf_keyset *hf_keyset_build(enum hf_key_layout layout, const char *ns,
                                  const char *partition, char *const *items, size_t n) {
    bool pools = layout == HF_KEYS_POOLS;
    size_t holds = pools ? 1 + 2 * n : n;
    size_t count = 1 + holds + 1 + n;
    char prefix[2 * HF_NAME_MAX + 8];
    struct part *parts = malloc(count * sizeof *parts);
    struct hf_keyset *ks = NULL;
    if (parts) {
        size_t k = 0;
        parts[k++] = part_of(FENCE, "");
        if (pools) parts[k++] = part_of(POOL_DEFAULT, "");
        for (size_t i = 0; i < n; i++) {
            if (pools) {
                parts[k++] = part_of(POOL_HASH, items[i]);
                parts[k++] = part_of(POOL_HOLDS, items[i]);
            } else {
                parts[k++] = part_of("", items[i]);
            }
        }
        size_t waiters = k;
        parts[k++] = part_of(WAITERS, "");
        for (size_t i = 0; i < n; i++) parts[k++] = part_of(pools ? POOL_LINE : SEAT_LINE, items[i]);
        ks = assemble(prefix, write_prefix(prefix, ns, partition), parts, count, waiters);
    }
    free(parts);
    return ks;
}

void hf_keyset_free(struct hf_keyset *ks) { free(ks); }

struct hf_strs hf_keys_run(const struct hf_keyset *ks, size_t from, size_t to) {
    return (struct hf_strs){.v = ks->keys + from, .lens = ks->lens + from, .n = to - from};
}

struct hf_strs hf_keys_lines(const struct hf_keyset *ks) {
    return hf_keys_run(ks, ks->waiters, ks->count);
}

size_t hf_key_prefix_len(const char *key, size_t len) {
    if (len < 4 || memcmp(key, "hf:{", 4) != 0) return 0;
    const char *end = memchr(key, '}', len);
    if (!end || (size_t)(end - key) + 2 > len || end[1] != ':') return 0;
    return (size_t)(end - key) + 2;
}

struct hf_keyset *hf_keyset_lines_of(const char *const *hold_keys, const size_t *lens, size_t n) {
    if (n == 0) return NULL;
    size_t prefix_len = hf_key_prefix_len(hold_keys[0], lens[0]);
    struct part *parts = malloc((n + 1) * sizeof *parts);
    if (!prefix_len || !parts) {
        free(parts);
        return NULL;
    }
    parts[0] = part_of(WAITERS, "");
    for (size_t i = 0; i < n; i++) {
        /* Keys of one partition share the prefix; a name never holds '#'. */
        if (hf_key_prefix_len(hold_keys[i], lens[i]) != prefix_len ||
            memcmp(hold_keys[i], hold_keys[0], prefix_len) != 0 ||
            hold_keys[i][prefix_len] == '#') {
            free(parts);
            return NULL;
        }
        parts[1 + i] = (struct part){SEAT_LINE, hold_keys[i] + prefix_len, strlen(SEAT_LINE),
                                     lens[i] - prefix_len};
    }
    struct hf_keyset *ks = assemble(hold_keys[0], prefix_len, parts, n + 1, 0);
    free(parts);
    return ks;
}
