/* ops_table.h - every operation the daemon serves. Adding one is a row in
 * HF_OPS plus its handler file (ops_<name>.c defining hf_op_<name>). */
#ifndef HF_OPS_TABLE_H
#define HF_OPS_TABLE_H

#include "op.h"

/* X(name, METHOD case suffix, flags) */
#define HF_OPS(X)                                                  \
    X(hold, HOLD, HF_OP_RESOURCE | HF_OP_DEGRADABLE)               \
    X(extend, EXTEND, HF_OP_RESOURCE | HF_OP_DEGRADABLE)           \
    X(release, RELEASE, HF_OP_RESOURCE | HF_OP_DEGRADABLE)         \
    X(confirm, CONFIRM, HF_OP_RESOURCE)                            \
    X(cancel, CANCEL, HF_OP_RESOURCE)                              \
    X(status, STATUS, HF_OP_RESOURCE)                              \
    X(health, HEALTH, 0)                                           \
    X(metrics, METRICS, 0)                                         \
    X(set_capacity, SET_CAPACITY, HF_OP_RESOURCE)                  \
    X(get_capacity, GET_CAPACITY, HF_OP_RESOURCE)

#define HF_OP_DECLARE(name, method, flags) void hf_op_##name(struct hf_request *req);
HF_OPS(HF_OP_DECLARE)
#undef HF_OP_DECLARE

/* The table, ending with the row for unknown methods. */
const struct hf_op_table *hf_ops_table(void);

#endif
