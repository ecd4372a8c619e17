/* policy.h - per-namespace Lua hooks from the configuration file, e.g.
 *
 *   seat = { admit = function(hold)
 *              if #hold.ids > 8 then return false, "at most 8 seats" end
 *              if hold.partition:match("^vip%-") then return 120000 end -- TTL
 *              return true
 *            end },
 *
 * A hook runs on the event loop, in the same sandbox as the config (no
 * io/os), under an instruction budget, a wall-clock budget that the library
 * functions running in C honour too, and a memory cap (lua_sandbox.h), so a
 * bad hook can neither stall nor crash the daemon: it fails, and the request
 * is refused. The hook sees Holds, Confirms and Cancels (`op` tells which). */
#ifndef HF_POLICY_H
#define HF_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

/* What a hook sees of a Hold, a Confirm or a Cancel (`op`). */
struct hf_hold_facts {
    const char *op;              /* "hold", "confirm", "cancel" */
    const char *partition;
    char *const *ids;
    size_t n_ids;
    uint32_t ttl_ms;
    const char *correlation_id;
    uint32_t uid, gid; /* the peer's credentials */
    const char *idempotency_key; /* Confirm and Cancel; NULL for a Hold */
    const char *reference;       /* Confirm and Cancel; NULL for a Hold */
};

enum hf_verdict {
    HF_ADMIT,       /* go ahead (*ttl_ms may have been changed, within bounds) */
    HF_DENY,        /* the hook said no; `why` has its reason */
    HF_HOOK_FAILED, /* the hook raised an error, ran out of a budget or of
                       memory, returned nonsense, or was not run (time share) */
};

#define HF_HOOK_INSTRUCTION_BUDGET 200000 /* per call */
#define HF_HOOK_TIME_BUDGET_MS 10         /* per call, wall clock */
/* All hooks together hold the loop for at most HF_HOOK_SHARE_BURST_MS at a
 * stretch: time spent outside hooks earns that allowance back one for one,
 * a call's time budget is cut to what is left, and with nothing left it
 * fails without running. So a flood of slow hooks gets about half of the
 * loop, never all of it, and never more than this at once. */
#define HF_HOOK_SHARE_BURST_MS 10
#define HF_HOOK_LOG_INTERVAL_S 10         /* one log line per failure kind */

/* Run the namespace's admit hook, if it has one. ttl_ms: a Hold's TTL,
 * which the hook may change by returning a number; NULL for Confirm and
 * Cancel (a number then just admits). */
enum hf_verdict hf_policy_admit(const struct hf_config *cfg, const struct hf_namespace *ns,
                                const struct hf_hold_facts *facts, uint32_t *ttl_ms, char *why,
                                size_t whylen);

#endif
