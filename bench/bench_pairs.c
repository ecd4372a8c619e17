/* bench_pairs - hold -> release pairs, one client shape against three
 * targets, so that the ratios bench/run.sh prints compare like with like:
 *
 *   bench_pairs daemon SOCKET C K SECONDS  through holdfastd (Hold, Release)
 *   bench_pairs setnx  SOCKET C K SECONDS  straight to Redis the way lock
 *                                          libraries do it: SET key token NX PX,
 *                                          then EVALSHA compare-and-delete
 *   bench_pairs fcall  SOCKET C K SECONDS  straight to Redis: FCALL hf1_hold,
 *                                          FCALL hf1_release (the daemon's own
 *                                          Redis work, without the daemon)
 *
 * C connections, one thread each (independent clients); K requests in flight
 * on each (K slots, each alternating hold and release of its own id). Each
 * round writes one request per slot in one write and reads the K answers;
 * an operation's latency runs from its round's write to its answer. Prints
 * one line: mode, shape, pairs/s, hold and release p50/p99 in microseconds.
 * Every hold must be granted and every release must release: a refusal is
 * counted and makes the exit status 1. */
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

enum mode { DAEMON, SETNX, FCALL };

static enum mode mode;
static const char *socket_path;
static int connections, in_flight;
static double seconds;
static char run_tag[40];
static char cad_sha[41]; /* compare-and-delete script, SCRIPT LOADed */

static const char CAD_SCRIPT[] =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) "
    "else return 0 end";

struct thread_result {
    long pairs, failed;
    double *hold_us, *release_us;
    size_t n_hold, n_release, cap;
};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void record(struct thread_result *r, int hold, double us) {
    if (r->n_hold >= r->cap || r->n_release >= r->cap) {
        r->cap = r->cap ? r->cap * 2 : 65536;
        r->hold_us = realloc(r->hold_us, r->cap * sizeof *r->hold_us);
        r->release_us = realloc(r->release_us, r->cap * sizeof *r->release_us);
        if (!r->hold_us || !r->release_us) exit(1);
    }
    if (hold) r->hold_us[r->n_hold++] = us;
    else r->release_us[r->n_release++] = us;
}

static int connect_unix(const char *path) {
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        perror("connect");
        exit(1);
    }
    return fd;
}

/* Answers are read as hiredis reads replies: as much as the socket has, into
 * one buffer, frames taken from it; a read per answer would charge the
 * daemon's side of the comparison with the client's syscalls. */
struct reader {
    int fd;
    uint8_t buf[1 << 16];
    size_t start, end;
};

/* The next n bytes, read as needed; NULL on EOF or error. */
static const uint8_t *reader_take(struct reader *rd, size_t n) {
    if (n > sizeof rd->buf) return NULL;
    if (rd->end - rd->start < n && rd->start > 0) {
        memmove(rd->buf, rd->buf + rd->start, rd->end - rd->start);
        rd->end -= rd->start;
        rd->start = 0;
    }
    while (rd->end - rd->start < n) {
        ssize_t r = read(rd->fd, rd->buf + rd->end, sizeof rd->buf - rd->end);
        if (r <= 0) return NULL;
        rd->end += (size_t)r;
    }
    const uint8_t *at = rd->buf + rd->start;
    rd->start += n;
    return at;
}

struct slot {
    int holding;                        /* 1: the next request is a release */
    long n;                             /* ids used so far */
    char id[64];
    char key[160];
    char token[64];
};

/* ---- through holdfastd ---- */

