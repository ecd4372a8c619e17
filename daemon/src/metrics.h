/* metrics.h - process-wide counters, gauges and latency histograms,
 * rendered in the Prometheus text format. Single-threaded (the loop). */
#ifndef HF_METRICS_H
#define HF_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frame.h"
#include "op.h"

enum hf_counter {
    HF_C_REDIS_RECONNECTS,
    HF_C_REDIS_ERRORS,
    HF_C_REDIS_TIMEOUTS,
    HF_C_REDIS_NOSCRIPT_RECOVERIES,
    HF_C_LIBRARY_LOADS,
    HF_C_LATE_GRANTS_RELEASED,
    HF_C_REPLICA_ACK_FAILURES,
    HF_C_DEGRADED_ANSWERS,
    HF_C_FRAMES_REJECTED,
    HF_C_CONNECTIONS_REJECTED,
    HF_C_CONNECTIONS_ACCEPTED,
    HF_C_PG_RECONNECTS,
    HF_C_PG_ERRORS,
    HF_C_RELEASE_AFTER_CONFIRM_FAILED,
    HF_C_CONFIRM_IN_DOUBT,
    HF_C_CONFIG_RELOADS,
    HF_C_CONFIG_RELOAD_FAILURES,
    HF_C_POLICY_HOOK_FAILURES,
    HF_C_REDIS_MOVED,   /* these two render as one family with a kind label */
    HF_C_REDIS_ASK,
    HF_C_REDIS_CLUSTER_REFRESHES,
    HF_C_SLOW_READERS_BUDGET, /* these two render as one family with a reason label */
    HF_C_SLOW_READERS_STALLED,
    HF_C_CONN_TIMEOUTS_FRAME, /* and these two */
    HF_C_CONN_TIMEOUTS_IDLE,
    HF_C_SESSION_RENEWALS,      /* session holds (docs/sessions.md) */
    HF_C_SESSION_RENEWAL_CALLS,
    HF_C_SESSION_HOLDS_LOST,
    HF_C_SESSION_RELEASES,
    HF_C_WAITS_GRANTED, /* waiting in line (docs/waiting.md); one family, outcome label */
    HF_C_WAITS_TIMED_OUT,
    HF_C_WAITS_CONFIRMED,
    HF_C_WAITS_LEFT,
    HF_C_WAIT_WAKEUPS,
    HF_C_REDIS_BATCHES,      /* coalescing (redis_front.c) */
    HF_C_REDIS_BATCHED_CALLS,
    HF_C__COUNT
};

enum hf_gauge {
    HF_G_CONNECTIONS,
    HF_G_IN_FLIGHT,
    HF_G_REDIS_CONNECTED,
    HF_G_REDIS_POOL_SIZE,
    HF_G_PG_CONNECTED,
    HF_G_PG_POOL_SIZE,
    HF_G_REDIS_CLUSTER_NODES,
    HF_G_QUEUED_BYTES,
    HF_G_READY, /* set by whoever renders, from hf_daemon_ready */
    HF_G_SESSION_HOLDS,
    HF_G_WAITERS,
    HF_G_WAIT_SUBSCRIBED,
    HF_G__COUNT
};

/* The operations to count requests for (main passes the op table; at most
 * HF_METRICS_MAX_OPS rows). */
#define HF_METRICS_MAX_OPS 32
void hf_metrics_set_ops(const struct hf_op_table *ops);
void hf_metrics_request(const struct hf_op_def *op, hf_code code, bool degraded,
                        uint64_t latency_us);
void hf_metrics_inc(enum hf_counter c);
void hf_metrics_add(enum hf_counter c, uint64_t n);
void hf_metrics_gauge_add(enum hf_gauge g, int64_t delta);
void hf_metrics_gauge_set(enum hf_gauge g, int64_t value);
int64_t hf_metrics_gauge(enum hf_gauge g);
/* The labels of holdfast_build_info (static strings). */
void hf_metrics_set_build_info(const char *version, const char *library);
/* Which call paths are active ("fcall"/"evalsha"/"eval", "script"/"delex"). */
void hf_metrics_set_paths(const char *script_path, const char *release_path);
/* The exposition text in a malloc'd NUL-terminated buffer (NULL on OOM):
 * the daemon's series, holdfast_build_info and the process_* series (read
 * from /proc/self). */
char *hf_metrics_render(void);

#endif
