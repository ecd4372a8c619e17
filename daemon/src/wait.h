/* wait.h - one Hold waiting in line (docs/waiting.md): it queues a ticket
 * in Redis behind the holder (the kind's hold_wait function) and tries again
 * when a release or sale names its ticket (the wake hub, wake_hub.h), or on
 * its fallback timer (the holder's TTL, or a poll, capped). */
#ifndef HF_WAIT_H
#define HF_WAIT_H

#include <stdbool.h>
#include <stdint.h>

#include "argv.h"
#include "target.h"

struct hf_wait;

/* A ticket's lease in Redis, renewed by each try: a daemon that dies leaves
 * its tickets in line at most this long. */
#define HF_WAIT_LEASE_MS 3000

/* Hold `t` with the hold's arguments `hold_args` (borrowed from the op's
 * context for the whole wait), waiting up to wait_ms (capped by the
 * request's deadline) in line. The caller has called hf_request_op_start.
 * `cb` gets the reply of the try that ended the wait with GRANTED,
 * CONFIRMED or another code than HELD_BY_ANOTHER, or of a first try that
 * failed (it answers and ends the op, as for a hold without a wait; *conn is
 * the connection that ran it); any other end (the wait or the deadline ran
 * out, the client left, a drain) is answered here, with hf_request_op_done.
 * 0, or negative when nothing was sent (nothing will be called). *out is
 * freed by hf_wait_free from the op's context free function. */
int hf_wait_start(struct hf_request *req, const struct hf_target *t,
                  const struct hf_argv *hold_args, uint32_t wait_ms, struct hf_redis_conn **conn,
                  hf_redis_cb *cb, void *privdata, struct hf_wait **out)
    __attribute__((warn_unused_result));
void hf_wait_free(struct hf_wait *w);

#endif
