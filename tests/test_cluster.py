"""holdfastd against a real 3-primary Redis Cluster (redis.cluster = true):
routing by hash slot, one grant under contention, slot migration through
ASK and MOVED, a node that lost its functions, and a node that is down.

One cluster serves the whole module; each test starts its own daemon. The
test that stops a node restarts it before it ends."""
import shutil
import struct
import subprocess
import tempfile
import time

import pytest

import cluster_harness
import harness
from cluster_harness import hold_key, keyslot
from harness import Client, code_name


@pytest.fixture(scope="module")
def cluster():
    path = tempfile.mkdtemp(prefix="hf-cl-")
    c = cluster_harness.RedisCluster(path).start()
    yield c
    c.stop()
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def make_cluster_daemon(workdir, cluster):
    daemons = []

    def make(address=None, redis_extra="", **kw):
        d = harness.Daemon(workdir, address or cluster.seed,
                           redis_extra="cluster = true, " + redis_extra,
                           name="holdfastd%d" % len(daemons), **kw)
        daemons.append(d)
        return d.start()

    yield make
    for d in daemons:
        d.stop()


def metrics(c):
    return harness.parse_metrics(c.metrics())


def redirects(c, kind):
    return metrics(c)['holdfast_redis_redirects_total{kind="%s"}' % kind]


def hold_ok(c, partition, ids, ns="seat", ttl_ms=10000):
    r = c.hold(ns, partition, ids, ttl_ms=ttl_ms)
    assert code_name(r.code) == "OK", r
    return r.hold.token


def test_holds_go_to_the_node_that_owns_the_partition(make_cluster_daemon, cluster):
    d = make_cluster_daemon()
    with Client(d.socket) as c:
        h = c.health().health
        assert h.ready and h.redis == "up" and h.script_path == "fcall"
        for node in cluster.nodes:
            partition = cluster.partition_on(node, prefix="route%d" % node.index)
            token = hold_ok(c, partition, ["1", "2"])
            # The keys are on the owner itself, not on any other node.
            for other in cluster.nodes:
                assert other.has(hold_key("seat", partition, "1")) == (other is node)
            st = c.status("seat", partition, ["1", "2"], token)
            assert code_name(st.code) == "OK" and all(s.owned for s in st.status.resources)
            assert code_name(c.extend("seat", partition, ["1", "2"], token, ttl_ms=20000).code) == "OK"
            r = c.hold("seat", partition, ["2"])
            assert code_name(r.code) == "HELD_BY_ANOTHER" and r.error.resource_id == "2"
            rel = c.release("seat", partition, ["1", "2"], token)
            assert code_name(rel.code) == "OK" and rel.release.released == 2
            assert not node.has(hold_key("seat", partition, "1"))
        m = metrics(c)
        assert m["holdfast_redis_cluster_nodes"] == 3
        # A correct slot map: nothing was redirected.
        assert m['holdfast_redis_redirects_total{kind="moved"}'] == 0
        assert m['holdfast_redis_redirects_total{kind="ask"}'] == 0
        # pool_size 2 per primary (ready means at least one each)
        harness.wait_for(lambda: metrics(c)["holdfast_redis_pool_connected"] == 6,
                         what="two connections to each primary")
        assert metrics(c)["holdfast_redis_pool_size"] == 6
    # Every primary got the library from the daemon.
    for node in cluster.nodes:
        assert [lib[1] for lib in node.cmd("FUNCTION", "LIST")] == ["holdfast_v1"]


def test_fifty_concurrent_holds_on_one_seat_grant_exactly_one(make_cluster_daemon, cluster):
    d = make_cluster_daemon()
    partition = cluster.partition_on(cluster.nodes[1], prefix="race")
    clients = [Client(d.socket) for _ in range(5)]
    try:
        sent = [[c.send(hold=harness.pb().HoldRequest(namespace="seat", partition=partition,
                                                         ids=["A1"], ttl_ms=10000))
                 for _ in range(10)] for c in clients]
        answers = [c.recv() for c, ids in zip(clients, sent) for _ in ids]
    finally:
        for c in clients:
            c.close()
    codes = sorted(code_name(a.code) for a in answers)
    assert len(answers) == 50
    assert codes.count("OK") == 1, codes
    assert codes.count("HELD_BY_ANOTHER") == 49, codes


