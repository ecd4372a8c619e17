/* token.h - hold tokens ("<fence>.<random>") and their log fingerprints. */
#ifndef HF_TOKEN_H
#define HF_TOKEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HF_TOKEN_RANDOM_BYTES 16
/* base64url without padding of 16 bytes. */
#define HF_TOKEN_RANDOM_CHARS 22
/* 20 digits of fence + '.' + random part. */
#define HF_TOKEN_MAX_LEN (20 + 1 + HF_TOKEN_RANDOM_CHARS)
#define HF_FINGERPRINT_CHARS 16

/* Set up the keyed hash used for fingerprints. key may be NULL: a random key
 * per process (fingerprints then only correlate within one run). */
int hf_token_init(const char *key);
/* Switch the fingerprint key, e.g. on reload (log.fingerprint_key): from now
 * on fingerprints use `key`, or with NULL this process's random key (the same
 * one each time). Holds are unaffected; only log correlation changes. 0 or -1
 * when libsodium cannot be initialised. */
int hf_token_set_fingerprint_key(const char *key);
/* A fresh random part (hf_random_bytes). 0 or -errno. */
int hf_token_random(char out[HF_TOKEN_RANDOM_CHARS + 1]);
/* n bytes from the kernel's CSPRNG (through a buffer); 0 or -errno. */
int hf_random_bytes(void *out, size_t n);
/* true when `token` has the shape "<digits>.<22 base64url chars>"; the fence
 * is stored in *fence when non-NULL. */
bool hf_token_parse(const char *token, size_t len, uint64_t *fence);
/* Short keyed hash of a token, safe to log. */
void hf_token_fingerprint(const char *token, size_t len,
                          char out[HF_FINGERPRINT_CHARS + 1]);

#endif
