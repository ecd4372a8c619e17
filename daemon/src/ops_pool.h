/* ops_pool.h - the operations on pools (namespaces of kind "pools",
 * docs/pools.md). Hold, Extend, Release, Status, Confirm and Cancel hand a
 * request here when hf_pool_request() says it is about pools; SetCapacity and
 * GetCapacity are ops of their own (ops_capacity.c). */
#ifndef HF_OPS_POOL_H
#define HF_OPS_POOL_H

#include "request.h"

void hf_pool_hold(struct hf_request *req);    /* ops_pool.c */
void hf_pool_extend(struct hf_request *req);
void hf_pool_release(struct hf_request *req);
void hf_pool_status(struct hf_request *req);
void hf_pool_confirm(struct hf_request *req); /* ops_pool_claim.c */
void hf_pool_cancel(struct hf_request *req);

#endif