def test_holds_of_many_slots_in_one_write_are_coalesced_per_slot(make_cluster_daemon, cluster):
    # One write of holds for partitions on every node: the daemon batches
    # them per slot (a call's keys must share one), and each lands on its
    # partition's owner.
    d = make_cluster_daemon()
    parts = [cluster.partition_on(node, prefix="co%d" % node.index) for node in cluster.nodes]
    owner_of = dict(zip(parts, cluster.nodes))
    frames, want = [], {}
    for n in range(30):
        part = parts[n % len(parts)]
        req = harness.pb().Request(id=n + 1, hold=harness.pb().HoldRequest(
            namespace="seat", partition=part, ids=["s%d" % n], ttl_ms=10000))
        body = req.SerializeToString()
        frames.append(struct.pack(">I", len(body)) + body)
        want[n + 1] = (part, "s%d" % n)
    with Client(d.socket) as c:
        before = metrics(c)
        c.send_raw(b"".join(frames))
        answers = [c.recv() for _ in frames]
        after = metrics(c)
    assert sorted(a.id for a in answers) == sorted(want)
    assert all(code_name(a.code) == "OK" for a in answers), [a.message for a in answers]
    for a in answers:
        part, rid = want[a.id]
        for node in cluster.nodes:
            assert node.has(hold_key("seat", part, rid)) == (node is owner_of[part])
    assert after["holdfast_redis_batched_calls_total"] > before["holdfast_redis_batched_calls_total"]
    # Nothing was sent to a node that does not own its slot.
    assert after['holdfast_redis_redirects_total{kind="moved"}'] == \
        before['holdfast_redis_redirects_total{kind="moved"}']


def test_slot_migration_is_followed_through_ask_then_moved(make_cluster_daemon, cluster):
    d = make_cluster_daemon()
    src, dst = cluster.nodes[0], cluster.nodes[1]
    partition = cluster.partition_on(src, prefix="mig")
    slot = keyslot(hold_key("seat", partition, "1"))
    with Client(d.socket) as c:
        t1 = hold_ok(c, partition, ["1"])
        moved = cluster.migrate_begin(slot, src, dst)
        assert sorted(moved) == sorted([hold_key("seat", partition, "1"),
                                        hold_key("seat", partition, "#fence")])
        try:
            # The slot is MIGRATING: the source answers ASK, the keys are on
            # the importing node, the slot map must not change.
            st = c.status("seat", partition, ["1"], t1)
            assert code_name(st.code) == "OK" and st.status.resources[0].owned
            assert code_name(c.extend("seat", partition, ["1"], t1, ttl_ms=20000).code) == "OK"
            assert code_name(c.hold("seat", partition, ["1"]).code) == "HELD_BY_ANOTHER"
            assert redirects(c, "ask") >= 3
            assert redirects(c, "moved") == 0
            # A new id cannot be written while its partition's keys are split
            # between two nodes (TRYAGAIN, retried briefly): never a grant,
            # and nothing written.
            r = c.hold("seat", partition, ["2"])
            assert code_name(r.code) == "UNAVAILABLE", r
            assert not r.hold.token
        finally:
            cluster.migrate_end(slot, dst)
        for node in cluster.nodes:
            assert not node.has(hold_key("seat", partition, "2"))
        # The slot now belongs to dst: the daemon's map is stale once, MOVED
        # corrects it, and the hold is re-sent (its script had not run).
        t2 = hold_ok(c, partition, ["2"])
        assert dst.has(hold_key("seat", partition, "2"))
        after = redirects(c, "moved")
        assert after >= 1
        assert code_name(c.release("seat", partition, ["1"], t1).code) == "OK"
        assert code_name(c.release("seat", partition, ["2"], t2).code) == "OK"
        assert redirects(c, "moved") == after  # the map was corrected
        assert metrics(c)["holdfast_redis_cluster_slot_refreshes_total"] >= 2
        assert c.health().health.ready
    d.wait_log("slot map from")


