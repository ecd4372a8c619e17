/* cluster_slots.c - hash slots and redirection parsing for Redis Cluster. */
#include "cluster_slots.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "address.h"

uint16_t hf_crc16_xmodem(const void *buf, size_t len) {
    const unsigned char *p = buf;
    uint16_t crc = 0;
    for (size_t i = 0; i < len; i++) {
        crc ^= (uint16_t)(p[i] << 8);
        for (int bit = 0; bit < 8; bit++)
            crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
    }
    return crc;
}

unsigned hf_cluster_keyslot(const char *key, size_t len) {
    const char *open = memchr(key, '{', len);
    if (open) {
        size_t from = (size_t)(open - key) + 1;
        const char *close = memchr(open + 1, '}', len - from);
        /* "{}" is no tag: the whole key is hashed, as Redis does. */
        if (close && close > open + 1)
            return hf_crc16_xmodem(open + 1, (size_t)(close - open - 1)) & (HF_CLUSTER_SLOTS - 1);
    }
    return hf_crc16_xmodem(key, len) & (HF_CLUSTER_SLOTS - 1);
}

void hf_cluster_addr_host(const char *addr, char *out, size_t outlen) {
    struct hf_address a;
    const char *why;
    bool tcp = hf_address_parse(addr, &a, &why) && !a.is_unix;
    /* Brackets kept: the host goes back into "host:port" (hf_cluster_addr_format). */
    snprintf(out, outlen, tcp && a.bracketed ? "[%s]" : "%s", tcp ? a.host : "");
}

bool hf_cluster_addr_format(char *out, size_t outlen, const char *host, size_t hostlen,
                            long long port, const char *self_host) {
    if (port <= 0 || port > 65535) return false;
    if (hostlen == 0 || (hostlen == 1 && host[0] == '?')) {
        host = self_host ? self_host : "";
        hostlen = strlen(host);
    }
    if (hostlen == 0) return false;
    int n = snprintf(out, outlen, "%.*s:%lld", (int)hostlen, host, port);
    return n > 0 && (size_t)n < outlen;
}

enum hf_redirect hf_cluster_parse_redirect(const char *err, size_t len, const char *self_host,
                                           unsigned *slot, char *addr, size_t addrlen) {
    enum hf_redirect kind;
    size_t skip;
    if (len > 6 && memcmp(err, "MOVED ", 6) == 0) {
        kind = HF_REDIRECT_MOVED;
        skip = 6;
    } else if (len > 4 && memcmp(err, "ASK ", 4) == 0) {
        kind = HF_REDIRECT_ASK;
        skip = 4;
    } else {
        return HF_REDIRECT_NONE;
    }
    /* <slot> */
    const char *p = err + skip, *end = err + len;
    unsigned long s = 0;
    const char *digits = p;
    while (p < end && *p >= '0' && *p <= '9' && p - digits < 6) s = s * 10 + (unsigned long)(*p++ - '0');
    if (p == digits || p >= end || *p != ' ' || s >= HF_CLUSTER_SLOTS) return HF_REDIRECT_NONE;
    p++;
    /* <host>:<port>, the rest of the line */
    const char *colon = NULL;
    for (const char *q = p; q < end; q++) {
        if (*q == ' ' || *q == '\r' || *q == '\n') {
            end = q;
            break;
        }
        if (*q == ':') colon = q;
    }
    if (!colon || colon + 1 >= end) return HF_REDIRECT_NONE;
    long long port = 0;
    for (const char *q = colon + 1; q < end; q++) {
        if (*q < '0' || *q > '9' || port > 65535) return HF_REDIRECT_NONE;
        port = port * 10 + (*q - '0');
    }
    if (!hf_cluster_addr_format(addr, addrlen, p, (size_t)(colon - p), port, self_host))
        return HF_REDIRECT_NONE;
    *slot = (unsigned)s;
    return kind;
}
