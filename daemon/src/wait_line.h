/* wait_line.h - waiting in line for held resources (docs/waiting.md): a Hold
 * with wait_ms queues a ticket in Redis behind the holder and is retried when
 * a release or sale names its ticket (one pub/sub subscription per daemon,
 * the "hub"), or by a fallback timer (the holder's TTL, capped). */
#ifndef HF_WAIT_LINE_H
#define HF_WAIT_LINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "config.h"
#include "ops_common.h"
#include "redis_front.h"

struct hf_daemon;
struct hf_wait_hub;
struct hf_wait;

/* The daemon's waiters and its wake-up subscription (none with redis.tls:
 * waiters then poll). NULL on OOM. */
struct hf_wait_hub *hf_wait_hub_create(struct hf_daemon *d, const struct hf_config *cfg);
/* Ends every waiter (draining: UNAVAILABLE). */
void hf_wait_hub_drain(struct hf_wait_hub *h);
/* Closes the subscription; the hub frees itself once its handles closed.
 * Waiters must have ended (the server closed every connection first). */
void hf_wait_hub_close(struct hf_wait_hub *h);

/* Polling intervals (ms) while the subscription is down / up. */
#define HF_WAIT_POLL_MS 250
#define HF_WAIT_POLL_SUBSCRIBED_MS 1000
/* A ticket's lease in Redis, renewed by each try: a daemon that dies leaves
 * its tickets in line at most this long. */
#define HF_WAIT_LEASE_MS 3000

/* Hold `t` for `ttl_s` ms with the token's random part `random`, waiting up
 * to wait_ms (capped by the request's deadline) in line. The caller has
 * called hf_request_op_start. `cb` gets the reply of the try that ended the
 * wait with GRANTED, CONFIRMED or another code than HELD_BY_ANOTHER, or of a
 * first try that failed (it answers and calls hf_request_op_done, as for
 * hf1_hold's reply; *conn is the connection that ran it); any other end (the
 * wait or the deadline ran out, the client left, a drain) is answered here,
 * with hf_request_op_done. 0, or negative when nothing was sent (nothing
 * will be called). *out is freed by hf_wait_free from the op's context free
 * function. Strings are borrowed from the op's context for the whole wait. */
int hf_wait_start(struct hf_request *req, const struct hf_target *t, const char *random,
                  const char *ttl_s, uint32_t wait_ms, struct hf_redis_conn **conn,
                  hf_redis_cb *cb, void *privdata, struct hf_wait **out)
    __attribute__((warn_unused_result));

/* The same for units of pools (hf1_pool_hold_wait): keys are pool_hold's
 * (fence, default, per pool hash and holds), args pool_hold's (random, TTL,
 * counts); one line per pool name. held(privdata, index, free) answers a
 * wait that ran out (free < 0: unknown, the hold was not at the head). */
int hf_wait_start_pools(struct hf_request *req, const char *const *keys, const size_t *key_lens,
                        size_t n_keys, char *const *pools, size_t n_pools,
                        const char *const *args, size_t n_args, uint32_t wait_ms,
                        struct hf_redis_conn **conn, hf_redis_cb *cb,
                        void (*held)(void *privdata, long long index, long long free),
                        void *privdata, struct hf_wait **out)
    __attribute__((warn_unused_result));

/* Units of these pools came back (a release): their lines' heads try. */
void hf_wait_wake_pools(struct hf_daemon *d, const char *fence_key, size_t fence_len,
                        char *const *pools, size_t n_pools);
void hf_wait_free(struct hf_wait *w);

/* Resources were released (confirmed = false: wake the head of each line)
 * or sold (confirmed: wake every waiter, who answers CONFIRMED). Fire and
 * forget; hold_keys are hf:{<ns>:<partition>}:<id> keys of one partition. */
void hf_wait_wake_keys(struct hf_daemon *d, const char *const *hold_keys, const size_t *lens,
                       size_t n, bool confirmed);
void hf_wait_wake(struct hf_daemon *d, const struct hf_target *t, bool confirmed);
/* The keys hf1_release_wake takes after the n hold keys: the partition's
 * waiters, then each hold key's line (n + 1 keys, malloc'd; free them with
 * hf_wait_keys_free). false: out of memory. */
bool hf_wait_release_keys(const char *const *hold_keys, const size_t *lens, size_t n,
                          char ***keys, size_t **klens);
void hf_wait_keys_free(char **keys, size_t *lens, size_t n);

#endif