def test_function_flush_on_one_node_is_recovered(make_cluster_daemon, cluster):
    d = make_cluster_daemon()
    node = cluster.nodes[2]
    partition = cluster.partition_on(node, prefix="flush")
    other = cluster.partition_on(cluster.nodes[0], prefix="flush-other")
    with Client(d.socket) as c:
        hold_ok(c, partition, ["1"])
        assert node.cmd("FUNCTION", "FLUSH") == "OK"
        token = hold_ok(c, partition, ["2"])  # answered through EVAL, library reloaded
        assert code_name(c.release("seat", partition, ["2"], token).code) == "OK"
        harness.wait_for(lambda: node.cmd("FUNCTION", "LIST"), what="the library reloaded")
        assert node.cmd("FUNCTION", "LIST")[0][1] == "holdfast_v1"
        hold_ok(c, partition, ["3"])
        hold_ok(c, other, ["1"])
        assert metrics(c)["holdfast_redis_noscript_recoveries_total"] >= 1


def test_seeds_and_a_unix_socket_seed(make_cluster_daemon, cluster):
    # The first address answers nothing; the slot map comes from a seed that
    # is a Unix socket, and the primaries are then reached over TCP.
    d = make_cluster_daemon(address="127.0.0.1:1",
                            redis_extra='seeds = { "unix:%s" }' % cluster.nodes[1].socket)
    with Client(d.socket) as c:
        for node in cluster.nodes:
            hold_ok(c, cluster.partition_on(node, prefix="seed%d" % node.index), ["1"])
        assert metrics(c)["holdfast_redis_cluster_nodes"] == 3


def test_cluster_settings_are_checked(workdir, cluster):
    def check(redis_extra):
        d = harness.Daemon(workdir, cluster.seed, redis_extra=redis_extra, name="check")
        return subprocess.run([harness.HOLDFASTD, "--check-config", d.config],
                              capture_output=True, text=True, timeout=30)
    ok = check('cluster = true, seeds = { "127.0.0.1:7001", "unix:/run/redis.sock" }')
    assert ok.returncode == 0, ok.stderr
    bad = check('seeds = { "127.0.0.1:7001" }')
    assert bad.returncode == 1 and "redis.seeds" in bad.stderr and "cluster" in bad.stderr
    bad = check("cluster = true, db = 3")
    assert bad.returncode == 1 and "redis.db" in bad.stderr
    bad = check('cluster = true, seeds = { "nowhere" }')
    assert bad.returncode == 1 and "redis.seeds[1]" in bad.stderr


def test_a_node_down_fails_its_slots_closed_and_others_keep_working(make_cluster_daemon,
                                                                    cluster):
    d = make_cluster_daemon()
    down = cluster.nodes[1]
    lost = cluster.partition_on(down, prefix="down")
    alive = cluster.partition_on(cluster.nodes[2], prefix="alive")
    with Client(d.socket) as c:
        hold_ok(c, lost, ["1"])
        down.stop()
        try:
            started = time.monotonic()
            r = c.hold("seat", lost, ["2"], timeout_ms=1500)
            assert code_name(r.code) == "UNAVAILABLE", r
            assert not r.degraded and not r.hold.token
            assert time.monotonic() - started < 1.5 + 2.0  # its deadline, plus slack for valgrind
            # best_effort says so, and holds nothing (the namespace is part
            # of the hash tag: a partition of its own on the same node)
            lost_pm = cluster.partition_on(down, ns="product-modify", prefix="down-pm")
            r = c.hold("product-modify", lost_pm, ["9"], ttl_ms=1000)
            assert code_name(r.code) == "OK" and r.degraded and not r.hold.token
            hold_ok(c, alive, ["1"])
            h = c.health().health
            assert h.redis == "down" and not h.ready
        finally:
            down.start()
            cluster.wait_ok()
        d.wait_ready()
        hold_ok(c, lost, ["2"])
        assert c.health().health.redis == "up"


def test_replica_acks_are_awaited_on_the_granting_node(make_cluster_daemon, cluster):
    # The cluster has no replicas: WAIT (on the connection that made the
    # grant) sees none, so the grant is withdrawn on its node and refused.
    d = make_cluster_daemon(namespaces="""
        acked = { min_replicas_ack = 1, replicas_ack_timeout_ms = 50 },
    """)
    node = cluster.nodes[0]
    partition = cluster.partition_on(node, ns="acked", prefix="ack")
    with Client(d.socket) as c:
        r = c.hold("acked", partition, ["1"])
        assert code_name(r.code) == "UNAVAILABLE" and not r.hold.token, r
        assert "replicas acknowledged" in r.message
        assert not node.has(hold_key("acked", partition, "1"))
        assert metrics(c)["holdfast_replica_ack_failures_total"] == 1


