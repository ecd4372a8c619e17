/* http.h - the optional HTTP listener (metrics.http): Prometheus text on
 * GET /metrics, liveness on /healthz, readiness on /readyz. Owned by main.c;
 * runs on the daemon's loop (see http.c). */
#ifndef HF_HTTP_H
#define HF_HTTP_H

#include "daemon.h"

struct hf_http;

/* Listen on `address` ("IPv4:port" or "[IPv6]:port", numeric, read by
 * address.c as config.c checked it; port 0 takes a free port, which the
 * start-up line logs) and
 * serve from d's loop. NULL on failure, logged. */
struct hf_http *hf_http_create(struct hf_daemon *d, const char *address);
/* The port it listens on (the chosen one when the address said 0). */
unsigned hf_http_port(const struct hf_http *h);
/* Stop listening, drop open connections; the memory goes once the loop has
 * closed the handles. NULL is fine. */
void hf_http_close(struct hf_http *h);

#endif