static void daemon_thread(int index, struct thread_result *res) {
    int fd = connect_unix(socket_path);
    struct slot *slots = calloc((size_t)in_flight, sizeof *slots);
    uint8_t *out = malloc((size_t)in_flight * 512);
    struct reader *rd = calloc(1, sizeof *rd);
    rd->fd = fd;
    char partition[96];
    snprintf(partition, sizeof partition, "%s-%d", run_tag, index);
    double end = now_s() + seconds;
    while (now_s() < end) {
        size_t off = 0;
        for (int i = 0; i < in_flight; i++) {
            struct slot *s = &slots[i];
            hf_request_msg req = HOLDFAST__V1__REQUEST__INIT;
            Holdfast__V1__HoldRequest hold = HOLDFAST__V1__HOLD_REQUEST__INIT;
            Holdfast__V1__ReleaseRequest rel = HOLDFAST__V1__RELEASE_REQUEST__INIT;
            char *ids[1] = {s->id};
            req.id = (uint64_t)i + 1;
            if (!s->holding) {
                snprintf(s->id, sizeof s->id, "s%d-%ld", i, s->n++);
                hold.namespace_ = "seat", hold.partition = partition;
                hold.ids = ids, hold.n_ids = 1, hold.ttl_ms = 60000;
                req.method_case = HOLDFAST__V1__REQUEST__METHOD_HOLD, req.hold = &hold;
            } else {
                rel.namespace_ = "seat", rel.partition = partition;
                rel.ids = ids, rel.n_ids = 1, rel.token = s->token;
                req.method_case = HOLDFAST__V1__REQUEST__METHOD_RELEASE, req.release = &rel;
            }
            size_t len;
            uint8_t *frame = hf_frame_pack_request(&req, &len);
            memcpy(out + off, frame, len);
            off += len;
            free(frame);
        }
        double sent = now_s();
        if (write(fd, out, off) != (ssize_t)off) exit(1);
        for (int i = 0; i < in_flight; i++) {
            const uint8_t *hdr = reader_take(rd, 4);
            if (!hdr) exit(1);
            size_t plen = (size_t)hdr[0] << 24 | (size_t)hdr[1] << 16 | (size_t)hdr[2] << 8 | hdr[3];
            const uint8_t *in = reader_take(rd, plen);
            if (!in) exit(1);
            double us = (now_s() - sent) * 1e6;
            hf_response_msg *r = hf_frame_unpack_response(in, plen);
            if (!r || r->id < 1 || r->id > (uint64_t)in_flight) exit(1);
            struct slot *s = &slots[r->id - 1];
            int ok = r->code == HOLDFAST__V1__CODE__CODE_OK;
            record(res, !s->holding, us);
            if (!s->holding) {
                if (ok && r->hold && r->hold->token) {
                    snprintf(s->token, sizeof s->token, "%s", r->hold->token);
                    s->holding = 1;
                } else {
                    res->failed++;
                }
            } else {
                s->holding = 0;
                if (ok) res->pairs++;
                else res->failed++;
            }
            hf_response_msg_free(r);
        }
    }
    free(slots);
    free(out);
    free(rd);
    close(fd);
}

/* ---- straight to Redis ---- */

static void redis_thread(int index, struct thread_result *res) {
    redisContext *rc = redisConnectUnix(socket_path);
    if (!rc || rc->err) exit(1);
    struct slot *slots = calloc((size_t)in_flight, sizeof *slots);
    char fence_key[160];
    snprintf(fence_key, sizeof fence_key, "hf:{seat:%s-%d}:#fence", run_tag, index);
    static const char RANDOM_PART[] = "AAAAAAAAAAAAAAAAAAAAAA";
    double end = now_s() + seconds;
    while (now_s() < end) {
        for (int i = 0; i < in_flight; i++) {
            struct slot *s = &slots[i];
            if (!s->holding) {
                snprintf(s->key, sizeof s->key, "hf:{seat:%s-%d}:s%d-%ld", run_tag, index, i,
                         s->n++);
                if (mode == SETNX) {
                    snprintf(s->token, sizeof s->token, "%d.%ld.%s", i, s->n, RANDOM_PART);
                    redisAppendCommand(rc, "SET %s %s NX PX 60000", s->key, s->token);
                } else {
                    redisAppendCommand(rc, "FCALL hf1_hold 2 %s %s %s 60000", fence_key, s->key,
                                       RANDOM_PART);
                }
            } else if (mode == SETNX) {
                redisAppendCommand(rc, "EVALSHA %s 1 %s %s", cad_sha, s->key, s->token);
            } else {
                redisAppendCommand(rc, "FCALL hf1_release 1 %s %s", s->key, s->token);
            }
        }
        double sent = now_s();
        for (int i = 0; i < in_flight; i++) {
            struct slot *s = &slots[i];
            redisReply *r;
            if (redisGetReply(rc, (void **)&r) != REDIS_OK) exit(1);
            record(res, !s->holding, (now_s() - sent) * 1e6);
            if (!s->holding) {
                int ok;
                if (mode == SETNX) {
                    ok = r->type == REDIS_REPLY_STATUS;
                } else {
                    ok = r->type == REDIS_REPLY_ARRAY && r->elements > 1 &&
                         r->element[0]->integer == 1 && r->element[1]->type == REDIS_REPLY_STRING;
                    if (ok)
                        snprintf(s->token, sizeof s->token, "%s.%s", r->element[1]->str,
                                 RANDOM_PART);
                }
                if (ok) s->holding = 1;
                else res->failed++;
            } else {
                s->holding = 0;
                /* The script answers 1; hf1_release {1 (granted), released}. */
                int ok = mode == SETNX ? r->type == REDIS_REPLY_INTEGER && r->integer == 1
                                       : r->type == REDIS_REPLY_ARRAY && r->elements > 1 &&
                                             r->element[0]->integer == 1 &&
                                             r->element[1]->integer >= 1;
                if (ok) res->pairs++;
                else res->failed++;
            }
            freeReplyObject(r);
        }
    }
    free(slots);
    redisFree(rc);
}

