/* redis_sub.h - one pub/sub subscription of the daemon's, on a connection of
 * the Redis layer (redis_pool.c: the same address, TLS, AUTH/SELECT and
 * reconnect backoff as every other connection; not counted in the pool's
 * gauges; its failures logged at debug, the pool's own say them). Refused
 * (an ACL without the channel) or down: said once, tried again with backoff
 * up to HF_SUB_RETRY_MS; callers fall back to polling meanwhile. */
#ifndef HF_REDIS_SUB_H
#define HF_REDIS_SUB_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#include "redis_pool.h"

#define HF_SUB_RETRY_MS 30000

struct hf_redis_sub;

/* A message on the channel (borrowed). */
typedef void hf_sub_message_fn(void *ud, const char *payload, size_t len);
/* The subscription came up, or went down (why: for the log), or was
 * refused before it ever came up. */
typedef void hf_sub_state_fn(void *ud, bool subscribed, const char *why);

/* opts->pool_size is ignored (one connection). NULL on OOM. */
struct hf_redis_sub *hf_redis_sub_create(uv_loop_t *loop, const struct hf_redis_pool_options *opts,
                                         const char *channel, hf_sub_message_fn *on_message,
                                         hf_sub_state_fn *on_state, void *ud);
bool hf_redis_sub_subscribed(const struct hf_redis_sub *sub);
/* Nothing is called after this. NULL: a no-op. */
void hf_redis_sub_close(struct hf_redis_sub *sub);

#endif
