/* bench_hold - throughput through holdfastd against baselines run by
 * bench/run.sh in the same run on the same servers.
 *
 *   bench_hold --socket S --redis R [--connections 4] [--depth 32] [--holds 200000]
 *     Hold through holdfastd vs the same Redis function called directly with
 *     hiredis: what the daemon costs on top of Redis itself.
 *   bench_hold --socket S --confirm [--connections 4] [--depth 1] [--holds 20000]
 *     Hold then Confirm through holdfastd (three Redis calls and one
 *     PostgreSQL transaction each), --depth chains in flight per connection;
 *     run.sh sets it against pgbench calling the same SQL function directly.
 *   bench_hold --socket S --pools [--connections 4] [--depth 32] [--holds 200000]
 *     A pool hold (1 unit of one pool of namespace "ga", kind "pools")
 *     against a plain seat hold, both through holdfastd: what taking units
 *     costs next to taking an id. The pool's capacity is set first
 *     (SetCapacity); every hold is granted.
 *   bench_hold --socket S --segment LEGS [--connections 4] [--depth 32] [--holds 200000]
 *     A journey-segment hold (one seat of namespace "train" on LEGS legs,
 *     stops 0..LEGS, all or nothing) against a plain seat hold, both through
 *     holdfastd: what holding a seat per leg costs next to holding it whole.
 *
 *   bench_hold --socket S --redis R --wakeup [--holds 2000]
 *     Waiting in line (docs/waiting.md): one connection holds an id, a
 *     second asks for it with wait_ms and is seen queued in Redis, then the
 *     first releases; the time from sending the Release to receiving the
 *     waiter's grant (p50/p99) against a plain Hold's round trip measured in
 *     the same run, on the same connection.
 *
 * Every hold is on its own id (all granted) with a 60 s TTL; the partition is
 * random per run so runs never collide. */
#include <getopt.h>
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "frame.h"

struct cfg {
    const char *socket_path;
    const char *redis_path;
    int connections, depth;
    long holds;
    int confirm;
    int pools;
    int legs; /* --segment */
    int wakeup;
    char partition[64];
};

struct worker {
    const struct cfg *cfg;
    int index;
    int pools; /* holdfast_worker: hold units of a pool instead of an id */
    int legs;  /* holdfast_worker: hold the id on this many legs (0: whole) */
    long done, failed;
    pthread_t thread;
};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int read_full(int fd, uint8_t *buf, size_t n) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r <= 0) return -1;
        got += (size_t)r;
    }
    return 0;
}

static int connect_daemon(const char *path) {
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        perror("connect holdfastd");
        exit(1);
    }
    return fd;
}

static hf_response_msg *read_response(int fd, uint8_t *buf);
static void hold_msg(hf_request_msg *req, Holdfast__V1__HoldRequest *hold, char **ids,
                     const char *partition, uint32_t wait_ms);

/* One request's frame into buf (at most cap bytes); its length. */
static size_t pack_into(const hf_request_msg *req, uint8_t *buf, size_t cap) {
    size_t len;
    uint8_t *frame = hf_frame_pack_request(req, &len);
    if (!frame || len > cap) exit(1);
    memcpy(buf, frame, len);
    free(frame);
    return len;
}

