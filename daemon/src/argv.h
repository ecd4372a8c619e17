/* argv.h - the keys or the arguments of one Redis call: a run of strings with
 * their lengths, borrowed for the call (struct hf_strs), and a small builder
 * that collects them and formats numbers without printf (numfmt.h), so no
 * request path builds an argument with snprintf. */
#ifndef HF_ARGV_H
#define HF_ARGV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* n strings and their lengths; what a call sends as its KEYS or its ARGV. */
struct hf_strs {
    const char *const *v;
    const size_t *lens;
    size_t n;
};

/* Most calls take a handful of arguments: those stay inside the builder. */
#define HF_ARGV_INLINE 8
#define HF_ARGV_NUMBERS 4

/* Built in place (it points into itself: never copy one after
 * hf_argv_init). Strings added are borrowed, numbers are kept inside. */
struct hf_argv {
    size_t n, cap;
    const char **v;
    size_t *lens;
    bool failed; /* out of memory, or more numbers than it keeps: send nothing */
    size_t n_numbers;
    const char *inline_v[HF_ARGV_INLINE];
    size_t inline_lens[HF_ARGV_INLINE];
    char numbers[HF_ARGV_NUMBERS][21];
};

void hf_argv_init(struct hf_argv *a);
/* Frees what grew past the inline room; the builder may be used again. */
void hf_argv_free(struct hf_argv *a);
void hf_argv_add(struct hf_argv *a, const char *s, size_t len);
void hf_argv_add_str(struct hf_argv *a, const char *s); /* NUL-terminated */
void hf_argv_add_u64(struct hf_argv *a, uint64_t v);
/* Every string of a run. */
void hf_argv_add_strs(struct hf_argv *a, struct hf_strs s);
/* What to send; valid while the builder lives and is not changed. */
struct hf_strs hf_argv_strs(const struct hf_argv *a);

#endif
