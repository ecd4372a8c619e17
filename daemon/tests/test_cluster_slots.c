/* Unit tests for cluster_slots.c: hash slots against values recorded from
 * redis-server 7.0.15 (`CLUSTER KEYSLOT <key>`), and redirection parsing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cluster_slots.h"
#include "keys.h"

static void crc16_check_value(void **state) {
    (void)state;
    /* The CRC-16/XMODEM catalogue check value. */
    assert_int_equal(hf_crc16_xmodem("123456789", 9), 0x31C3);
    assert_int_equal(hf_crc16_xmodem("", 0), 0);
}

static void keyslot_matches_redis(void **state) {
    (void)state;
    static const struct {
        const char *key;
        unsigned slot;
    } vectors[] = {
        /* recorded with redis-cli CLUSTER KEYSLOT against redis-server 7.0.15 */
        {"", 0},
        {"a", 15495},
        {"foo", 12182},
        {"somekey", 11058},
        {"hello world", 15332},
        {"123456789", 12739},
        {"{user1000}.following", 3443},
        {"{user1000}.followers", 3443},
        {"foo{}{bar}", 8363},    /* empty first tag: the whole key */
        {"foo{{bar}}zap", 4015}, /* tag is "{bar" */
        {"foo{bar}{zap}", 5061}, /* only the first tag counts */
        {"{}foo", 9500},
        {"{", 4092},             /* no closing brace: the whole key */
        {"hf:{seat:run-2026-12-01-KTX101}:12", 13564},
        {"hf:{seat:run-2026-12-01-KTX101}:#fence", 13564},
        {"seat:run-2026-12-01-KTX101", 13564},
        {"hf:{product-modify:10001}:1", 13228},
    };
    for (size_t i = 0; i < sizeof vectors / sizeof vectors[0]; i++) {
        unsigned got = hf_cluster_keyslot(vectors[i].key, strlen(vectors[i].key));
        if (got != vectors[i].slot)
            fail_msg("slot of \"%s\": got %u, want %u", vectors[i].key, got, vectors[i].slot);
    }
}

static void one_request_one_slot(void **state) {
    (void)state;
    /* Every key of a request shares the {ns:partition} tag. */
    char *ids[] = {"12", "E7", "a-very-long-id.0123456789"};
    struct hf_keyset *ks = hf_keyset_build(HF_KEYS_SEATS, "seat", "run-2026-12-01-KTX101", ids, 3);
    assert_non_null(ks);
    for (size_t i = 0; i < ks->count; i++)
        assert_int_equal(hf_cluster_keyslot(ks->keys[i], ks->lens[i]), 13564);
    hf_keyset_free(ks);
}

static void parse_redirects(void **state) {
    (void)state;
    char addr[HF_CLUSTER_ADDR_MAX];
    unsigned slot = 0;
    const char *moved = "MOVED 3999 127.0.0.1:6381";
    assert_int_equal(hf_cluster_parse_redirect(moved, strlen(moved), "10.0.0.1", &slot, addr,
                                               sizeof addr),
                     HF_REDIRECT_MOVED);
    assert_int_equal(slot, 3999);
    assert_string_equal(addr, "127.0.0.1:6381");

    const char *ask = "ASK 16383 redis-2.example:7000";
    assert_int_equal(hf_cluster_parse_redirect(ask, strlen(ask), "x", &slot, addr, sizeof addr),
                     HF_REDIRECT_ASK);
    assert_int_equal(slot, 16383);
    assert_string_equal(addr, "redis-2.example:7000");

    /* Unknown endpoint: the host of the node that answered. */
    const char *bare = "MOVED 12 :7001";
    assert_int_equal(hf_cluster_parse_redirect(bare, strlen(bare), "10.0.0.1", &slot, addr,
                                               sizeof addr),
                     HF_REDIRECT_MOVED);
    assert_string_equal(addr, "10.0.0.1:7001");

    /* IPv6: the port follows the last colon. */
    const char *v6 = "MOVED 1 ::1:7002";
    assert_int_equal(hf_cluster_parse_redirect(v6, strlen(v6), "", &slot, addr, sizeof addr),
                     HF_REDIRECT_MOVED);
    assert_string_equal(addr, "::1:7002");

    static const char *const not_redirects[] = {
        "TRYAGAIN Multiple keys request during rehashing of slot",
        "CLUSTERDOWN The cluster is down",
        "MOVED",
        "MOVED 16384 127.0.0.1:1",  /* slot out of range */
        "MOVED x 127.0.0.1:1",
        "MOVED 1 127.0.0.1",        /* no port */
        "MOVED 1 127.0.0.1:",
        "MOVED 1 127.0.0.1:70000",  /* port out of range */
        "ASK 1 :7000",              /* empty host and none to fall back on */
        "ERR unknown command",
    };
    for (size_t i = 0; i < sizeof not_redirects / sizeof not_redirects[0]; i++) {
        const char *e = not_redirects[i];
        if (hf_cluster_parse_redirect(e, strlen(e), "", &slot, addr, sizeof addr) !=
            HF_REDIRECT_NONE)
            fail_msg("taken as a redirection: \"%s\"", e);
    }
}

static void addresses(void **state) {
    (void)state;
    char host[64], addr[32];
    hf_cluster_addr_host("127.0.0.1:7000", host, sizeof host);
    assert_string_equal(host, "127.0.0.1");
    hf_cluster_addr_host("unix:/run/redis.sock", host, sizeof host);
    assert_string_equal(host, "");
    assert_true(hf_cluster_addr_format(addr, sizeof addr, "?", 1, 7000, "10.1.1.1"));
    assert_string_equal(addr, "10.1.1.1:7000");
    assert_false(hf_cluster_addr_format(addr, sizeof addr, "h", 1, 0, NULL));
    assert_false(hf_cluster_addr_format(addr, 8, "long-host-name", 14, 7000, NULL));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(crc16_check_value),
        cmocka_unit_test(keyslot_matches_redis),
        cmocka_unit_test(one_request_one_slot),
        cmocka_unit_test(parse_redirects),
        cmocka_unit_test(addresses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
