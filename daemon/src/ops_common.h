/* ops_common.h - what the operations share: validating the target
 * (namespace, partition, ids), TTLs and tokens, and turning Redis outcomes
 * into answers. Each validator answers the request itself when it fails. */
#ifndef HF_OPS_COMMON_H
#define HF_OPS_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "keys.h"
#include "redis_pool.h"
#include "ops_table.h"
#include "request.h"

/* What a request acts on; lives inside the op's context. */
struct hf_target {
    const struct hf_namespace *ns;
    struct hf_keyset *keys; /* keys[0] fence counter, keys[1..] hold keys */
    char **ids;             /* the request's ids, or with a segment the legs */
    size_t n_ids;
    char **legs;            /* owned: "<id>@<leg>" for every id and leg */
};

/* Validate namespace, partition and ids and build the keys into *t (clear
 * it with hf_target_clear from the context's free function). false: the
 * request has been answered. */
bool hf_target_parse(struct hf_request *req, struct hf_target *t, const char *ns,
                     const char *partition, char **ids, size_t n_ids,
                     const Holdfast__V1__Segment *segment);
void hf_target_clear(struct hf_target *t);
/* A context that is only a target. */
struct hf_target *hf_target_context(struct hf_request *req);
/* The index of the first id that repeats an earlier one, or n_ids. */
size_t hf_first_duplicate(char *const *ids, size_t n_ids);
/* 0 -> the namespace default; outside [min,max] -> INVALID_ARGUMENT. */
bool hf_ttl_resolve(struct hf_request *req, const struct hf_namespace *ns, uint32_t asked,
                    uint32_t *ttl);
/* A token of the right shape; its fingerprint goes into the log line. */
bool hf_token_check(struct hf_request *req, const char *token, bool required);

/* Answer for a Redis call that did not give a usable reply: timeouts and
 * lost connections are UNAVAILABLE (never a grant); under best_effort the
 * answer is OK but marked degraded, with nothing held. */
struct hf_hold_facts;
/* The namespace's admit hook on these facts (it may set *ttl when given):
 * true to go on; false when it refused (PERMISSION_DENIED) or failed
 * (INTERNAL, counted), the request answered. */
bool hf_admitted(struct hf_request *req, const struct hf_namespace *ns,
                 const struct hf_hold_facts *facts, uint32_t *ttl);

void hf_answer_redis_failure(struct hf_request *req, const struct hf_namespace *ns,
                             enum hf_redis_status status, const char *what);
/* Answer from a library code that is not GRANTED (index is 1-based into
 * the target's ids, 0 for none). */
void hf_answer_script_code(struct hf_request *req, const struct hf_target *t, long long code,
                           long long index);
/* Reply shapes of the library: an array whose first element is a code. */
bool hf_reply_code(const redisReply *r, long long *code);
long long hf_reply_int(const redisReply *r, size_t i);

#endif
