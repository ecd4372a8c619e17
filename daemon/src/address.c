/* address.c - "unix:/path", "host:port" and "[IPv6]:port" into struct
 * hf_address, and a numeric one into a socket address (address.h). */
#include "address.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#define UNIX_PREFIX "unix:"

static bool fail(const char **why, const char *text) {
    *why = text;
    return false;
}

/* 1 to 5 digits, at most 65535. */
static bool parse_port(const char *p, uint16_t *port, const char **why) {
    size_t digits = strspn(p, "0123456789");
    if (*p == '\0') return fail(why, "the port is empty");
    if (p[digits] != '\0') return fail(why, "the port is not a number");
    if (digits > 5) return fail(why, "the port has more than 5 digits");
    unsigned long v = 0;
    for (size_t i = 0; i < digits; i++) v = v * 10 + (unsigned long)(p[i] - '0');
    if (v > 65535) return fail(why, "the port is over 65535");
    *port = (uint16_t)v;
    return true;
}

static bool copy_host(struct hf_address *out, const char *host, size_t len, const char **why) {
    if (len == 0) return fail(why, "the host is empty");
    if (len >= sizeof out->host) return fail(why, "the host is longer than 255 bytes");
    memcpy(out->host, host, len);
    out->host[len] = '\0';
    return true;
}

/* "[host]:port": the host ends at the first ']'. */
static bool parse_bracketed(const char *text, struct hf_address *out, const char **why) {
    const char *close = strchr(text, ']');
    if (!close) return fail(why, "no ']' closes the IPv6 address");
    if (close[1] != ':') return fail(why, "no \":port\" follows the ']'");
    out->bracketed = true;
    return copy_host(out, text + 1, (size_t)(close - text - 1), why) &&
           parse_port(close + 2, &out->port, why);
}

bool hf_address_parse(const char *text, struct hf_address *out, const char **why) {
    memset(out, 0, sizeof *out);
    if (strncmp(text, UNIX_PREFIX, strlen(UNIX_PREFIX)) == 0) {
        out->is_unix = true;
        out->path = text + strlen(UNIX_PREFIX);
        return *out->path ? true : fail(why, "the socket path is empty");
    }
    if (text[0] == '[') return parse_bracketed(text, out, why);
    const char *colon = strrchr(text, ':');
    if (!colon) return fail(why, "no \":port\" at the end");
    return copy_host(out, text, (size_t)(colon - text), why) &&
           parse_port(colon + 1, &out->port, why);
}

bool hf_address_sockaddr(const struct hf_address *a, struct sockaddr_storage *ss,
                         const char **why) {
    memset(ss, 0, sizeof *ss);
    if (a->is_unix) return fail(why, "a Unix socket is not an IP address");
    if (a->bracketed) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons(a->port);
        if (inet_pton(AF_INET6, a->host, &s6->sin6_addr) == 1) return true;
        return fail(why, "the host in brackets is not a numeric IPv6 address");
    }
    struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
    s4->sin_family = AF_INET;
    s4->sin_port = htons(a->port);
    if (inet_pton(AF_INET, a->host, &s4->sin_addr) == 1) return true;
    return fail(why, "the host is not a numeric IPv4 address (IPv6 goes in brackets)");
}
