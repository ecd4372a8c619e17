/* redis_events.h - hiredis's async context on the libuv loop, with the
 * commands of a loop iteration written at once.
 *
 * hiredis's own libuv adapter asks the loop to watch the socket for
 * writability whenever a command is queued, and to stop when it is written:
 * two epoll_ctl calls and one more turn of the loop per batch. Here a queued
 * command only starts a prepare handle; before the loop next waits, the
 * connection writes everything queued since in one write. The socket is
 * watched for writability only while it is connecting or its buffer is full. */
#ifndef HF_REDIS_EVENTS_H
#define HF_REDIS_EVENTS_H

#include <hiredis/async.h>
#include <uv.h>

/* Like redisLibuvAttach: REDIS_OK, or REDIS_ERR (nothing attached). */
int hf_redis_events_attach(redisAsyncContext *ac, uv_loop_t *loop);

/* Write what is queued now rather than before the loop next waits: for a
 * full batch, so that Redis works on it while the daemon reads on. A no-op
 * while connecting or while the socket is full. */
void hf_redis_events_write_now(redisAsyncContext *ac);

#endif
