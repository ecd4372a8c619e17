/* argv.c - the builder of a Redis call's keys or arguments. */
#include "argv.h"

#include <stdlib.h>
#include <string.h>

#include "numfmt.h"

void hf_argv_init(struct hf_argv *a) {
    a->n = 0;
    a->cap = HF_ARGV_INLINE;
    a->v = a->inline_v;
    a->lens = a->inline_lens;
    a->failed = false;
    a->n_numbers = 0;
}

void hf_argv_free(struct hf_argv *a) {
    if (a->v != a->inline_v) {
        free(a->v);
        free(a->lens);
    }
    hf_argv_init(a);
}

static bool grow(struct hf_argv *a) {
    size_t cap = 2 * a->cap;
    const char **v = malloc(cap * sizeof *v);
    size_t *lens = malloc(cap * sizeof *lens);
    if (!v || !lens) {
        free(v);
        free(lens);
        a->failed = true;
        return false;
    }
    memcpy(v, a->v, a->n * sizeof *v);
    memcpy(lens, a->lens, a->n * sizeof *lens);
    if (a->v != a->inline_v) {
        free(a->v);
        free(a->lens);
    }
    a->v = v;
    a->lens = lens;
    a->cap = cap;
    return true;
}

void hf_argv_add(struct hf_argv *a, const char *s, size_t len) {
    if (a->failed || (a->n == a->cap && !grow(a))) return;
    a->v[a->n] = s;
    a->lens[a->n++] = len;
}

void hf_argv_add_str(struct hf_argv *a, const char *s) { hf_argv_add(a, s, strlen(s)); }

void hf_argv_add_u64(struct hf_argv *a, uint64_t v) {
    if (a->n_numbers == HF_ARGV_NUMBERS) {
        a->failed = true; /* a call with more numbers is a bug; never sent */
        return;
    }
    char *digits = a->numbers[a->n_numbers++];
    hf_argv_add(a, digits, hf_u64_dec(digits, v));
}

void hf_argv_add_strs(struct hf_argv *a, struct hf_strs s) {
    for (size_t i = 0; i < s.n; i++) hf_argv_add(a, s.v[i], s.lens[i]);
}

struct hf_strs hf_argv_strs(const struct hf_argv *a) {
    return (struct hf_strs){.v = a->v, .lens = a->lens, .n = a->failed ? 0 : a->n};
}