static void *holdfast_worker(void *arg) {
    struct worker *w = arg;
    const struct cfg *c = w->cfg;
    int fd = connect_daemon(c->socket_path);
    long quota = c->holds / c->connections;
    uint8_t *batch = malloc((size_t)c->depth * 256);
    uint8_t *resp = malloc(65536);
    char id[32];
    char *ids[1] = {id};
    for (long sent = 0; sent < quota;) {
        size_t off = 0;
        int n = 0;
        for (; n < c->depth && sent < quota; n++, sent++) {
            snprintf(id, sizeof id, "w%d-%ld", w->index, sent);
            hf_request_msg req = HOLDFAST__V1__REQUEST__INIT;
            Holdfast__V1__HoldRequest hold = HOLDFAST__V1__HOLD_REQUEST__INIT;
            Holdfast__V1__PoolTake take = HOLDFAST__V1__POOL_TAKE__INIT;
            Holdfast__V1__PoolTake *units[1] = {&take};
            Holdfast__V1__Segment segment = HOLDFAST__V1__SEGMENT__INIT;
            hold.namespace_ = "seat";
            hold.partition = (char *)c->partition;
            hold.ids = ids;
            hold.n_ids = 1;
            hold.ttl_ms = 60000;
            if (w->pools) {
                /* One unit of the one pool: every hold meets the others there. */
                take.pool = "ga";
                take.count = 1;
                hold.namespace_ = "ga";
                hold.ids = NULL;
                hold.n_ids = 0;
                hold.units = units;
                hold.n_units = 1;
            }
            if (w->legs) {
                segment.from_stop = 0;
                segment.to_stop = (uint32_t)w->legs;
                hold.namespace_ = "train";
                hold.segment = &segment;
            }
            req.id = (uint64_t)sent + 1;
            req.method_case = HOLDFAST__V1__REQUEST__METHOD_HOLD;
            req.hold = &hold;
            off += pack_into(&req, batch + off, 256);
        }
        if (write(fd, batch, off) != (ssize_t)off) exit(1);
        for (int i = 0; i < n; i++) {
            uint8_t hdr[4];
            size_t plen;
            if (read_full(fd, hdr, 4) != 0) exit(1);
            hf_frame_peek(hdr, 4, 65536, &plen);
            if (read_full(fd, resp, plen) != 0) exit(1);
            hf_response_msg *r = hf_frame_unpack_response(resp, plen);
            if (r && r->code == HOLDFAST__V1__CODE__CODE_OK) w->done++;
            else w->failed++;
            hf_response_msg_free(r);
        }
    }
    free(batch);
    free(resp);
    close(fd);
    return NULL;
}

/* Hold then Confirm, --depth chains at a time per connection: the holds of
 * a round go in one write, then the confirms of those granted in another
 * (depth 1: one hold, then its confirm, as a sequential client does). */
static void *confirm_worker(void *arg) {
    struct worker *w = arg;
    const struct cfg *c = w->cfg;
    int fd = connect_daemon(c->socket_path);
    int depth = c->depth;
    uint8_t *buf = malloc(65536);
    uint8_t *out = malloc((size_t)depth * 512);
    char(*ids)[32] = calloc((size_t)depth, sizeof *ids);
    char(*tokens)[64] = calloc((size_t)depth, sizeof *tokens);
    char key[128], partition[96];
    /* A partition per connection, as pgbench's script has one per client. */
    snprintf(partition, sizeof partition, "%s-w%d", c->partition, w->index);
    long quota = c->holds / c->connections;
    for (long next = 0; next < quota;) {
        int n = 0;
        size_t off = 0;
        for (; n < depth && next < quota; n++, next++) {
            snprintf(ids[n], sizeof ids[n], "w%d-%ld", w->index, next);
            char *one[1] = {ids[n]};
            hf_request_msg req = HOLDFAST__V1__REQUEST__INIT;
            Holdfast__V1__HoldRequest hold = HOLDFAST__V1__HOLD_REQUEST__INIT;
            hold_msg(&req, &hold, one, partition, 0);
            req.id = (uint64_t)n + 1;
            off += pack_into(&req, out + off, 512);
        }
        if (write(fd, out, off) != (ssize_t)off) exit(1);
        for (int i = 0; i < n; i++) {
            hf_response_msg *r = read_response(fd, buf);
            if (!r || r->id < 1 || r->id > (uint64_t)n) exit(1);
            char *token = tokens[r->id - 1];
            token[0] = 0;
            if (r->code == HOLDFAST__V1__CODE__CODE_OK) snprintf(token, 64, "%s", r->hold->token);
            else w->failed++;
            hf_response_msg_free(r);
        }
        off = 0;
        int confirms = 0;
        for (int i = 0; i < n; i++) {
            if (!tokens[i][0]) continue;
            char *one[1] = {ids[i]};
            snprintf(key, sizeof key, "%s-%s", partition, ids[i]);
            hf_request_msg req = HOLDFAST__V1__REQUEST__INIT;
            Holdfast__V1__ConfirmRequest conf = HOLDFAST__V1__CONFIRM_REQUEST__INIT;
            conf.namespace_ = "seat", conf.partition = partition;
            conf.ids = one, conf.n_ids = 1, conf.token = tokens[i], conf.idempotency_key = key;
            conf.reference = "bench";
            req.id = (uint64_t)i + 1, req.method_case = HOLDFAST__V1__REQUEST__METHOD_CONFIRM;
            req.confirm = &conf;
            off += pack_into(&req, out + off, 512);
            confirms++;
        }
        if (off && write(fd, out, off) != (ssize_t)off) exit(1);
        for (int i = 0; i < confirms; i++) {
            hf_response_msg *r = read_response(fd, buf);
            if (r && r->code == HOLDFAST__V1__CODE__CODE_OK) w->done++;
            else w->failed++;
            hf_response_msg_free(r);
        }
    }
    free(buf);
    free(out);
    free(ids);
    free(tokens);
    close(fd);
    return NULL;
}

