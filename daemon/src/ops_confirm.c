/* ops_confirm.c - Confirm and Cancel: turning a hold into a PostgreSQL claim.
 * Until the PostgreSQL side is configured, both are refused explicitly. */
#include "ops.h"

#define CODE(x) HOLDFAST__V1__CODE__CODE_##x

static void refuse(struct hf_request *req) {
    hf_request_fail(req, CODE(FAILED_PRECONDITION), NULL, NULL,
                    "%s needs PostgreSQL, which this daemon does not have configured",
                    hf_op_name(req->op));
}

void hf_op_confirm(struct hf_request *req) { refuse(req); }

void hf_op_cancel(struct hf_request *req) { refuse(req); }
