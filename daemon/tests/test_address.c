/* Unit tests for address.c: "unix:/path", "host:port" and "[IPv6]:port",
 * what each refuses and why, and numeric addresses as socket addresses. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "address.h"
#include "cluster_slots.h"

static struct hf_address parsed(const char *text) {
    struct hf_address a;
    const char *why = NULL;
    if (!hf_address_parse(text, &a, &why)) fail_msg("\"%s\" refused: %s", text, why);
    return a;
}

static void refused(const char *text, const char *why_part) {
    struct hf_address a;
    const char *why = NULL;
    if (hf_address_parse(text, &a, &why)) fail_msg("\"%s\" was accepted", text);
    assert_non_null(why);
    if (!strstr(why, why_part)) fail_msg("\"%s\": \"%s\" lacks \"%s\"", text, why, why_part);
}

static void unix_sockets(void **state) {
    (void)state;
    struct hf_address a = parsed("unix:/run/redis/redis.sock");
    assert_true(a.is_unix);
    assert_string_equal(a.path, "/run/redis/redis.sock");
    assert_string_equal(a.host, "");
    assert_int_equal(a.port, 0);
    a = parsed("unix:relative:with:colons");
    assert_true(a.is_unix);
    assert_string_equal(a.path, "relative:with:colons");
    refused("unix:", "socket path is empty");
}

static void hosts_and_ports(void **state) {
    (void)state;
    struct hf_address a = parsed("127.0.0.1:6379");
    assert_false(a.is_unix);
    assert_false(a.bracketed);
    assert_string_equal(a.host, "127.0.0.1");
    assert_int_equal(a.port, 6379);
    a = parsed("redis.internal.example:7000");
    assert_string_equal(a.host, "redis.internal.example");
    assert_int_equal(a.port, 7000);
    a = parsed("h:0");
    assert_int_equal(a.port, 0);
    a = parsed("h:65535");
    assert_int_equal(a.port, 65535);
    a = parsed("h:080");
    assert_int_equal(a.port, 80);
}

static void ipv6(void **state) {
    (void)state;
    struct hf_address a = parsed("[::1]:6379");
    assert_true(a.bracketed);
    assert_string_equal(a.host, "::1");
    assert_int_equal(a.port, 6379);
    a = parsed("[fe80::1%eth0]:9464");
    assert_string_equal(a.host, "fe80::1%eth0");
    /* Without brackets the port follows the last ':', as Redis nodes were
     * always read. */
    a = parsed("::1:6379");
    assert_false(a.bracketed);
    assert_string_equal(a.host, "::1");
    assert_int_equal(a.port, 6379);
    refused("[::1]", "no \":port\" follows the ']'");
    refused("[::1]6379", "no \":port\" follows the ']'");
    refused("[::1:6379", "no ']'");
    refused("[]:6379", "host is empty");
}

static void refusals(void **state) {
    (void)state;
    refused("", "no \":port\"");
    refused("nowhere", "no \":port\"");
    refused(":6379", "host is empty");
    refused("h:", "port is empty");
    refused("h:65536", "port is over 65535");
    refused("h:99999", "port is over 65535");
    refused("h:123456", "more than 5 digits");
    refused("h:000080", "more than 5 digits");
    refused("h:-1", "not a number");
    refused("h:6379 ", "not a number");
    refused("h:0x10", "not a number");
    refused("[::1]:80]", "not a number");
    char long_host[300];
    memset(long_host, 'a', 256);
    snprintf(long_host + 256, sizeof long_host - 256, ":1");
    refused(long_host, "longer than 255 bytes");
    long_host[255] = ':';
    long_host[256] = '1';
    long_host[257] = '\0';
    assert_int_equal(strlen(parsed(long_host).host), 255);
}

static void socket_addresses(void **state) {
    (void)state;
    struct sockaddr_storage ss;
    const char *why = NULL;
    struct hf_address a = parsed("10.1.2.3:9464");
    assert_true(hf_address_sockaddr(&a, &ss, &why));
    const struct sockaddr_in *s4 = (const struct sockaddr_in *)&ss;
    assert_int_equal(s4->sin_family, AF_INET);
    assert_int_equal(ntohs(s4->sin_port), 9464);
    assert_int_equal(ntohl(s4->sin_addr.s_addr), 0x0a010203);
    a = parsed("[::1]:0");
    assert_true(hf_address_sockaddr(&a, &ss, &why));
    const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&ss;
    assert_int_equal(s6->sin6_family, AF_INET6);
    assert_int_equal(ntohs(s6->sin6_port), 0);
    assert_true(IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr));
    static const char *const not_numeric[] = {"localhost:9464", "::1:9464", "[127.0.0.1]:1",
                                              "unix:/run/m.sock", "[localhost]:1", "1.2.3:4"};
    for (size_t i = 0; i < sizeof not_numeric / sizeof not_numeric[0]; i++) {
        a = parsed(not_numeric[i]);
        why = NULL;
        if (hf_address_sockaddr(&a, &ss, &why)) fail_msg("%s taken as numeric", not_numeric[i]);
        assert_non_null(why);
    }
}

/* cluster_slots.c's host of an address, as written (brackets kept). */
static void cluster_hosts(void **state) {
    (void)state;
    char host[64];
    hf_cluster_addr_host("[::1]:7000", host, sizeof host);
    assert_string_equal(host, "[::1]");
    hf_cluster_addr_host("::1:7000", host, sizeof host);
    assert_string_equal(host, "::1");
    hf_cluster_addr_host("redis-0.redis:7000", host, sizeof host);
    assert_string_equal(host, "redis-0.redis");
    hf_cluster_addr_host("nowhere", host, sizeof host);
    assert_string_equal(host, "");
    hf_cluster_addr_host("redis-0.redis:7000", host, 6);
    assert_string_equal(host, "redis");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(unix_sockets), cmocka_unit_test(hosts_and_ports),
        cmocka_unit_test(ipv6),         cmocka_unit_test(refusals),
        cmocka_unit_test(socket_addresses), cmocka_unit_test(cluster_hosts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