static void *redis_worker(void *arg) {
    struct worker *w = arg;
    const struct cfg *c = w->cfg;
    redisContext *rc = redisConnectUnix(c->redis_path);
    if (!rc || rc->err) {
        fprintf(stderr, "connect redis failed\n");
        exit(1);
    }
    long quota = c->holds / c->connections;
    char fence_key[160], key[200];
    snprintf(fence_key, sizeof fence_key, "hf:{seat:%s-direct}:#fence", c->partition);
    for (long sent = 0; sent < quota;) {
        int n = 0;
        for (; n < c->depth && sent < quota; n++, sent++) {
            snprintf(key, sizeof key, "hf:{seat:%s-direct}:w%d-%ld", c->partition, w->index, sent);
            redisAppendCommand(rc, "FCALL hf1_hold 2 %s %s AAAAAAAAAAAAAAAAAAAAAA 60000",
                               fence_key, key);
        }
        for (int i = 0; i < n; i++) {
            redisReply *r;
            if (redisGetReply(rc, (void **)&r) != REDIS_OK) exit(1);
            if (r->type == REDIS_REPLY_ARRAY && r->element[0]->integer == 1) w->done++;
            else w->failed++;
            freeReplyObject(r);
        }
    }
    redisFree(rc);
    return NULL;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double percentile(double *v, long n, double p) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    long i = (long)(p * (double)(n - 1) + 0.5);
    return v[i];
}

static void send_request(int fd, hf_request_msg *req) {
    size_t len;
    uint8_t *frame = hf_frame_pack_request(req, &len);
    if (write(fd, frame, len) != (ssize_t)len) exit(1);
    free(frame);
}

static hf_response_msg *read_response(int fd, uint8_t *buf) {
    uint8_t hdr[4];
    size_t plen;
    if (read_full(fd, hdr, 4) != 0) exit(1);
    hf_frame_peek(hdr, 4, 65536, &plen);
    if (read_full(fd, buf, plen) != 0) exit(1);
    return hf_frame_unpack_response(buf, plen);
}

/* One request, one answer, on a blocking socket. */
static hf_response_msg *roundtrip(int fd, hf_request_msg *req, uint8_t *resp_buf) {
    send_request(fd, req);
    return read_response(fd, resp_buf);
}

static void hold_msg(hf_request_msg *req, Holdfast__V1__HoldRequest *hold, char **ids,
                     const char *partition, uint32_t wait_ms) {
    hold->namespace_ = "seat", hold->partition = (char *)partition;
    hold->ids = ids, hold->n_ids = 1, hold->ttl_ms = 60000, hold->wait_ms = wait_ms;
    req->id = 1, req->method_case = HOLDFAST__V1__REQUEST__METHOD_HOLD, req->hold = hold;
    req->timeout_ms = wait_ms ? wait_ms + 1000 : 0;
}

