/* validate.h - the one place that decides what a name from outside may be. */
#ifndef HF_VALIDATE_H
#define HF_VALIDATE_H

#include <stdbool.h>
#include <stddef.h>

#define HF_NAME_MAX 128

/* Namespaces, partitions and resource ids: [A-Za-z0-9._-], 1..128 bytes.
 * No braces, colons or spaces, so nobody can forge a key or a hash tag. */
bool hf_valid_name(const char *s, size_t len);
/* Correlation ids and idempotency keys also allow ':' (trace ids use it). */
bool hf_valid_ref_id(const char *s, size_t len);

#endif
