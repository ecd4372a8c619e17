/* server.h - the Unix socket listener: bind (or take systemd's socket),
 * permissions, peer credentials, the connection limit; and the list of the
 * connections it accepted. */
#ifndef HF_SERVER_H
#define HF_SERVER_H

#include "daemon.h"

struct hf_server;
struct hf_conn;

/* A connection passed every gate: the callee gives it a sink; the server
 * starts reading after this returns. */
typedef void hf_server_accept_fn(void *ud, struct hf_conn *conn);

/* NULL on failure (logged). */
struct hf_server *hf_server_create(struct hf_daemon *d, hf_server_accept_fn *on_accept,
                                   void *ud);
/* Stop accepting (drain); existing connections stay. */
void hf_server_stop_accepting(struct hf_server *srv);
/* Stop reading requests on every connection (drain). */
void hf_server_stop_reading(struct hf_server *srv);
/* Close the listener and every connection; frees itself once closed. */
void hf_server_close(struct hf_server *srv);

#endif
