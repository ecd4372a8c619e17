/* holdfastctl - a command for people: hold, extend, release, confirm,
 * cancel, status, health, metrics, pool capacities (set-capacity,
 * get-capacity) and config checks over the daemon's socket.
 *
 * Output is key=value lines on stdout, easy to read and to parse in a shell;
 * errors and warnings go to stderr. Hold prints its token on stdout because
 * the caller needs it to release; nothing else ever prints a token, and a
 * degraded hold (nothing held) prints none. Pass tokens back with
 * --token-stdin or HOLDFAST_TOKEN rather than --token to keep them out of
 * `ps`.
 *
 * The command line, help text and exit statuses are in ctl_args.c: 0 OK
 * (health: ready), 1 the daemon answered another code (health: not ready),
 * 2 no answer, 3 degraded, 64 usage error. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ctl/ctl_args.h"
#include "frame.h"

#define MAX_RESPONSE (16u << 20)

struct opts {
    const struct hf_ctl_args *a;
    const char *socket_path;
    uint32_t timeout_ms;
    uint32_t ttl_ms;
    const char *token;
    const char *key;
    const char *reference;
    const char *correlation_id;
};

static int connect_socket(const char *path) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof addr.sun_path) {
        close(fd);
        errno = ENAMETOOLONG;
        return -1;
    }
    strcpy(addr.sun_path, path);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Read exactly n bytes before the deadline. */
static int read_full(int fd, uint8_t *buf, size_t n, long long deadline) {
    size_t got = 0;
    while (got < n) {
        long long left = deadline - now_ms();
        if (left <= 0) return -ETIMEDOUT;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int rc = poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left);
        if (rc < 0 && errno == EINTR) continue;
        if (rc <= 0) return rc == 0 ? -ETIMEDOUT : -errno;
        ssize_t r = read(fd, buf + got, n - got);
        if (r == 0) return -ECONNRESET;
        if (r < 0) {
            if (errno == EINTR) continue;
            return -errno;
        }
        got += (size_t)r;
    }
    return 0;
}

static int write_full(int fd, const uint8_t *buf, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, buf, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -errno;
        }
        buf += w;
        n -= (size_t)w;
    }
    return 0;
}

/* One round trip. The local wait is a little longer than the deadline we
 * send, so the daemon's own DEADLINE_EXCEEDED answer arrives first. */
static hf_response_msg *roundtrip(const struct opts *o, hf_request_msg *req) {
    int fd = connect_socket(o->socket_path);
    if (fd < 0) {
        fprintf(stderr, "holdfastctl: cannot connect to %s: %s\n", o->socket_path,
                strerror(errno));
        return NULL;
    }
    req->id = 1;
    req->timeout_ms = o->timeout_ms;
    req->correlation_id = (char *)(o->correlation_id ? o->correlation_id : "");
    size_t len;
    uint8_t *frame = hf_frame_pack_request(req, &len);
    hf_response_msg *resp = NULL;
    long long deadline = now_ms() + o->timeout_ms + 1000;
    uint8_t header[HF_FRAME_HEADER];
    int rc = frame ? write_full(fd, frame, len) : -ENOMEM;
    if (rc == 0) rc = read_full(fd, header, sizeof header, deadline);
    if (rc == 0) {
        size_t body;
        if (hf_frame_peek(header, sizeof header, MAX_RESPONSE, &body) == HF_FRAME_TOO_LARGE) {
            rc = -EMSGSIZE;
        } else {
            uint8_t *payload = malloc(body ? body : 1);
            rc = payload ? read_full(fd, payload, body, deadline) : -ENOMEM;
            if (rc == 0) {
                resp = hf_frame_unpack_response(payload, body);
                if (!resp) rc = -EPROTO;
            }
            free(payload);
        }
    }
    if (rc != 0)
        fprintf(stderr, "holdfastctl: %s: %s\n", o->socket_path,
                rc == -ETIMEDOUT ? "no answer before the deadline" : strerror(-rc));
    free(frame);
    close(fd);
    return resp;
}

