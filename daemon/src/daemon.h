/* daemon.h - what a request handler may reach: the loop, the current
 * configuration, the op table and the backends. Owned by main.c, passed
 * explicitly. */
#ifndef HF_DAEMON_H
#define HF_DAEMON_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#include "config.h"
#include "op.h"

struct hf_redis_front;
struct hf_pg_pool;
struct hf_server;
struct hf_wake_hub;

struct hf_daemon {
    uv_loop_t *loop;
    struct hf_config *cfg;        /* current; requests keep a reference */
    const struct hf_op_table *ops;
    struct hf_redis_front *redis; /* the Redis front end */
    struct hf_pg_pool *pg;        /* NULL when PostgreSQL is not configured */
    bool pg_ready;                /* kept by the pool's state callback */
    struct hf_server *server;
    struct hf_wake_hub *wakes;    /* wake-ups of the lines (wake_hub.c) */
    bool draining;                /* SIGTERM: finish what is in flight */
    unsigned in_flight;           /* kept by the request layer */
    unsigned connections;         /* kept by the server */
    unsigned session_releases;    /* release calls of closed sessions in flight */
    void (*on_idle)(struct hf_daemon *d); /* in_flight reached 0 while draining */
};

/* Ready for traffic: Redis library loaded, PostgreSQL reachable when
 * configured, not draining. */
bool hf_daemon_ready(const struct hf_daemon *d);

#endif
