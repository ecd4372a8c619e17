/* server.c - listens on the Unix socket and admits clients: the socket file's
 * mode and group are the first gate, SO_PEERCRED against the allow lists the
 * second, limits.max_connections the third, limits.max_connections_per_uid
 * (its count of connections per peer uid) the fourth. */
#include "server.h"

#include <errno.h>
#include <grp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>
#include <utlist.h>

#include "conn.h"
#include "log.h"
#include "metrics.h"

/* The server's own record of a connection it accepted. */
struct entry {
    struct hf_server *srv;
    struct hf_conn *conn;
    struct entry *prev, *next;
    uint32_t uid;
    bool uid_counted; /* in srv->uids */
};

/* Open connections of one peer uid. Few distinct uids talk to one daemon,
 * so a short array searched in order serves. */
struct uid_count {
    uint32_t uid;
    unsigned n;
};

struct hf_server {
    uv_pipe_t listener;
    struct hf_daemon *d;
    hf_server_accept_fn *on_accept;
    void *ud;
    struct entry *conns;
    struct uid_count *uids;
    size_t n_uids, cap_uids;
    bool listening;
    bool listener_closed;
    bool closing;
    char *bound_path; /* unlinked on close: we created it */
};

/* Freed only when the listener and every connection have closed: close
 * callbacks of connections still reach the server's list. */
static void maybe_free(struct hf_server *srv) {
    if (!srv->closing || !srv->listener_closed || srv->conns) return;
    free(srv->uids);
    free(srv->bound_path);
    free(srv);
}

/* The uid's count after adding one; 0 when out of memory. */
static unsigned uid_add(struct hf_server *srv, uint32_t uid) {
    for (size_t i = 0; i < srv->n_uids; i++)
        if (srv->uids[i].uid == uid) return ++srv->uids[i].n;
    if (srv->n_uids == srv->cap_uids) {
        size_t cap = srv->cap_uids ? srv->cap_uids * 2 : 8;
        struct uid_count *grown = realloc(srv->uids, cap * sizeof *grown);
        if (!grown) return 0;
        srv->uids = grown;
        srv->cap_uids = cap;
    }
    srv->uids[srv->n_uids++] = (struct uid_count){uid, 1};
    return 1;
}

static void uid_remove(struct hf_server *srv, uint32_t uid) {
    for (size_t i = 0; i < srv->n_uids; i++) {
        if (srv->uids[i].uid != uid) continue;
        if (--srv->uids[i].n == 0) srv->uids[i] = srv->uids[--srv->n_uids];
        return;
    }
}

static void on_conn_closed(void *owner, struct hf_conn *conn) {
    (void)conn;
    struct entry *e = owner;
    struct hf_server *srv = e->srv;
    if (e->uid_counted) uid_remove(srv, e->uid);
    DL_DELETE(srv->conns, e);
    free(e);
    srv->d->connections--;
    hf_metrics_gauge_set(HF_G_CONNECTIONS, srv->d->connections);
    maybe_free(srv);
}

static struct entry *add_conn(struct hf_server *srv) {
    struct entry *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->conn = hf_conn_create(srv->d, on_conn_closed, e);
    if (!e->conn) {
        free(e);
        return NULL;
    }
    e->srv = srv;
    DL_PREPEND(srv->conns, e);
    srv->d->connections++;
    hf_metrics_gauge_set(HF_G_CONNECTIONS, srv->d->connections);
    return e;
}

static bool id_allowed(const uint32_t *list, size_t n, uint32_t id) {
    for (size_t i = 0; i < n; i++)
        if (list[i] == id) return true;
    return false;
}

/* Empty allow lists admit every peer that can open the socket file. */
static bool peer_allowed(const struct hf_config *cfg, int fd, struct ucred *cred) {
    socklen_t len = sizeof *cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cred, &len) != 0) return false;
    if (cfg->n_allow_uids == 0 && cfg->n_allow_gids == 0) return true;
    return id_allowed(cfg->allow_uids, cfg->n_allow_uids, cred->uid) ||
           id_allowed(cfg->allow_gids, cfg->n_allow_gids, cred->gid);
}