/* Prints an answer that is not a plain OK and returns the exit status.
 * A degraded answer is OK with nothing done (best_effort, Redis down): it
 * gets its own status and a warning, so a script cannot take it for a
 * grant. None of this prints a token: the daemon never puts one in a
 * message. */
static int report_code(const hf_response_msg *resp) {
    if (resp->code == HOLDFAST__V1__CODE__CODE_OK && !resp->degraded) return HF_CTL_EXIT_OK;
    printf("code=%s\n", hf_code_name(resp->code));
    if (resp->degraded) printf("degraded=true\n");
    if (resp->message && *resp->message) printf("message=%s\n", resp->message);
    if (resp->error && resp->error->field && *resp->error->field)
        printf("field=%s\n", resp->error->field);
    if (resp->error && resp->error->resource_id && *resp->error->resource_id)
        printf("resource_id=%s\n", resp->error->resource_id);
    printf("correlation_id=%s\n", resp->correlation_id);
    if (resp->code != HOLDFAST__V1__CODE__CODE_OK) return HF_CTL_EXIT_NOT_OK;
    fprintf(stderr,
            "holdfastctl: warning: degraded answer, nothing was held or changed: %s\n",
            resp->message && *resp->message ? resp->message : "Redis is unavailable (best_effort)");
    return HF_CTL_EXIT_DEGRADED;
}

/* An OK answer without the result asked for is no usable answer. */
static int malformed(hf_response_msg *resp, const struct opts *o) {
    fprintf(stderr, "holdfastctl: %s: the answer does not match the request\n", o->socket_path);
    hf_response_msg_free(resp);
    return HF_CTL_EXIT_UNREACHABLE;
}

