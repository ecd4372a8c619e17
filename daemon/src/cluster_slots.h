/* cluster_slots.h - Redis Cluster arithmetic, no I/O: the hash slot of a key
 * (CRC16/XMODEM of its hash tag, mod 16384) and the parsing of MOVED/ASK
 * redirections and node addresses. */
#ifndef HF_CLUSTER_SLOTS_H
#define HF_CLUSTER_SLOTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HF_CLUSTER_SLOTS 16384u
/* "host:port" with room for an IPv6 address or a long host name. */
#define HF_CLUSTER_ADDR_MAX 300

/* CRC16/XMODEM (poly 0x1021, init 0), the checksum Redis Cluster uses. */
uint16_t hf_crc16_xmodem(const void *buf, size_t len);

/* The slot of a key: only the part between the first '{' and the next '}'
 * is hashed when that part is not empty (the hash tag rule). */
unsigned hf_cluster_keyslot(const char *key, size_t len);

enum hf_redirect { HF_REDIRECT_NONE, HF_REDIRECT_MOVED, HF_REDIRECT_ASK };

/* Parse an error reply "MOVED <slot> <host>:<port>" or "ASK ...". An empty
 * host (a node that does not know its own address) takes `self_host`, the
 * host of the node that answered. Anything else is HF_REDIRECT_NONE. */
enum hf_redirect hf_cluster_parse_redirect(const char *err, size_t len, const char *self_host,
                                           unsigned *slot, char *addr, size_t addrlen);

/* The host part of "host:port" into out (empty for "unix:..." addresses). */
void hf_cluster_addr_host(const char *addr, char *out, size_t outlen);

/* Build "host:port"; an empty host or "?" takes `self_host`. false when it
 * does not fit or the port is out of range. */
bool hf_cluster_addr_format(char *out, size_t outlen, const char *host, size_t hostlen,
                            long long port, const char *self_host);

#endif