static int release_msg(int fd, uint8_t *buf, char **ids, const char *partition,
                       const char *token, int wait_answer) {
    hf_request_msg req = HOLDFAST__V1__REQUEST__INIT;
    Holdfast__V1__ReleaseRequest rel = HOLDFAST__V1__RELEASE_REQUEST__INIT;
    rel.namespace_ = "seat", rel.partition = (char *)partition;
    rel.ids = ids, rel.n_ids = 1, rel.token = (char *)token;
    req.id = 2, req.method_case = HOLDFAST__V1__REQUEST__METHOD_RELEASE, req.release = &rel;
    send_request(fd, &req);
    if (!wait_answer) return 0;
    hf_response_msg *r = read_response(fd, buf);
    int ok = r && r->code == HOLDFAST__V1__CODE__CODE_OK;
    hf_response_msg_free(r);
    return ok ? 0 : -1;
}

/* Release -> the waiter's grant, against a plain Hold's round trip. */
static int run_wakeup(const struct cfg *c) {
    int a = connect_daemon(c->socket_path), b = connect_daemon(c->socket_path);
    redisContext *rc = redisConnectUnix(c->redis_path);
    if (!rc || rc->err) {
        fprintf(stderr, "connect redis failed\n");
        return 1;
    }
    long rounds = c->holds;
    double *rtt = calloc((size_t)rounds, sizeof *rtt), *wake = calloc((size_t)rounds, sizeof *wake);
    uint8_t *buf = malloc(65536);
    char id[32], token[64], line[200];
    char *ids[1] = {id};
    long failed = 0;
    for (long i = 0; i < rounds; i++) {
        snprintf(id, sizeof id, "wk-%ld", i);
        snprintf(line, sizeof line, "hf:{seat:%s}:#line:%s", c->partition, id);
        /* The baseline: a plain Hold's round trip (the holder's). */
        hf_request_msg req = HOLDFAST__V1__REQUEST__INIT;
        Holdfast__V1__HoldRequest hold = HOLDFAST__V1__HOLD_REQUEST__INIT;
        hold_msg(&req, &hold, ids, c->partition, 0);
        double t0 = now_s();
        hf_response_msg *r = roundtrip(a, &req, buf);
        rtt[i] = now_s() - t0;
        if (!r || r->code != HOLDFAST__V1__CODE__CODE_OK) {
            hf_response_msg_free(r);
            failed++;
            break;
        }
        snprintf(token, sizeof token, "%s", r->hold->token);
        hf_response_msg_free(r);
        /* The waiter queues; seen in its line before the release. */
        hf_request_msg wreq = HOLDFAST__V1__REQUEST__INIT;
        Holdfast__V1__HoldRequest whold = HOLDFAST__V1__HOLD_REQUEST__INIT;
        hold_msg(&wreq, &whold, ids, c->partition, 10000);
        send_request(b, &wreq);
        for (int tries = 0;; tries++) {
            redisReply *z = redisCommand(rc, "ZCARD %s", line);
            long long n = z && z->type == REDIS_REPLY_INTEGER ? z->integer : 0;
            freeReplyObject(z);
            if (n == 1) break;
            if (tries > 100000) {
                fprintf(stderr, "bench_hold: the waiter never queued\n");
                return 1;
            }
        }
        t0 = now_s();
        release_msg(a, buf, ids, c->partition, token, 0);
        r = read_response(b, buf);
        wake[i] = now_s() - t0;
        int ok = r && r->code == HOLDFAST__V1__CODE__CODE_OK;
        if (ok) snprintf(token, sizeof token, "%s", r->hold->token);
        hf_response_msg_free(r);
        r = read_response(a, buf); /* the holder's release */
        if (!ok || !r || r->code != HOLDFAST__V1__CODE__CODE_OK) failed++;
        hf_response_msg_free(r);
        if (ok && release_msg(b, buf, ids, c->partition, token, 1) != 0) failed++;
        if (failed) break;
    }
    if (!failed) {
        double r50 = percentile(rtt, rounds, 0.5) * 1e6;
        double r99 = percentile(rtt, rounds, 0.99) * 1e6;
        double w50 = percentile(wake, rounds, 0.5) * 1e6;
        double w99 = percentile(wake, rounds, 0.99) * 1e6;
        printf("plain hold round trip:      p50 %.0f us  p99 %.0f us  (%ld rounds)\n", r50, r99,
               rounds);
        printf("release -> waiter's grant:  p50 %.0f us  p99 %.0f us\n", w50, w99);
        printf("ratio wake-up/hold round trip: p50 %.2f  p99 %.2f\n", w50 / r50, w99 / r99);
    } else {
        fprintf(stderr, "bench_hold: a wake-up round failed\n");
    }
    free(rtt);
    free(wake);
    free(buf);
    redisFree(rc);
    close(a);
    close(b);
    return failed ? 1 : 0;
}