static int cmd_resources(const struct opts *o, enum hf_ctl_cmd cmd, int argc, char **argv) {
    char *ns = argv[0], *partition = argv[1];
    char **ids = argv + 2;
    size_t n_ids = (size_t)(argc - 2);
    /* Pools: units (POOL=COUNT) or pool names instead of ids. */
    size_t n_pools = 0, n_units = 0;
    char **pools = NULL;
    Holdfast__V1__PoolTake *takes = NULL, **units = NULL;
    if (o->a->pools) {
        pools = o->a->pool_names;
        n_pools = n_ids;
        n_ids = 0;
        ids = NULL;
        if (cmd == HF_CTL_HOLD || cmd == HF_CTL_CONFIRM || cmd == HF_CTL_CANCEL) {
            takes = calloc(n_pools, sizeof *takes);
            units = calloc(n_pools, sizeof *units);
            if (!takes || !units) {
                free(takes);
                free(units);
                fprintf(stderr, "holdfastctl: out of memory\n");
                return HF_CTL_EXIT_UNREACHABLE;
            }
            for (size_t i = 0; i < n_pools; i++) {
                holdfast__v1__pool_take__init(&takes[i]);
                takes[i].pool = pools[i];
                takes[i].count = o->a->pool_counts[i];
                units[i] = &takes[i];
            }
            n_units = n_pools;
            n_pools = 0;
        }
    }
    hf_request_msg req = HOLDFAST__V1__REQUEST__INIT;
    Holdfast__V1__HoldRequest hold = HOLDFAST__V1__HOLD_REQUEST__INIT;
    Holdfast__V1__ExtendRequest extend = HOLDFAST__V1__EXTEND_REQUEST__INIT;
    Holdfast__V1__ReleaseRequest release = HOLDFAST__V1__RELEASE_REQUEST__INIT;
    Holdfast__V1__StatusRequest status = HOLDFAST__V1__STATUS_REQUEST__INIT;
    Holdfast__V1__ConfirmRequest confirm = HOLDFAST__V1__CONFIRM_REQUEST__INIT;
    Holdfast__V1__CancelRequest cancel = HOLDFAST__V1__CANCEL_REQUEST__INIT;
    char *token = (char *)(o->token ? o->token : "");
    char *key = (char *)(o->key ? o->key : ""), *ref = (char *)(o->reference ? o->reference : "");
    Holdfast__V1__Response__ResultCase want;
    switch (cmd) {
    case HF_CTL_HOLD:
        hold.namespace_ = ns, hold.partition = partition, hold.ids = ids, hold.n_ids = n_ids;
        hold.units = units, hold.n_units = n_units;
        hold.ttl_ms = o->ttl_ms;
        req.method_case = HOLDFAST__V1__REQUEST__METHOD_HOLD;
        req.hold = &hold;
        want = HOLDFAST__V1__RESPONSE__RESULT_HOLD;
        break;
    case HF_CTL_EXTEND:
        extend.namespace_ = ns, extend.partition = partition, extend.ids = ids;
        extend.n_ids = n_ids, extend.token = token, extend.ttl_ms = o->ttl_ms;
        extend.pools = pools, extend.n_pools = n_pools;
        req.method_case = HOLDFAST__V1__REQUEST__METHOD_EXTEND;
        req.extend = &extend;
        want = HOLDFAST__V1__RESPONSE__RESULT_EXTEND;
        break;
    case HF_CTL_RELEASE:
        release.namespace_ = ns, release.partition = partition, release.ids = ids;
        release.n_ids = n_ids, release.token = token;
        release.pools = pools, release.n_pools = n_pools;
        req.method_case = HOLDFAST__V1__REQUEST__METHOD_RELEASE;
        req.release = &release;
        want = HOLDFAST__V1__RESPONSE__RESULT_RELEASE;
        break;
    case HF_CTL_STATUS:
        status.namespace_ = ns, status.partition = partition, status.ids = ids;
        status.n_ids = n_ids, status.token = token;
        status.pools = pools, status.n_pools = n_pools;
        req.method_case = HOLDFAST__V1__REQUEST__METHOD_STATUS;
        req.status = &status;
        want = HOLDFAST__V1__RESPONSE__RESULT_STATUS;
        break;
    case HF_CTL_CONFIRM:
        confirm.namespace_ = ns, confirm.partition = partition, confirm.ids = ids;
        confirm.n_ids = n_ids, confirm.token = token, confirm.idempotency_key = key;
        confirm.reference = ref;
        confirm.units = units, confirm.n_units = n_units;
        req.method_case = HOLDFAST__V1__REQUEST__METHOD_CONFIRM;
        req.confirm = &confirm;
        want = HOLDFAST__V1__RESPONSE__RESULT_CONFIRM;
        break;
    case HF_CTL_CANCEL:
        cancel.namespace_ = ns, cancel.partition = partition, cancel.ids = ids;
        cancel.n_ids = n_ids, cancel.idempotency_key = key, cancel.reference = ref;
        cancel.units = units, cancel.n_units = n_units;
        req.method_case = HOLDFAST__V1__REQUEST__METHOD_CANCEL;
        req.cancel = &cancel;
        want = HOLDFAST__V1__RESPONSE__RESULT_CANCEL;
        break;
    default:
        free(takes);
        free(units);
        return HF_CTL_EXIT_USAGE;
    }
    hf_response_msg *resp = roundtrip(o, &req);
    free(takes);
    free(units);
    if (!resp) return HF_CTL_EXIT_UNREACHABLE;
    int rc = report_code(resp);
    if (rc != HF_CTL_EXIT_OK) {
        hf_response_msg_free(resp);
        return rc;
    }
    /* A plain OK carries its result; one without (or a hold without a
     * token) must not pass for a success. */
    if (resp->result_case != want || (want == HOLDFAST__V1__RESPONSE__RESULT_HOLD &&
                                      (!resp->hold->token || !*resp->hold->token)))
        return malformed(resp, o);
    switch (resp->result_case) {
    case HOLDFAST__V1__RESPONSE__RESULT_HOLD:
        printf("token=%s\nfence=%llu\nttl_ms=%u\n", resp->hold->token,
               (unsigned long long)resp->hold->fence, resp->hold->ttl_ms);
        break;
    case HOLDFAST__V1__RESPONSE__RESULT_EXTEND:
        printf("ttl_ms=%u\n", resp->extend->ttl_ms);
        break;
    case HOLDFAST__V1__RESPONSE__RESULT_RELEASE:
        printf("released=%u\n", resp->release->released);
        break;
    case HOLDFAST__V1__RESPONSE__RESULT_STATUS:
        for (size_t i = 0; i < resp->status->n_resources; i++) {
            const Holdfast__V1__ResourceStatus *r = resp->status->resources[i];
            const char *state = r->state == HOLDFAST__V1__RESOURCE_STATE__RESOURCE_STATE_FREE
                                    ? "free"
                                : r->state == HOLDFAST__V1__RESOURCE_STATE__RESOURCE_STATE_HELD
                                    ? "held"
                                    : "confirmed";
            printf("%s state=%s ttl_ms=%lld owned=%s\n", r->id, state, (long long)r->ttl_ms,
                   r->owned ? "true" : "false");
        }
        for (size_t i = 0; i < resp->status->n_pools; i++) {
            const Holdfast__V1__PoolStatus *s = resp->status->pools[i];
            printf("%s capacity=%llu sold=%llu held=%llu free=%llu owned=%u ttl_ms=%lld\n",
                   s->pool, (unsigned long long)s->capacity, (unsigned long long)s->sold,
                   (unsigned long long)s->held, (unsigned long long)s->free, s->owned,
                   (long long)s->ttl_ms);
        }
        break;
    case HOLDFAST__V1__RESPONSE__RESULT_CONFIRM:
        printf("fence=%llu\nreplayed=%s\n", (unsigned long long)resp->confirm->fence,
               resp->confirm->replayed ? "true" : "false");
        for (size_t i = 0; i < resp->confirm->n_claims; i++)
            printf("claim=%s\n", resp->confirm->claims[i]->resource_id);
        for (size_t i = 0; i < resp->confirm->n_units; i++)
            printf("units=%s=%u\n", resp->confirm->units[i]->pool,
                   resp->confirm->units[i]->count);
        break;
    case HOLDFAST__V1__RESPONSE__RESULT_CANCEL:
        printf("cancelled=%u\nreplayed=%s\n", resp->cancel->cancelled,
               resp->cancel->replayed ? "true" : "false");
        for (size_t i = 0; i < resp->cancel->n_units; i++)
            printf("units=%s=%u\n", resp->cancel->units[i]->pool, resp->cancel->units[i]->count);
        break;
    default:
        break;
    }
    hf_response_msg_free(resp);
    return HF_CTL_EXIT_OK;
}