static void on_connection(uv_stream_t *listener, int status) {
    struct hf_server *srv = listener->data;
    struct hf_daemon *d = srv->d;
    if (status < 0) {
        log_warn("accept: %s", uv_strerror(status));
        return;
    }
    struct entry *e = add_conn(srv);
    if (!e) {
        log_error("accept: out of memory");
        return;
    }
    struct hf_conn *conn = e->conn;
    if (uv_accept(listener, hf_conn_stream(conn)) != 0) {
        hf_conn_close(conn);
        return;
    }
    uv_os_fd_t fd;
    uv_fileno((uv_handle_t *)hf_conn_stream(conn), &fd);
    struct ucred cred = {0};
    bool allowed = peer_allowed(d->cfg, fd, &cred);
    hf_conn_set_peer(conn, cred.uid, cred.gid, (int32_t)cred.pid);
    if (!allowed) {
        hf_metrics_inc(HF_C_CONNECTIONS_REJECTED);
        log_warn("accept: peer pid=%d uid=%u gid=%u not in socket.allow_uids/allow_gids",
                 (int)cred.pid, cred.uid, cred.gid);
        hf_conn_fatal(conn, HF_CODE(PERMISSION_DENIED),
                      "peer credentials not allowed");
        return;
    }
    if (d->connections > d->cfg->max_connections) {
        hf_metrics_inc(HF_C_CONNECTIONS_REJECTED);
        log_warn("accept: limits.max_connections (%u) reached", d->cfg->max_connections);
        hf_conn_fatal(conn, HF_CODE(RESOURCE_EXHAUSTED),
                      "too many connections");
        return;
    }
    /* Counted from here until it closes, also when refused just below, as
     * the total counts a refused connection until its answer is out. */
    unsigned per_uid = uid_add(srv, cred.uid);
    e->uid = cred.uid;
    e->uid_counted = per_uid > 0;
    if (per_uid == 0) {
        log_error("accept: out of memory");
        hf_conn_fatal(conn, HF_CODE(RESOURCE_EXHAUSTED), "out of memory");
        return;
    }
    uint32_t uid_limit = d->cfg->max_connections_per_uid;
    if (uid_limit && per_uid > uid_limit) {
        hf_metrics_inc(HF_C_CONNECTIONS_REJECTED);
        log_warn("accept: peer pid=%d uid=%u: limits.max_connections_per_uid (%u) reached",
                 (int)cred.pid, cred.uid, uid_limit);
        hf_conn_fatal(conn, HF_CODE(RESOURCE_EXHAUSTED),
                      "too many connections for this uid");
        return;
    }
    hf_metrics_inc(HF_C_CONNECTIONS_ACCEPTED);
    srv->on_accept(srv->ud, conn);
    hf_conn_start(conn);
}

static int bind_path(struct hf_server *srv, const struct hf_config *cfg) {
    const char *path = cfg->socket_path;
    struct stat st;
    /* A socket left by a previous run would make bind fail; anything that is
     * not a socket is not ours to remove. */
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            log_error("socket.path %s exists and is not a socket", path);
            return -EEXIST;
        }
        unlink(path);
    }
    /* Created owner-only (umask), listening at once so a client that sees
     * the file is never refused, then opened up to the configured mode and
     * group: nobody else can connect before the permissions are final. */
    mode_t old_umask = umask(0177);
    int rc = uv_pipe_bind(&srv->listener, path);
    umask(old_umask);
    if (rc != 0) {
        log_error("bind %s: %s", path, uv_strerror(rc));
        return rc;
    }
    srv->bound_path = strdup(path);
    rc = uv_listen((uv_stream_t *)&srv->listener, SOMAXCONN, on_connection);
    if (rc != 0) {
        log_error("listen %s: %s", path, uv_strerror(rc));
        return rc;
    }
    /* The group first, while the file is still owner-only: the mode then
     * opens it to that group and never, for a moment, to the old one. */
    if (cfg->socket_group) {
        struct group *g = getgrnam(cfg->socket_group);
        if (!g) {
            log_error("socket.group %s: no such group", cfg->socket_group);
            return -ENOENT;
        }
        if (chown(path, (uid_t)-1, g->gr_gid) != 0) {
            log_error("chown %s to group %s: %s", path, cfg->socket_group, strerror(errno));
            return -errno;
        }
    }
    if (chmod(path, (mode_t)cfg->socket_mode) != 0) {
        log_error("chmod %s: %s", path, strerror(errno));
        return -errno;
    }
    return 0;
}

struct hf_server *hf_server_create(struct hf_daemon *d, hf_server_accept_fn *on_accept,
                                   void *ud) {
    struct hf_server *srv = calloc(1, sizeof *srv);
    if (!srv) return NULL;
    srv->d = d;
    srv->on_accept = on_accept;
    srv->ud = ud;
    uv_pipe_init(d->loop, &srv->listener, 0);
    srv->listener.data = srv;
    int rc;
    int n = sd_listen_fds(1);
    if (n == 1 && sd_is_socket_unix(SD_LISTEN_FDS_START, SOCK_STREAM, 1, NULL, 0) > 0) {
        rc = uv_pipe_open(&srv->listener, SD_LISTEN_FDS_START);
        if (rc == 0) rc = uv_listen((uv_stream_t *)&srv->listener, SOMAXCONN, on_connection);
        if (rc == 0) log_info("listening on the socket passed by systemd (fd %d)", SD_LISTEN_FDS_START);
        else log_error("the socket passed by systemd: %s", uv_strerror(rc));
    } else {
        if (n > 1) log_warn("systemd passed %d sockets; expected one, binding socket.path", n);
        rc = bind_path(srv, d->cfg);
        if (rc == 0) log_info("listening on %s", d->cfg->socket_path);
    }
    srv->listening = true; /* the handle is open either way: close must close it */
    if (rc != 0) {
        hf_server_close(srv);
        return NULL;
    }
    return srv;
}

static void on_listener_closed(uv_handle_t *h) {
    struct hf_server *srv = h->data;
    srv->listener_closed = true;
    maybe_free(srv);
}

void hf_server_stop_accepting(struct hf_server *srv) {
    if (!srv || !srv->listening) return;
    srv->listening = false;
    if (srv->bound_path) unlink(srv->bound_path);
    uv_close((uv_handle_t *)&srv->listener, on_listener_closed);
}

void hf_server_stop_reading(struct hf_server *srv) {
    if (!srv) return;
    for (struct entry *e = srv->conns; e; e = e->next) hf_conn_stop_reading(e->conn);
}

void hf_server_close(struct hf_server *srv) {
    if (!srv || srv->closing) return;
    srv->closing = true;
    for (struct entry *e = srv->conns; e; e = e->next) hf_conn_close(e->conn);
    hf_server_stop_accepting(srv);
    maybe_free(srv);
}
