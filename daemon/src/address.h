/* address.h - the one reading of the addresses the configuration names:
 * "unix:/path", "host:port" and "[IPv6]:port", for the Redis nodes
 * (redis.address, redis.seeds) and the HTTP listener (metrics.http_address).
 * No I/O, no name lookups. */
#ifndef HF_ADDRESS_H
#define HF_ADDRESS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

/* Room for a host name (DNS allows 253 bytes) or any IPv6 address. */
#define HF_ADDRESS_HOST_MAX 256

struct hf_address {
    bool is_unix;     /* "unix:/path": only path is set */
    const char *path; /* into the text parsed: what follows "unix:" */
    char host[HF_ADDRESS_HOST_MAX]; /* without the brackets of "[v6]:port" */
    bool bracketed;   /* written "[host]:port" */
    uint16_t port;    /* 0 to 65535 */
};

/* Read `text`. "unix:" followed by a path is a Unix socket; otherwise the
 * port follows the last ':' (so "::1:6379" is host "::1"), or the ':' after
 * the ']' of "[host]:port". The host must not be empty and the port is
 * 1 to 5 digits up to 65535. false, with *why a phrase for a message ("the
 * port is over 65535"), when the text is neither form. */
bool hf_address_parse(const char *text, struct hf_address *out, const char **why);

/* A numeric address as a socket address to bind: IPv4 for "a.b.c.d:port",
 * IPv6 for "[v6]:port". false, with *why, for anything else (a Unix
 * socket, a name, IPv6 without brackets, IPv4 in them). */
bool hf_address_sockaddr(const struct hf_address *a, struct sockaddr_storage *ss,
                         const char **why);

#endif
