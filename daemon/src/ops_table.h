/* ops_table.h - every operation the daemon serves. Adding one is a row in
 * HF_OPS plus its handler file (ops_<name>.c defining hf_op_<name>). */
#ifndef HF_OPS_TABLE_H
#define HF_OPS_TABLE_H

#include "op.h"

/* The bit of a result code in hf_op_def.codes. Expanded where frame.h is
 * included (ops_table.c). */
#define HF_CODE_BIT(name) (1u << HOLDFAST__V1__CODE__CODE_##name)

/* What the request layer may answer for any op before or instead of it:
 * a bad string or correlation id, draining, the connection's in-flight
 * limit or out of memory. */
#define HF_CODES_REQUEST \
    (HF_CODE_BIT(INVALID_ARGUMENT) | HF_CODE_BIT(UNAVAILABLE) | HF_CODE_BIT(RESOURCE_EXHAUSTED))
/* ... and the deadline, for an op that waits on a backend. */
#define HF_CODES_ASYNC (HF_CODES_REQUEST | HF_CODE_BIT(DEADLINE_EXCEEDED))
/* A namespace/partition/ids op: the namespace may be unknown. */
#define HF_CODES_TARGET (HF_CODES_ASYNC | HF_CODE_BIT(OK) | HF_CODE_BIT(NOT_FOUND))

/* X(name, METHOD case suffix, flags, codes it can answer) */
#define HF_OPS(X)                                                                        \
    X(hold, HOLD, HF_OP_RESOURCE | HF_OP_DEGRADABLE,                                     \
      HF_CODES_TARGET | HF_CODE_BIT(HELD_BY_ANOTHER) | HF_CODE_BIT(CONFIRMED) |          \
          HF_CODE_BIT(PERMISSION_DENIED) | HF_CODE_BIT(INTERNAL))                        \
    X(extend, EXTEND, HF_OP_RESOURCE | HF_OP_DEGRADABLE,                                 \
      HF_CODES_TARGET | HF_CODE_BIT(HELD_BY_ANOTHER) | HF_CODE_BIT(NOT_HELD) |           \
          HF_CODE_BIT(CONFIRMED) | HF_CODE_BIT(INTERNAL))                                \
    X(release, RELEASE, HF_OP_RESOURCE | HF_OP_DEGRADABLE,                               \
      HF_CODES_TARGET | HF_CODE_BIT(HELD_BY_ANOTHER) | HF_CODE_BIT(NOT_HELD) |           \
          HF_CODE_BIT(CONFIRMED))                                                        \
    X(confirm, CONFIRM, HF_OP_RESOURCE,                                                  \
      HF_CODES_TARGET | HF_CODE_BIT(FAILED_PRECONDITION) | HF_CODE_BIT(CONFLICT) |       \
          HF_CODE_BIT(STALE) | HF_CODE_BIT(HOLD_LOST) | HF_CODE_BIT(CONFIRMED) |         \
          HF_CODE_BIT(IDEMPOTENCY_MISMATCH) | HF_CODE_BIT(PERMISSION_DENIED) |           \
          HF_CODE_BIT(INTERNAL))                                                         \
    X(cancel, CANCEL, HF_OP_RESOURCE,                                                    \
      HF_CODES_TARGET | HF_CODE_BIT(FAILED_PRECONDITION) | HF_CODE_BIT(CONFLICT) |       \
          HF_CODE_BIT(IDEMPOTENCY_MISMATCH) | HF_CODE_BIT(PERMISSION_DENIED) |           \
          HF_CODE_BIT(INTERNAL))                                                         \
    X(status, STATUS, HF_OP_RESOURCE, HF_CODES_TARGET)                                   \
    X(health, HEALTH, HF_OP_PROBE, HF_CODES_REQUEST | HF_CODE_BIT(OK))                   \
    X(metrics, METRICS, HF_OP_PROBE, HF_CODES_REQUEST | HF_CODE_BIT(OK))                 \
    X(set_capacity, SET_CAPACITY, HF_OP_RESOURCE,                                        \
      HF_CODES_TARGET | HF_CODE_BIT(FAILED_PRECONDITION) | HF_CODE_BIT(INTERNAL))        \
    X(get_capacity, GET_CAPACITY, HF_OP_RESOURCE,                                        \
      HF_CODES_TARGET | HF_CODE_BIT(FAILED_PRECONDITION) | HF_CODE_BIT(INTERNAL))

#define HF_OP_DECLARE(name, method, flags, codes) void hf_op_##name(struct hf_request *req);
HF_OPS(HF_OP_DECLARE)
#undef HF_OP_DECLARE

/* The table, ending with the row for unknown methods. */
const struct hf_op_table *hf_ops_table(void);

#endif
