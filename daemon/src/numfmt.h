/* numfmt.h - decimal digits without printf, for the request path (printf's
 * machinery was a tenth of the daemon's instructions per hold). */
#ifndef HF_NUMFMT_H
#define HF_NUMFMT_H

#include <stddef.h>
#include <stdint.h>

/* Writes v's digits and a NUL to out (at least 21 bytes); returns the
 * number of digits. */
static inline size_t hf_u64_dec(char *out, uint64_t v) {
    char rev[20];
    size_t n = 0;
    do {
        rev[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++) out[i] = rev[n - 1 - i];
    out[n] = '\0';
    return n;
}

#endif
