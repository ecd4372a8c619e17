/* http.c - Prometheus metrics and probes over HTTP (metrics.http):
 *
 *   GET /metrics   the Metrics rpc's text (format 0.0.4)
 *   GET /healthz   200 while the process lives
 *   GET /readyz    200 when hf_daemon_ready, else 503 and why
 *
 * libmicrohttpd runs without a thread of its own, in its external polling
 * mode with epoll (MHD_USE_EPOLL): all of its sockets sit in one epoll
 * descriptor, which is a single uv_poll handle on the daemon's loop, and a
 * uv_timer stands for MHD_get_timeout (idle connections to drop, input read
 * but not yet handled). Both call MHD_run, and MHD_run calls on_request: every
 * answer, the metrics text included, is made on the loop thread from the
 * same state the Metrics rpc reads. No lock, no snapshot, no second thread. */
#include "http.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "address.h"
#include "log.h"
#include "metrics.h"
#include "redis_front.h"

#define HTTP_CONNECTION_LIMIT 64
#define HTTP_IDLE_TIMEOUT_S 10
#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define TEXT_CONTENT_TYPE "text/plain; charset=utf-8"

struct hf_http {
    struct hf_daemon *d;
    struct MHD_Daemon *mhd;
    unsigned port;
    uv_poll_t poll;   /* MHD's epoll descriptor */
    uv_timer_t timer; /* MHD_get_timeout */
    int open_handles;
};

/* ---- the peer, for the log ---- */

static void format_peer(const struct sockaddr *sa, char *out, size_t len) {
    snprintf(out, len, "-");
    if (!sa) return;
    if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, out,
                  (socklen_t)len);
    else if (sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, out,
                  (socklen_t)len);
}

/* ---- answers ---- */

enum route { R_METRICS, R_HEALTHZ, R_READYZ, R_OTHER };

static enum route route_of(const char *url) {
    if (strcmp(url, "/metrics") == 0) return R_METRICS;
    if (strcmp(url, "/healthz") == 0) return R_HEALTHZ;
    if (strcmp(url, "/readyz") == 0) return R_READYZ;
    return R_OTHER;
}

static const char *const route_names[] = {"/metrics", "/healthz", "/readyz", "other"};

/* Why /readyz says no, as `holdfastctl health` would. */
static void not_ready_why(const struct hf_daemon *d, char *out, size_t len) {
    if (d->draining) {
        snprintf(out, len, "not ready: draining\n");
        return;
    }
    snprintf(out, len, "not ready: redis %s%s\n", hf_front_ready(d->redis) ? "up" : "down",
             d->pg && !d->pg_ready ? ", postgres down" : "");
}

static struct MHD_Response *text_response(const char *text) {
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
    if (r) MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, TEXT_CONTENT_TYPE);
    return r;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *connection, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls) {
    (void)version;
    (void)upload_data;
    (void)upload_data_size;
    (void)con_cls;
    struct hf_http *h = cls;
    struct hf_daemon *d = h->d;
    uint64_t started = uv_hrtime();
    enum route route = route_of(url);
    bool get = strcmp(method, MHD_HTTP_METHOD_GET) == 0;
    bool head = strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
    unsigned status;
    struct MHD_Response *resp;
    if (!get && !head) {
        status = MHD_HTTP_METHOD_NOT_ALLOWED;
        resp = text_response("method not allowed: GET or HEAD\n");
        if (resp) MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    } else if (route == R_METRICS) {
        hf_metrics_gauge_set(HF_G_READY, hf_daemon_ready(d));
        char *text = hf_metrics_render();
        if (text) {
            status = MHD_HTTP_OK;
            resp = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
            if (resp)
                MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, METRICS_CONTENT_TYPE);
            else
                free(text);
        } else {
            status = MHD_HTTP_INTERNAL_SERVER_ERROR;
            resp = text_response("out of memory\n");
        }
    } else if (route == R_HEALTHZ) {
        status = MHD_HTTP_OK;
        resp = text_response("live\n");
    } else if (route == R_READYZ) {
        char why[96];
        bool ready = hf_daemon_ready(d);
        if (!ready) not_ready_why(d, why, sizeof why);
        status = ready ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE;
        resp = text_response(ready ? "ready\n" : why);
    } else {
        status = MHD_HTTP_NOT_FOUND;
        resp = text_response("not found: /metrics, /healthz, /readyz\n");
    }
    if (!resp) return MHD_NO; /* out of memory: MHD closes the connection */
    enum MHD_Result queued = MHD_queue_response(connection, status, resp);
    MHD_destroy_response(resp);

    /* Scrapes and probes: the same rule as the Health and Metrics rpcs. The
     * path is one of ours or "other", never the client's text. */
    enum hf_log_level level = d->cfg->log_probes ? HF_LOG_INFO : HF_LOG_DEBUG;
    if (hf_log_enabled(level)) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        char peer[INET6_ADDRSTRLEN];
        format_peer(ci ? ci->client_addr : NULL, peer, sizeof peer);
        hf_log(level, "http path=%s method=%s status=%u peer=%s latency_us=%llu",
               route_names[route], get ? "GET" : head ? "HEAD" : "other", status, peer,
               (unsigned long long)((uv_hrtime() - started) / 1000));
    }
    return queued;
}

