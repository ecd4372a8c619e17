/* conn.h - one client connection: reads frames, dispatches requests, queues
 * responses; many requests in flight, answered in any order. */
#ifndef HF_CONN_H
#define HF_CONN_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "daemon.h"
#include "frame.h"

struct hf_conn;
struct hf_request;
struct hf_server;

/* A connection around an accepted pipe (which it now owns); starts reading. */
struct hf_conn *hf_conn_create(struct hf_daemon *d, struct hf_server *srv);
uv_stream_t *hf_conn_stream(struct hf_conn *conn);
void hf_conn_start(struct hf_conn *conn);

/* Queue a frame (ownership passes). */
void hf_conn_send(struct hf_conn *conn, uint8_t *frame, size_t len);
/* Answer with an error not tied to a request (id 0), then close. */
void hf_conn_fatal(struct hf_conn *conn, hf_code code, const char *message);
void hf_conn_stop_reading(struct hf_conn *conn);
void hf_conn_close(struct hf_conn *conn);

unsigned hf_conn_in_flight(const struct hf_conn *conn);
/* The peer's credentials (SO_PEERCRED), recorded at accept. */
void hf_conn_set_peer(struct hf_conn *conn, uint32_t uid, uint32_t gid);
void hf_conn_peer(const struct hf_conn *conn, uint32_t *uid, uint32_t *gid);
void hf_conn_request_add(struct hf_conn *conn, struct hf_request *req);
void hf_conn_request_done(struct hf_conn *conn, struct hf_request *req);

/* Linked list of a server's connections. */
struct hf_conn *hf_conn_next(struct hf_conn *conn);

#endif