/* set-capacity and get-capacity (pools). */
static int cmd_capacity(const struct opts *o, enum hf_ctl_cmd cmd, int argc, char **argv) {
    hf_request_msg req = HOLDFAST__V1__REQUEST__INIT;
    Holdfast__V1__SetCapacityRequest set = HOLDFAST__V1__SET_CAPACITY_REQUEST__INIT;
    Holdfast__V1__GetCapacityRequest get = HOLDFAST__V1__GET_CAPACITY_REQUEST__INIT;
    Holdfast__V1__Response__ResultCase want;
    if (cmd == HF_CTL_SET_CAPACITY) {
        set.namespace_ = argv[0], set.partition = argv[1];
        set.pool = o->a->partition_default ? "" : argv[2];
        set.capacity = o->a->capacity;
        set.partition_default = o->a->partition_default;
        req.method_case = HOLDFAST__V1__REQUEST__METHOD_SET_CAPACITY;
        req.set_capacity = &set;
        want = HOLDFAST__V1__RESPONSE__RESULT_SET_CAPACITY;
    } else {
        get.namespace_ = argv[0], get.partition = argv[1];
        get.pools = argv + 2, get.n_pools = (size_t)(argc - 2);
        req.method_case = HOLDFAST__V1__REQUEST__METHOD_GET_CAPACITY;
        req.get_capacity = &get;
        want = HOLDFAST__V1__RESPONSE__RESULT_GET_CAPACITY;
    }
    hf_response_msg *resp = roundtrip(o, &req);
    if (!resp) return HF_CTL_EXIT_UNREACHABLE;
    int rc = report_code(resp);
    if (rc != HF_CTL_EXIT_OK) {
        hf_response_msg_free(resp);
        return rc;
    }
    if (resp->result_case != want ||
        (want == HOLDFAST__V1__RESPONSE__RESULT_SET_CAPACITY && !resp->set_capacity->pool))
        return malformed(resp, o);
    if (want == HOLDFAST__V1__RESPONSE__RESULT_SET_CAPACITY) {
        const Holdfast__V1__PoolCapacity *p = resp->set_capacity->pool;
        printf("pool=%s\ncapacity=%llu\nsold=%llu\npartition_default=%s\n", p->pool,
               (unsigned long long)p->capacity, (unsigned long long)p->sold,
               p->partition_default ? "true" : "false");
    } else {
        printf("default_capacity=%llu\n",
               (unsigned long long)resp->get_capacity->default_capacity);
        for (size_t i = 0; i < resp->get_capacity->n_pools; i++) {
            const Holdfast__V1__PoolCapacity *p = resp->get_capacity->pools[i];
            printf("%s capacity=%llu sold=%llu partition_default=%s\n", p->pool,
                   (unsigned long long)p->capacity, (unsigned long long)p->sold,
                   p->partition_default ? "true" : "false");
        }
    }
    hf_response_msg_free(resp);
    return HF_CTL_EXIT_OK;
}