def test_cluster_mode_against_a_plain_server_never_becomes_ready(workdir, redis):
    d = harness.Daemon(workdir, redis.address, redis_extra="cluster = true")
    d.start(wait_ready=False)
    try:
        d.wait_log("not a cluster node")
        with Client(d.socket) as c:
            h = c.health().health
            assert not h.ready and h.redis == "down"
            r = c.hold("seat", "plain", ["1"])
            assert code_name(r.code) == "UNAVAILABLE" and not r.hold.token
    finally:
        d.stop()


def test_session_holds_renew_in_one_call_per_slot_and_go_when_the_connection_closes(
        make_cluster_daemon, cluster):
    """docs/sessions.md: a session's renewal is one call per slot (a call's
    keys must share one), and the release at close reaches every node."""
    d = make_cluster_daemon(namespaces="""
        seat = { default_ttl_ms = 30000, min_ttl_ms = 10, max_ttl_ms = 600000,
                 session_ttl_ms = 600 },""")
    parts = [cluster.partition_on(node, prefix="sess%d" % node.index) for node in cluster.nodes]
    with Client(d.socket) as c:
        for p in parts:
            for i in range(5):
                r = c.call(hold=harness.pb().HoldRequest(namespace="seat", partition=p,
                                                         ids=[str(i)], session=True))
                assert code_name(r.code) == "OK", r
                harness.ISSUED_TOKENS.add(r.hold.token)
        m0 = metrics(c)
        time.sleep(1.3)
        m1 = metrics(c)
        calls = m1["holdfast_session_renewal_calls_total"] - m0["holdfast_session_renewal_calls_total"]
        renewed = m1["holdfast_session_renewals_total"] - m0["holdfast_session_renewals_total"]
        # Each tick sends its three calls at once: one per slot, 5 holds each.
        assert calls >= 3 and calls % 3 == 0, calls
        assert abs(renewed - 5 * calls) <= 15, (renewed, calls)
        assert m1["holdfast_session_holds_lost_total"] == 0
        for node, p in zip(cluster.nodes, parts):
            assert node.has(hold_key("seat", p, "4"))
    harness.wait_for(lambda: not any(node.has(hold_key("seat", p, str(i)))
                                     for node, p in zip(cluster.nodes, parts) for i in range(5)),
                     timeout=5, what="the session holds released on every node")


def test_waiters_in_a_cluster_are_woken_across_nodes(make_cluster_daemon, cluster):
    """docs/waiting.md: each daemon subscribes on its redis.address node;
    a PUBLISH reaches every node of the cluster, so a release on the node
    that owns the partition wakes a waiter whose daemon listens elsewhere."""
    d0 = make_cluster_daemon(address=cluster.nodes[0].address)
    d1 = make_cluster_daemon(address=cluster.nodes[1].address)
    p = cluster.partition_on(cluster.nodes[2], prefix="wait")
    with Client(d0.socket) as holder, Client(d1.socket) as w1, Client(d0.socket) as w2:
        for c in (w1, w2):
            harness.wait_for(lambda: metrics(c).get("holdfast_wait_subscribed") == 1,
                             what="the wake-up subscriptions")
        token = hold_ok(holder, p, ["A"], ttl_ms=60000)
        for i, c in enumerate((w1, w2)):
            c.send(hold=harness.pb().HoldRequest(namespace="seat", partition=p, ids=["A"],
                                                 ttl_ms=10000, wait_ms=20000),
                   timeout_ms=20000)
            harness.wait_for(lambda: cluster.nodes[2].cmd(
                "ZCARD", "hf:{seat:%s}:#line:A" % p) == i + 1, what="queued")
        assert code_name(holder.release("seat", p, ["A"], token).code) == "OK"
        r = w1.recv()
        assert code_name(r.code) == "OK", r
        harness.ISSUED_TOKENS.add(r.hold.token)
        assert code_name(w1.release("seat", p, ["A"], r.hold.token).code) == "OK"
        r = w2.recv()
        assert code_name(r.code) == "OK", r
        # Woken by w1's release on another daemon (d0 has no other waiter,
        # and the head alone is woken).
        assert metrics(w2)["holdfast_wait_wakeups_total"] == 1
