/* token.c - token randomness (getrandom, buffered) and keyed fingerprints
 * (libsodium). */
#include "token.h"

#include <errno.h>
#include <sodium.h>
#include <string.h>
#include <sys/random.h>

static unsigned char fingerprint_key[crypto_shorthash_KEYBYTES];
/* Used while no key is configured; made once, so a reload that drops and
 * later restores "no key" keeps this run's fingerprints comparable. */
static unsigned char process_key[crypto_shorthash_KEYBYTES];
static bool have_process_key;

int hf_token_set_fingerprint_key(const char *key) {
    if (sodium_init() < 0) return -1; /* idempotent: 1 when already done */
    if (key && *key) {
        /* Derive a fixed-size key from whatever the operator configured. */
        crypto_generichash(fingerprint_key, sizeof fingerprint_key,
                           (const unsigned char *)key, strlen(key), NULL, 0);
        return 0;
    }
    if (!have_process_key) {
        randombytes_buf(process_key, sizeof process_key);
        have_process_key = true;
    }
    memcpy(fingerprint_key, process_key, sizeof fingerprint_key);
    return 0;
}

int hf_token_init(const char *key) { return hf_token_set_fingerprint_key(key); }

/* Kernel randomness fetched 4 KiB at a time (256 tokens per getrandom
 * instead of one); each byte is handed out once and wiped as it goes. */
static unsigned char pool[4096];
static size_t pool_left; /* the unused bytes are the last pool_left */

int hf_random_bytes(void *out, size_t n) {
    unsigned char *dst = out;
    while (n > 0) {
        if (pool_left == 0) {
            size_t got = 0;
            while (got < sizeof pool) {
                ssize_t r = getrandom(pool + got, sizeof pool - got, 0);
                if (r < 0) {
                    if (errno == EINTR) continue;
                    return -errno;
                }
                got += (size_t)r;
            }
            pool_left = sizeof pool;
        }
        size_t take = n < pool_left ? n : pool_left;
        unsigned char *src = pool + sizeof pool - pool_left;
        memcpy(dst, src, take);
        sodium_memzero(src, take);
        pool_left -= take;
        dst += take;
        n -= take;
    }
    return 0;
}

int hf_token_random(char out[HF_TOKEN_RANDOM_CHARS + 1]) {
    unsigned char raw[HF_TOKEN_RANDOM_BYTES];
    int rc = hf_random_bytes(raw, sizeof raw);
    if (rc != 0) return rc;
    sodium_bin2base64(out, HF_TOKEN_RANDOM_CHARS + 1, raw, sizeof raw,
                      sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    sodium_memzero(raw, sizeof raw);
    return 0;
}

static bool is_b64url(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
           (c >= '0' && c <= '9') || c == '-' || c == '_';
}

bool hf_token_parse(const char *token, size_t len, uint64_t *fence) {
    size_t i = 0;
    uint64_t value = 0;
    while (i < len && token[i] >= '0' && token[i] <= '9') {
        uint64_t digit = (uint64_t)(token[i] - '0');
        if (value > (UINT64_MAX - digit) / 10) return false;
        value = value * 10 + digit;
        i++;
    }
    if (i == 0 || i > 20 || i >= len || token[i] != '.') return false;
    i++;
    if (len - i != HF_TOKEN_RANDOM_CHARS) return false;
    for (; i < len; i++)
        if (!is_b64url(token[i])) return false;
    if (fence) *fence = value;
    return true;
}

void hf_token_fingerprint(const char *token, size_t len,
                          char out[HF_FINGERPRINT_CHARS + 1]) {
    unsigned char hash[crypto_shorthash_BYTES];
    crypto_shorthash(hash, (const unsigned char *)token, len, fingerprint_key);
    sodium_bin2hex(out, HF_FINGERPRINT_CHARS + 1, hash, sizeof hash);
}
