/* ops_table.c - the op table, built from HF_OPS. */
#include "ops_table.h"

#include "frame.h"
#include "request.h"

#define HF_OP_INDEX(name, method, flags, codes) HF_OP_INDEX_##name,
enum { HF_OPS(HF_OP_INDEX) HF_OP_INDEX_UNKNOWN };
#undef HF_OP_INDEX

/* A method added to the proto after this daemon was built. */
static void op_unknown(struct hf_request *req) {
    hf_request_fail(req, HF_CODE(UNIMPLEMENTED), "method", NULL,
                    "unknown method (field number not known to this daemon)");
}

#define HF_OP_ROW(name, method, flags, codes) \
    {#name, HOLDFAST__V1__REQUEST__METHOD_##method, hf_op_##name, flags, HF_OP_INDEX_##name, codes},
static const struct hf_op_def ops[] = {
    HF_OPS(HF_OP_ROW)
    {"unknown", HOLDFAST__V1__REQUEST__METHOD__NOT_SET, op_unknown, 0, HF_OP_INDEX_UNKNOWN,
     HF_CODES_REQUEST | HF_CODE_BIT(UNIMPLEMENTED)},
};
#undef HF_OP_ROW

static const struct hf_op_table table = {ops, sizeof ops / sizeof ops[0]};

const struct hf_op_table *hf_ops_table(void) { return &table; }