/* SetCapacity of the pool the pool holds take from: room for all of them. */
static int set_capacity(const struct cfg *c) {
    int fd = connect_daemon(c->socket_path);
    uint8_t *buf = malloc(65536);
    hf_request_msg req = HOLDFAST__V1__REQUEST__INIT;
    Holdfast__V1__SetCapacityRequest set = HOLDFAST__V1__SET_CAPACITY_REQUEST__INIT;
    set.namespace_ = "ga", set.partition = (char *)c->partition, set.pool = "ga";
    set.capacity = (uint64_t)c->holds + 1;
    req.id = 1, req.method_case = HOLDFAST__V1__REQUEST__METHOD_SET_CAPACITY;
    req.set_capacity = &set;
    hf_response_msg *r = roundtrip(fd, &req, buf);
    int ok = r && r->code == HOLDFAST__V1__CODE__CODE_OK;
    if (!ok)
        fprintf(stderr, "bench_hold: SetCapacity failed: %s (is namespace \"ga\" of kind "
                        "pools configured, with PostgreSQL?)\n",
                r && r->message ? r->message : "no answer");
    hf_response_msg_free(r);
    free(buf);
    close(fd);
    return ok ? 0 : -1;
}

static double run_workers(const struct cfg *c, void *(*fn)(void *), int pools, int legs,
                          long *done, long *failed);

static double run(const struct cfg *c, void *(*fn)(void *), long *done, long *failed) {
    return run_workers(c, fn, 0, 0, done, failed);
}

static double run_workers(const struct cfg *c, void *(*fn)(void *), int pools, int legs,
                          long *done, long *failed) {
    struct worker *ws = calloc((size_t)c->connections, sizeof *ws);
    double t0 = now_s();
    for (int i = 0; i < c->connections; i++) {
        ws[i].cfg = c;
        ws[i].index = i;
        ws[i].pools = pools;
        ws[i].legs = legs;
        pthread_create(&ws[i].thread, NULL, fn, &ws[i]);
    }
    *done = *failed = 0;
    for (int i = 0; i < c->connections; i++) {
        pthread_join(ws[i].thread, NULL);
        *done += ws[i].done;
        *failed += ws[i].failed;
    }
    double elapsed = now_s() - t0;
    free(ws);
    return elapsed;
}