struct thread_arg {
    int index;
    struct thread_result res;
    pthread_t thread;
};

static void *thread_main(void *p) {
    struct thread_arg *a = p;
    if (mode == DAEMON) daemon_thread(a->index, &a->res);
    else redis_thread(a->index, &a->res);
    return NULL;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double percentile(double *v, size_t n, double p) {
    if (n == 0) return 0;
    qsort(v, n, sizeof *v, by_value);
    size_t i = (size_t)(p * (double)(n - 1));
    return v[i];
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: bench_pairs daemon|setnx|fcall SOCKET C K SECONDS\n");
        return 2;
    }
    mode = !strcmp(argv[1], "daemon") ? DAEMON : !strcmp(argv[1], "setnx") ? SETNX : FCALL;
    if (mode == FCALL && strcmp(argv[1], "fcall") != 0) return 2;
    socket_path = argv[2];
    connections = atoi(argv[3]);
    in_flight = atoi(argv[4]);
    seconds = atof(argv[5]);
    if (connections < 1 || in_flight < 1 || seconds <= 0) return 2;
    snprintf(run_tag, sizeof run_tag, "pairs-%ld-%d", (long)time(NULL), (int)getpid());
    if (mode == SETNX) {
        redisContext *rc = redisConnectUnix(socket_path);
        redisReply *r = rc && !rc->err ? redisCommand(rc, "SCRIPT LOAD %s", CAD_SCRIPT) : NULL;
        if (!r || r->type != REDIS_REPLY_STRING) return 1;
        snprintf(cad_sha, sizeof cad_sha, "%s", r->str);
        freeReplyObject(r);
        redisFree(rc);
    }
    struct thread_arg *t = calloc((size_t)connections, sizeof *t);
    double started = now_s();
    for (int i = 0; i < connections; i++) {
        t[i].index = i;
        pthread_create(&t[i].thread, NULL, thread_main, &t[i]);
    }
    struct thread_result all = {0};
    for (int i = 0; i < connections; i++) {
        pthread_join(t[i].thread, NULL);
        struct thread_result *r = &t[i].res;
        all.pairs += r->pairs;
        all.failed += r->failed;
        for (size_t j = 0; j < r->n_hold; j++) record(&all, 1, r->hold_us[j]);
        for (size_t j = 0; j < r->n_release; j++) record(&all, 0, r->release_us[j]);
        free(r->hold_us);
        free(r->release_us);
    }
    double elapsed = now_s() - started;
    printf("mode=%s C=%d K=%d pairs_per_s=%.0f failed=%ld hold_p50_us=%.1f hold_p99_us=%.1f "
           "release_p50_us=%.1f release_p99_us=%.1f\n",
           argv[1], connections, in_flight, (double)all.pairs / elapsed, all.failed,
           percentile(all.hold_us, all.n_hold, 0.50), percentile(all.hold_us, all.n_hold, 0.99),
           percentile(all.release_us, all.n_release, 0.50),
           percentile(all.release_us, all.n_release, 0.99));
    free(all.hold_us);
    free(all.release_us);
    free(t);
    return all.failed ? 1 : 0;
}
