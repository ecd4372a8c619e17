/* session.h - session-bound holds of one client connection
 * (docs/sessions.md). While the connection lives its session renews the
 * holds' TTL, all of them in one Redis call per renewal tick (per slot in a
 * cluster); it tells the connection about every hold it could not keep
 * (an unsolicited SessionEvent, Response id 0); when the connection closes
 * it releases them, owner-checked, in one call.
 *
 * Ownership: the request layer's client (struct hf_client) owns its
 * session and closes it when the connection goes. A session frees itself
 * only once its timer has closed and every Redis call it made has called
 * back, so a late reply never touches freed memory; after the close, the
 * replies only clean up. Entries are found by token, never by pointers
 * kept elsewhere. */
#ifndef HF_SESSION_H
#define HF_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "daemon.h"

struct hf_session;

/* Queue a packed frame on the connection (ownership passes). */
typedef void hf_session_send_fn(void *ctx, uint8_t *frame, size_t len);

/* NULL on OOM. Events go out through send(send_ctx, ...). */
struct hf_session *hf_session_create(struct hf_daemon *d, hf_session_send_fn *send,
                                     void *send_ctx);
/* The connection has closed: release every hold (except those a Confirm in
 * flight now answers for), send nothing more. NULL: nothing. */
void hf_session_close(struct hf_session *s);
/* Holds the session keeps now. */
size_t hf_session_holds(const struct hf_session *s);

/* A granted hold to keep alive. */
struct hf_session_hold {
    const char *ns;
    const char *partition;
    const char *const *keys; /* the hold keys (no fence key) */
    const size_t *key_lens;
    size_t n_keys;
    const char *token;
    uint64_t fence;
    uint32_t ttl_ms;         /* the TTL each renewal sets */
    uint64_t sent_at_ms;     /* loop time when the grant was sent to Redis */
};
/* false on OOM (nothing kept). */
bool hf_session_add(struct hf_session *s, const struct hf_session_hold *h);

/* An operation on the hold of `token` (Release, Confirm) is in flight:
 * no renewal is sent for it and no loss reported until it ends.
 * `confirm`: a Confirm, whose hold the close leaves to the Confirm.
 * true when the session has that token. */
bool hf_session_pause(struct hf_session *s, const char *token, bool confirm);
/* The operation ended (answered); `forget`: the hold leaves the session
 * (a Confirm committed). */
void hf_session_resume(struct hf_session *s, const char *token, bool confirm, bool forget);
/* A Release of `token` was answered by Redis: the keys it named leave the
 * hold (and the hold the session, when none is left). */
void hf_session_released(struct hf_session *s, const char *token, const char *const *keys,
                         const size_t *lens, size_t n);

/* A namespace's session TTL: session_ttl_ms within min_ttl_ms..max_ttl_ms. */
uint32_t hf_session_ttl(const struct hf_namespace *ns);

#endif
