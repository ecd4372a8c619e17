/* hold_grant.h - what a Hold does once Redis has granted it: build the token
 * from the fence, answer it, wait for replicas when the namespace asks, and
 * withdraw a grant nobody will use (late, client gone, replicas missing),
 * owner-checked, waking the lines of what it gave back. Also the admit
 * hook's check before a hold is sent. */
#ifndef HF_HOLD_GRANT_H
#define HF_HOLD_GRANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "redis_front.h"
#include "request.h"
#include "target.h"
#include "token.h"

struct hf_grant {
    struct hf_request *req;
    const struct hf_target *t;  /* what was granted (the op's context owns it) */
    struct hf_redis_conn *conn; /* the connection whose script made the grant */
    uint32_t ttl;
    uint64_t fence;
    char random[HF_TOKEN_RANDOM_CHARS + 1];
    char token[HF_TOKEN_MAX_LEN + 1];
    /* Called once the grant is sure, before it is answered; returns false
     * (with why_withdrawn set) to withdraw it instead. Optional. */
    bool (*keep)(struct hf_grant *g);
    /* Called when the op is over, whatever happened: ends the op. */
    void (*done)(struct hf_grant *g);
    char why_withdrawn_buf[160];
    const char *why_withdrawn; /* answer to give once the grant is withdrawn */
};

/* Fills g->random; false (answered INTERNAL) when the CSPRNG fails. */
bool hf_grant_prepare(struct hf_grant *g);

/* The hold script answered granted with reply r (element 1: the fence):
 * answers the grant, or withdraws it. Calls g->done exactly once. */
void hf_grant_granted(struct hf_grant *g, const redisReply *r);

/* The namespace's admit hook, if any, may refuse a hold or set its TTL
 * (it sees the target's labels: seat ids or legs, or "pool=count"). Answers
 * the refusal itself. */
bool hf_grant_admitted(struct hf_request *req, const struct hf_target *t, uint32_t *ttl);

#endif
