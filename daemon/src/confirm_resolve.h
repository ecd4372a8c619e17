/* confirm_resolve.h - settling a Confirm or Cancel whose statement is in
 * doubt (sent, then its connection was lost or its deadline passed):
 * holdfast.resolve() on another connection ends the server process that had
 * the statement and then looks the idempotency key up, retried until the
 * outcome is known or the time is up. */
#ifndef HF_CONFIRM_RESOLVE_H
#define HF_CONFIRM_RESOLVE_H

#include <stdint.h>

#include "confirm_outcome.h"
#include "pg_pool.h"
#include "request.h"

enum hf_resolved {
    HF_RESOLVED_RECORDED,    /* the key holds this request's result: in *out */
    HF_RESOLVED_ROLLED_BACK, /* the process is gone and the key is absent */
    HF_RESOLVED_UNKNOWN,     /* still unknown when the time ran out: see why */
};

/* Lives in the op's context. The caller fills the first block. */
struct hf_resolve {
    struct hf_request *req;
    const char *op; /* "confirm" | "cancel" */
    const char *ns, *key, *partition, *ids_array, *reference, *payload;
    size_t payload_len;
    struct hf_outcome *out;
    void (*done)(void *arg, enum hf_resolved how, const char *why);
    void *arg;
    /* Private. */
    int backend_pid;
    int64_t backend_start_us;
    uint64_t until; /* loop time */
    char why[160];
};

/* Start settling the in-doubt result `r` (of the request's statement). The
 * request's op timer paces the retries; done runs exactly once. */
void hf_resolve_start(struct hf_resolve *rs, const struct hf_pg_result *r);

#endif
