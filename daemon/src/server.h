/* server.h - the Unix socket listener: bind (or take systemd's socket),
 * permissions, peer credentials, the connection limit. */
#ifndef HF_SERVER_H
#define HF_SERVER_H

#include "daemon.h"

struct hf_server;
struct hf_conn;

/* NULL on failure (logged). */
struct hf_server *hf_server_create(struct hf_daemon *d);
/* Stop accepting (drain); existing connections stay. */
void hf_server_stop_accepting(struct hf_server *srv);
/* Stop reading requests on every connection (drain). */
void hf_server_stop_reading(struct hf_server *srv);
/* Close the listener and every connection; frees itself once closed. */
void hf_server_close(struct hf_server *srv);

/* Head of the server's connection list; conn.c links itself in and out. */
struct hf_conn **hf_server_conns(struct hf_server *srv);
/* A connection finished closing (it has unlinked itself). */
void hf_server_conn_gone(struct hf_server *srv);

#endif