/* ---- MHD on the loop ---- */

static void on_timer(uv_timer_t *t);

static unsigned connections(struct hf_http *h) {
    const union MHD_DaemonInfo *info =
        MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    return info ? info->num_connections : 0;
}

static void run_mhd(struct hf_http *h) {
    unsigned before = connections(h);
    MHD_run(h->mhd);
    /* At its connection limit MHD takes the listening socket out of its
     * epoll set, and puts it back only at the start of a run. A run that
     * closed connections is followed by another at once, so connections
     * waiting in the backlog are accepted now rather than at the next
     * unrelated event (there might be none). */
    if (connections(h) < before) MHD_run(h->mhd);
    MHD_UNSIGNED_LONG_LONG ms;
    if (MHD_get_timeout(h->mhd, &ms) == MHD_YES)
        uv_timer_start(&h->timer, on_timer, ms < 60000 ? (uint64_t)ms : 60000, 0);
    else
        uv_timer_stop(&h->timer);
}

static void on_timer(uv_timer_t *t) { run_mhd(t->data); }

static void on_poll(uv_poll_t *p, int status, int events) {
    (void)events;
    if (status < 0) log_warn("metrics.http: polling failed: %s", uv_strerror(status));
    run_mhd(p->data);
}

static void mhd_log(void *cls, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

static void mhd_log(void *cls, const char *fmt, va_list ap) {
    (void)cls;
    char text[512];
    vsnprintf(text, sizeof text, fmt, ap);
    size_t n = strlen(text);
    while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r')) text[--n] = '\0';
    log_warn("metrics.http: %s", text);
}

struct hf_http *hf_http_create(struct hf_daemon *d, const char *address) {
    struct sockaddr_storage ss;
    struct hf_address a;
    const char *why;
    if (!hf_address_parse(address, &a, &why) || !hf_address_sockaddr(&a, &ss, &why)) {
        log_error("metrics.http: cannot use address %s: %s", address, why);
        return NULL;
    }
    struct hf_http *h = calloc(1, sizeof *h);
    if (!h) return NULL;
    h->d = d;
    unsigned flags = MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
    if (ss.ss_family == AF_INET6) flags |= MHD_USE_IPv6;
    h->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_request, h,
                              MHD_OPTION_EXTERNAL_LOGGER, mhd_log, h,
                              MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
                              MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTP_CONNECTION_LIMIT,
                              MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_IDLE_TIMEOUT_S,
                              MHD_OPTION_END);
    const union MHD_DaemonInfo *epoll_info =
        h->mhd ? MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_EPOLL_FD) : NULL;
    const union MHD_DaemonInfo *port_info =
        h->mhd ? MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_BIND_PORT) : NULL;
    if (!epoll_info || !port_info) {
        log_error("metrics.http: cannot listen on %s", address);
        if (h->mhd) MHD_stop_daemon(h->mhd);
        free(h);
        return NULL;
    }
    int rc = uv_poll_init(d->loop, &h->poll, epoll_info->epoll_fd);
    if (rc != 0) {
        log_error("metrics.http: cannot poll: %s", uv_strerror(rc));
        MHD_stop_daemon(h->mhd);
        free(h);
        return NULL;
    }
    uv_timer_init(d->loop, &h->timer);
    h->poll.data = h->timer.data = h;
    h->open_handles = 2;
    h->port = port_info->port;
    uv_poll_start(&h->poll, UV_READABLE, on_poll);
    run_mhd(h); /* arms the timer */
    char host[INET6_ADDRSTRLEN];
    format_peer((const struct sockaddr *)&ss, host, sizeof host);
    log_info("metrics.http: serving /metrics, /healthz, /readyz on %s%s%s:%u",
             ss.ss_family == AF_INET6 ? "[" : "", host, ss.ss_family == AF_INET6 ? "]" : "",
             h->port);
    return h;
}

unsigned hf_http_port(const struct hf_http *h) { return h->port; }

static void on_closed(uv_handle_t *handle) {
    struct hf_http *h = handle->data;
    if (--h->open_handles == 0) free(h);
}

void hf_http_close(struct hf_http *h) {
    if (!h) return;
    /* uv_close takes the descriptor out of the loop's epoll at once, before
     * MHD closes it. */
    uv_close((uv_handle_t *)&h->poll, on_closed);
    uv_close((uv_handle_t *)&h->timer, on_closed);
    MHD_stop_daemon(h->mhd);
    h->mhd = NULL;
}
