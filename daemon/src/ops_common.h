/* ops_common.h - what the operations share beyond their target (target.h):
 * TTLs and tokens checked, the admit hook asked, and Redis failures and the
 * library's reply shapes turned into answers. Each validator answers the
 * request itself when it fails. */
#ifndef HF_OPS_COMMON_H
#define HF_OPS_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "redis_pool.h"
#include "ops_table.h"
#include "request.h"

/* 0 -> the namespace default; outside [min,max] -> INVALID_ARGUMENT. */
bool hf_ttl_resolve(struct hf_request *req, const struct hf_namespace *ns, uint32_t asked,
                    uint32_t *ttl);
/* A token of the right shape; its fingerprint goes into the log line. */
bool hf_token_check(struct hf_request *req, const char *token, bool required);

struct hf_hold_facts;
/* The namespace's admit hook on these facts (it may set *ttl when given):
 * true to go on; false when it refused (PERMISSION_DENIED) or failed
 * (INTERNAL, counted), the request answered. */
bool hf_admitted(struct hf_request *req, const struct hf_namespace *ns,
                 const struct hf_hold_facts *facts, uint32_t *ttl);

/* Answer for a Redis call that did not give a usable reply: timeouts and
 * lost connections are UNAVAILABLE (never a grant); under best_effort the
 * answer is OK but marked degraded, with nothing held. */
void hf_answer_redis_failure(struct hf_request *req, const struct hf_namespace *ns,
                             enum hf_redis_status status, const char *what);
/* Reply shapes of the library: an array whose first element is a code. */
bool hf_reply_code(const redisReply *r, long long *code);
long long hf_reply_int(const redisReply *r, size_t i);

#endif