static int cmd_health(const struct opts *o, bool library_only) {
    hf_request_msg req = HOLDFAST__V1__REQUEST__INIT;
    Holdfast__V1__HealthRequest health = HOLDFAST__V1__HEALTH_REQUEST__INIT;
    req.method_case = HOLDFAST__V1__REQUEST__METHOD_HEALTH;
    req.health = &health;
    hf_response_msg *resp = roundtrip(o, &req);
    if (!resp) return HF_CTL_EXIT_UNREACHABLE;
    int rc = report_code(resp);
    if (rc == HF_CTL_EXIT_OK && resp->result_case == HOLDFAST__V1__RESPONSE__RESULT_HEALTH) {
        const Holdfast__V1__HealthResponse *h = resp->health;
        if (library_only) {
            printf("library=%s\nscript_path=%s\nrelease_path=%s\nredis=%s\n", h->library,
                   h->script_path, h->release_path, h->redis);
        } else {
            printf("live=%s\nready=%s\nversion=%s\nredis=%s\npostgres=%s\nscript_path=%s\n"
                   "release_path=%s\nlibrary=%s\nconnections=%u\nin_flight=%u\ndraining=%s\n",
                   h->live ? "true" : "false", h->ready ? "true" : "false", h->version, h->redis,
                   h->postgres, h->script_path, h->release_path, h->library, h->connections,
                   h->in_flight, h->draining ? "true" : "false");
            rc = h->ready ? HF_CTL_EXIT_OK : HF_CTL_EXIT_NOT_OK;
        }
    } else if (rc == HF_CTL_EXIT_OK) {
        return malformed(resp, o);
    }
    hf_response_msg_free(resp);
    return rc;
}

static int cmd_metrics(const struct opts *o) {
    hf_request_msg req = HOLDFAST__V1__REQUEST__INIT;
    Holdfast__V1__MetricsRequest metrics = HOLDFAST__V1__METRICS_REQUEST__INIT;
    req.method_case = HOLDFAST__V1__REQUEST__METHOD_METRICS;
    req.metrics = &metrics;
    hf_response_msg *resp = roundtrip(o, &req);
    if (!resp) return HF_CTL_EXIT_UNREACHABLE;
    int rc = report_code(resp);
    if (rc == HF_CTL_EXIT_OK && resp->result_case == HOLDFAST__V1__RESPONSE__RESULT_METRICS)
        fputs(resp->metrics->text, stdout);
    else if (rc == HF_CTL_EXIT_OK)
        return malformed(resp, o);
    hf_response_msg_free(resp);
    return rc;
}

