/* op.h - what an operation is to the rest of the daemon: one row of the op
 * table (ops_table.c). Types only, so that the request layer, metrics and
 * main can read the table without depending on any operation's code. */
#ifndef HF_OP_H
#define HF_OP_H

#include <stddef.h>

struct hf_request;

enum hf_op_flags {
    /* Acts on resources: its request series are exported from the start,
     * so dashboards see zeros instead of gaps. */
    HF_OP_RESOURCE = 1u << 0,
    /* May answer OK-but-degraded when Redis is down under best_effort. */
    HF_OP_DEGRADABLE = 1u << 1,
    /* A probe (Health, Metrics): its request log line is at debug level
     * unless log.probes is set, so a scrape every few seconds does not
     * drown the log. */
    HF_OP_PROBE = 1u << 2,
};

struct hf_op_def {
    const char *name;  /* "hold": log lines and metric labels */
    int method;        /* the Request's method case (field number) */
    void (*handler)(struct hf_request *req);
    unsigned flags;    /* enum hf_op_flags */
    unsigned index;    /* position in the table (metrics arrays) */
    /* Every result code it can answer, as bits 1u << code (HF_CODE_BIT in
     * ops_table.h): the request-layer codes any op can get, and its own.
     * Resource ops export a zero series for each of these and no other. */
    unsigned codes;
};

/* The table main hands to the request layer and to metrics. The last row
 * (`unknown`) answers methods this daemon does not know. */
struct hf_op_table {
    const struct hf_op_def *ops;
    size_t n;
};

#endif
