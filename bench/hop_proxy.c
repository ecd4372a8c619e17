/* hop_proxy - the floor of any hop between a client and Redis: one thread,
 * one epoll loop, forwarding bytes between each client and a Redis
 * connection of its own and doing nothing else (no parsing, no batching).
 *
 *   hop_proxy LISTEN_SOCKET REDIS_SOCKET
 *
 * bench/run.sh runs bench_pairs' straight-to-Redis modes through it: what it
 * adds to SET NX is what one more process on the path costs on this machine
 * (its wake-ups and its socket reads and writes), whatever that process
 * does. Not a product: sockets stay blocking for writes (requests and
 * answers in a benchmark are small and bounded, so a write never waits for
 * long), and a connection that fails is simply closed with its peer. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* One side of a forwarded connection; its peer is the other side. */
struct end {
    int fd;
    struct end *peer;
};

static int unix_socket(const char *path, struct sockaddr_un *addr) {
    memset(addr, 0, sizeof *addr);
    addr->sun_family = AF_UNIX;
    if (strlen(path) >= sizeof addr->sun_path) {
        fprintf(stderr, "hop_proxy: socket path too long: %s\n", path);
        exit(2);
    }
    strcpy(addr->sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        perror("hop_proxy: socket");
        exit(1);
    }
    return fd;
}

static void watch(int ep, struct end *e) {
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = e};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, e->fd, &ev) != 0) {
        perror("hop_proxy: epoll_ctl");
        exit(1);
    }
}

static int write_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Closing a fd takes it out of the epoll set; both ends go together. */
static void drop(struct end *e) {
    close(e->fd);
    close(e->peer->fd);
    free(e->peer);
    free(e);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: hop_proxy LISTEN_SOCKET REDIS_SOCKET\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    struct sockaddr_un listen_addr, redis_addr;
    int lfd = unix_socket(argv[1], &listen_addr);
    unlink(argv[1]);
    if (bind(lfd, (struct sockaddr *)&listen_addr, sizeof listen_addr) != 0 ||
        listen(lfd, 512) != 0) {
        perror("hop_proxy: listen");
        return 1;
    }
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct end listener = {.fd = lfd};
    watch(ep, &listener);
    static char buf[1 << 16];
    struct epoll_event events[256];
    for (;;) {
        int n = epoll_wait(ep, events, 256, -1);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            perror("hop_proxy: epoll_wait");
            return 1;
        }
        for (int i = 0; i < n; i++) {
            struct end *e = events[i].data.ptr;
            if (!e) continue; /* dropped with its peer */
            if (e == &listener) {
                int cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
                if (cfd < 0) continue;
                int rfd = unix_socket(argv[2], &redis_addr);
                if (connect(rfd, (struct sockaddr *)&redis_addr, sizeof redis_addr) != 0) {
                    perror("hop_proxy: connect to Redis");
                    close(cfd);
                    close(rfd);
                    continue;
                }
                struct end *client = malloc(sizeof *client), *redis = malloc(sizeof *redis);
                if (!client || !redis) return 1;
                *client = (struct end){.fd = cfd, .peer = redis};
                *redis = (struct end){.fd = rfd, .peer = client};
                watch(ep, client);
                watch(ep, redis);
                continue;
            }
            ssize_t r = read(e->fd, buf, sizeof buf);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0 || write_all(e->peer->fd, buf, (size_t)r) != 0) {
                /* Its peer may be among this round's events: stop there. */
                for (int j = i + 1; j < n; j++)
                    if (events[j].data.ptr == e->peer) events[j].data.ptr = NULL;
                drop(e);
            }
        }
    }
}