/* holdfastd sits next to holdfastctl in a build tree and in /usr/sbin when
 * installed; the config loader lives there, not in this small tool. Its exit
 * status (0 valid, 1 invalid) becomes ours. */
static int cmd_check_config(const char *self, const char *file) {
    char path[4096];
    const char *slash = strrchr(self, '/');
    fflush(stdout);
    if (slash) {
        snprintf(path, sizeof path, "%.*sholdfastd", (int)(slash - self + 1), self);
        if (access(path, X_OK) == 0) execl(path, "holdfastd", "--check-config", file, (char *)NULL);
    }
    if (access("/usr/sbin/holdfastd", X_OK) == 0)
        execl("/usr/sbin/holdfastd", "holdfastd", "--check-config", file, (char *)NULL);
    execlp("holdfastd", "holdfastd", "--check-config", file, (char *)NULL);
    fprintf(stderr, "holdfastctl: cannot run holdfastd --check-config: %s\n", strerror(errno));
    return HF_CTL_EXIT_UNREACHABLE;
}

static int run(const struct hf_ctl_args *a, const char *self) {
    if (a->version) {
        printf("holdfastctl %s\n", HOLDFAST_VERSION);
        return HF_CTL_EXIT_OK;
    }
    if (a->help) {
        hf_ctl_usage(stdout, a->cmd);
        return HF_CTL_EXIT_OK;
    }
    if (a->cmd == HF_CTL_NONE) {
        hf_ctl_usage(stderr, HF_CTL_NONE);
        return HF_CTL_EXIT_USAGE;
    }
    if (a->cmd == HF_CTL_CHECK_CONFIG) return cmd_check_config(self, a->args[0]);

    struct opts o = {
        .a = a,
        .socket_path = a->socket_path,
        .timeout_ms = a->timeout_ms,
        .ttl_ms = a->ttl_ms,
        .key = a->key,
        .reference = a->reference,
        .correlation_id = a->correlation_id,
    };
    if (!o.socket_path) o.socket_path = getenv("HOLDFAST_SOCKET");
    if (!o.socket_path || !*o.socket_path) o.socket_path = "/run/holdfast/holdfast.sock";

    enum hf_ctl_token_use use = hf_ctl_token_use(a->cmd);
    static char stdin_token[256];
    if (a->token_stdin) {
        int rc = hf_ctl_read_token(stdin, stdin_token, sizeof stdin_token);
        if (rc != 0) {
            fprintf(stderr, "holdfastctl: --token-stdin: %s\n",
                    rc == -2 ? "the first line of standard input is too long for a token"
                             : "no token on standard input");
            return HF_CTL_EXIT_USAGE;
        }
        o.token = stdin_token;
    } else if (a->token) {
        o.token = a->token;
    } else if (use != HF_CTL_TOKEN_NONE) {
        o.token = getenv("HOLDFAST_TOKEN");
        if (o.token && !*o.token) o.token = NULL;
    }
    if (use == HF_CTL_TOKEN_REQUIRED && !o.token) {
        fprintf(stderr,
                "holdfastctl %s: needs a token (--token-stdin, HOLDFAST_TOKEN or --token)\n",
                a->cmd_name);
        return HF_CTL_EXIT_USAGE;
    }

    switch (a->cmd) {
    case HF_CTL_HEALTH: return cmd_health(&o, false);
    case HF_CTL_LIBRARY: return cmd_health(&o, true);
    case HF_CTL_METRICS: return cmd_metrics(&o);
    case HF_CTL_SET_CAPACITY:
    case HF_CTL_GET_CAPACITY: return cmd_capacity(&o, a->cmd, a->n_args, a->args);
    default: return cmd_resources(&o, a->cmd, a->n_args, a->args);
    }
}

int main(int argc, char **argv) {
    struct hf_ctl_args a;
    char err[512];
    int rc = hf_ctl_parse(argc, argv, &a, err, sizeof err);
    if (rc != 0) fprintf(stderr, "%s\n", err);
    else rc = run(&a, argc > 0 ? argv[0] : "holdfastctl");
    hf_ctl_args_free(&a);
    return rc;
}
