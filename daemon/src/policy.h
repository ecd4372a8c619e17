/* policy.h - per-namespace Lua hooks from the configuration file, e.g.
 *
 *   seat = { admit = function(hold)
 *              if #hold.ids > 8 then return false, "at most 8 seats" end
 *              if hold.partition:match("^vip%-") then return 120000 end -- TTL
 *              return true
 *            end },
 *
 * A hook runs on the event loop under an instruction budget, in the same
 * sandbox as the config (no io/os), so a bad hook cannot stall the daemon. */
#ifndef HF_POLICY_H
#define HF_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

/* What a hook sees of a Hold. */
struct hf_hold_facts {
    const char *partition;
    char *const *ids;
    size_t n_ids;
    uint32_t ttl_ms;
    const char *correlation_id;
    uint32_t uid, gid; /* the peer's credentials */
};

enum hf_verdict {
    HF_ADMIT,       /* go ahead (*ttl_ms may have been changed, within bounds) */
    HF_DENY,        /* the hook said no; `why` has its reason */
    HF_HOOK_FAILED, /* the hook raised an error or ran out of budget */
};

#define HF_HOOK_INSTRUCTION_BUDGET 200000

/* Run the namespace's admit hook, if it has one. */
enum hf_verdict hf_policy_admit_hold(const struct hf_config *cfg, const struct hf_namespace *ns,
                                     const struct hf_hold_facts *facts, uint32_t *ttl_ms,
                                     char *why, size_t whylen);

#endif