int main(int argc, char **argv) {
    struct cfg c = {.connections = 4, .depth = 0, .holds = 200000};
    static const struct option opts[] = {
        {"socket", required_argument, NULL, 's'}, {"redis", required_argument, NULL, 'r'},
        {"connections", required_argument, NULL, 'c'}, {"depth", required_argument, NULL, 'd'},
        {"holds", required_argument, NULL, 'n'}, {"confirm", no_argument, NULL, 'C'},
        {"pools", no_argument, NULL, 'P'}, {"segment", required_argument, NULL, 'S'},
        {"wakeup", no_argument, NULL, 'W'},
        {NULL, 0, NULL, 0}};
    int o;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (o) {
        case 's': c.socket_path = optarg; break;
        case 'r': c.redis_path = optarg; break;
        case 'c': c.connections = atoi(optarg); break;
        case 'd': c.depth = atoi(optarg); break;
        case 'n': c.holds = atol(optarg); break;
        case 'C': c.confirm = 1; break;
        case 'P': c.pools = 1; break;
        case 'S': c.legs = atoi(optarg); break;
        case 'W': c.wakeup = 1; break;
        default: return 2;
        }
    }
    snprintf(c.partition, sizeof c.partition, "bench-%ld-%d", (long)time(NULL), (int)getpid());
    long done, failed;
    /* Holds go 32 at a time unless told; hold+confirm one chain at a time. */
    if (c.depth <= 0) c.depth = c.confirm ? 1 : 32;
    if (c.socket_path && c.confirm) {
        double t = run(&c, confirm_worker, &done, &failed);
        printf("through holdfastd: %ld hold+confirm in %.3f s = %.0f confirms/s (%ld failed)\n",
               done, t, (double)done / t, failed);
        return failed ? 1 : 0;
    }
    if (c.socket_path && c.redis_path && c.wakeup) {
        if (c.holds == 200000) c.holds = 2000; /* rounds: one at a time */
        return run_wakeup(&c);
    }
    if (c.socket_path && c.pools) {
        if (set_capacity(&c) != 0) return 1;
        double seat = run_workers(&c, holdfast_worker, 0, 0, &done, &failed);
        double seat_rate = (double)done / seat;
        long seat_failed = failed;
        printf("seat holds through holdfastd: %ld holds in %.3f s = %.0f holds/s (%ld refused)\n",
               done, seat, seat_rate, failed);
        double pool = run_workers(&c, holdfast_worker, 1, 0, &done, &failed);
        double pool_rate = (double)done / pool;
        printf("pool holds through holdfastd: %ld holds in %.3f s = %.0f holds/s (%ld refused)\n",
               done, pool, pool_rate, failed);
        printf("ratio pool hold/seat hold = %.2f (connections=%d depth=%d, one pool)\n",
               pool_rate / seat_rate, c.connections, c.depth);
        return failed || seat_failed ? 1 : 0;
    }
    if (c.socket_path && c.legs > 0) {
        double seat = run_workers(&c, holdfast_worker, 0, 0, &done, &failed);
        double seat_rate = (double)done / seat;
        long seat_failed = failed;
        printf("seat holds through holdfastd:    %ld holds in %.3f s = %.0f holds/s (%ld refused)\n",
               done, seat, seat_rate, failed);
        double seg = run_workers(&c, holdfast_worker, 0, c.legs, &done, &failed);
        double seg_rate = (double)done / seg;
        printf("segment holds through holdfastd: %ld holds in %.3f s = %.0f holds/s (%ld refused)\n",
               done, seg, seg_rate, failed);
        printf("ratio segment hold/seat hold = %.2f (connections=%d depth=%d, %d legs)\n",
               seg_rate / seat_rate, c.connections, c.depth, c.legs);
        return failed || seat_failed ? 1 : 0;
    }
    if (!c.socket_path || !c.redis_path) {
        fprintf(stderr, "usage: bench_hold --socket S (--redis R [--wakeup] | --confirm | --pools"
                        " | --segment LEGS)"
                        " [--connections N] [--depth D] [--holds H]\n");
        return 2;
    }
    double direct = run(&c, redis_worker, &done, &failed);
    double direct_rate = (double)done / direct;
    printf("direct hiredis FCALL hf1_hold: %ld holds in %.3f s = %.0f holds/s (%ld refused)\n",
           done, direct, direct_rate, failed);
    double via = run(&c, holdfast_worker, &done, &failed);
    double via_rate = (double)done / via;
    printf("through holdfastd:             %ld holds in %.3f s = %.0f holds/s (%ld refused)\n",
           done, via, via_rate, failed);
    printf("ratio holdfastd/direct = %.2f (connections=%d depth=%d)\n", via_rate / direct_rate,
           c.connections, c.depth);
    return failed ? 1 : 0;
}
