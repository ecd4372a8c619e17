/* validate.c - character-class checks for identifiers that reach Redis keys,
 * SQL parameters and logs, the UTF-8 check of free text, the W3C
 * traceparent, and repeated names in one request. */
#include "validate.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static bool name_char(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
           (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

bool hf_valid_name(const char *s, size_t len) {
    if (!s || len == 0 || len > HF_NAME_MAX) return false;
    for (size_t i = 0; i < len; i++)
        if (!name_char(s[i])) return false;
    return true;
}

bool hf_valid_ref_id(const char *s, size_t len) {
    if (!s || len == 0 || len > HF_NAME_MAX) return false;
    for (size_t i = 0; i < len; i++)
        if (!name_char(s[i]) && s[i] != ':') return false;
    return true;
}

bool hf_valid_utf8(const char *str, size_t n) {
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        size_t len;
        uint32_t cp;
        if (c < 0x80) {
            i++;
            continue;
        }
        if ((c & 0xE0) == 0xC0) len = 2, cp = c & 0x1F;
        else if ((c & 0xF0) == 0xE0) len = 3, cp = c & 0x0F;
        else if ((c & 0xF8) == 0xF0) len = 4, cp = c & 0x07;
        else return false;
        if (len > n - i) return false;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
            cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += len;
    }
    return true;
}

/* n lowercase hex digits; *nonzero set when any is not '0'. */
static bool lower_hex(const char *s, size_t n, bool *nonzero) {
    bool nz = false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
        nz |= c != '0';
    }
    if (nonzero) *nonzero = nz;
    return true;
}

static unsigned hex_value(char c) { return c <= '9' ? (unsigned)(c - '0') : (unsigned)(c - 'a' + 10); }

bool hf_traceparent_parse(const char *s, size_t len, char out[HF_TRACEPARENT_LEN + 1]) {
    out[0] = '\0';
    if (!s || len < HF_TRACEPARENT_LEN) return false;
    bool trace_nz, parent_nz;
    if (!lower_hex(s, 2, NULL) || memcmp(s, "ff", 2) == 0) return false;
    if (s[2] != '-' || s[35] != '-' || s[52] != '-') return false;
    if (!lower_hex(s + 3, 32, &trace_nz) || !trace_nz) return false;
    if (!lower_hex(s + 36, 16, &parent_nz) || !parent_nz) return false;
    if (!lower_hex(s + 53, 2, NULL)) return false;
    bool v00 = s[0] == '0' && s[1] == '0';
    if (v00 && len != HF_TRACEPARENT_LEN) return false;
    if (!v00 && len > HF_TRACEPARENT_LEN && s[HF_TRACEPARENT_LEN] != '-') return false;
    memcpy(out, s, HF_TRACEPARENT_LEN);
    out[HF_TRACEPARENT_LEN] = '\0';
    if (!v00) {
        /* A later version's other flags mean nothing in version 00. */
        static const char hex[] = "0123456789abcdef";
        out[0] = out[1] = '0';
        out[53] = '0';
        out[54] = hex[hex_value(s[54]) & 1];
    }
    return true;
}

/* Small lists are compared pairwise; larger ones are sorted, so that a
 * request with limits.max_ids names costs O(n log n) on the loop. */
#define PAIRWISE_MAX 16

struct name_at {
    const char *name;
    size_t index;
};

static int by_name_then_index(const void *a, const void *b) {
    const struct name_at *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c) return c;
    return x->index < y->index ? -1 : x->index > y->index;
}

size_t hf_first_duplicate(char *const *names, size_t n) {
    if (n <= PAIRWISE_MAX) {
        for (size_t i = 1; i < n; i++)
            for (size_t j = 0; j < i; j++)
                if (strcmp(names[i], names[j]) == 0) return i;
        return n;
    }
    struct name_at *sorted = malloc(n * sizeof *sorted);
    if (!sorted) return n; /* cannot tell; Redis would see the same key twice, harmlessly */
    for (size_t i = 0; i < n; i++) sorted[i] = (struct name_at){names[i], i};
    qsort(sorted, n, sizeof *sorted, by_name_then_index);
    /* In each run of equal names every element but the first repeats an
     * earlier one; the earliest such repeat is the one reported. */
    size_t first = n;
    for (size_t i = 1; i < n; i++)
        if (strcmp(sorted[i].name, sorted[i - 1].name) == 0 && sorted[i].index < first)
            first = sorted[i].index;
    free(sorted);
    return first;
}
