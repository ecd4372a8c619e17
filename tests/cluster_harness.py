"""A real Redis Cluster for the integration tests: N primaries (no replicas)
on free loopback ports, everything in a temp dir, created with
`redis-cli --cluster create`. Used by tests/test_cluster.py.

Environment: REDIS_SERVER (as in harness.py) and REDIS_CLI (default: from
PATH, next to redis-server).
"""
import os
import random
import shutil
import socket
import subprocess

import harness
from harness import wait_for

REDIS_CLI = os.environ.get("REDIS_CLI") or shutil.which("redis-cli") or os.path.join(
    os.path.dirname(harness.REDIS_SERVER), "redis-cli")


def _port_free(port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_ports(n):
    """n ports whose cluster bus port (+10000) is free too."""
    ports = []
    while len(ports) < n:
        p = random.randint(20000, 55000)
        if p in ports or p + 10000 in ports:
            continue
        if _port_free(p) and _port_free(p + 10000):
            ports.append(p)
    return ports


def keyslot(key):
    """CRC16/XMODEM of the hash tag, as Redis Cluster computes it."""
    data = key.encode()
    start = data.find(b"{")
    if start >= 0:
        end = data.find(b"}", start + 1)
        if end > start + 1:
            data = data[start + 1:end]
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else (crc << 1)
            crc &= 0xFFFF
    return crc % 16384


def hold_key(ns, partition, ident):
    return "hf:{%s:%s}:%s" % (ns, partition, ident)


class ClusterNode(harness.RedisServer):
    """One cluster-enabled redis-server: TCP on loopback (cluster nodes talk
    to each other over it) plus the Unix socket the harness uses."""

    def __init__(self, workdir, index, port):
        super().__init__(workdir, name="node%d" % index, extra_args=[
            "--bind", "127.0.0.1",
            "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
            # Other partitions keep working while a node is down, and no
            # failover can happen (there are no replicas).
            "--cluster-require-full-coverage", "no", "--cluster-node-timeout", "5000"])
        self.index = index
        self.port = port
        self.id = None

    @property
    def address(self):
        return "127.0.0.1:%d" % self.port

    def has(self, key):
        """EXISTS here; a redirection (the key is not served here) is False."""
        try:
            return self.cmd("EXISTS", key) == 1
        except harness.RespError as e:
            if str(e).startswith(("MOVED ", "ASK ")):
                return False
            raise


class RedisCluster:
    """start() creates the cluster and waits for cluster_state:ok on every
    node; stop() stops every node (the temp dir belongs to the caller)."""

    def __init__(self, workdir, n=3):
        self.nodes = [ClusterNode(workdir, i, p) for i, p in enumerate(free_ports(n))]

    @property
    def seed(self):
        return self.nodes[0].address

    def start(self):
        for node in self.nodes:
            node.start()
        out = subprocess.run([REDIS_CLI, "--cluster", "create"] +
                             [n.address for n in self.nodes] +
                             ["--cluster-replicas", "0", "--cluster-yes"],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, "redis-cli --cluster create failed:\n" + out.stdout + out.stderr
        for node in self.nodes:
            node.id = node.cmd("CLUSTER", "MYID")
        self.wait_ok()
        return self

    def wait_ok(self, timeout=20.0):
        def ok():
            for node in self.nodes:
                if node.proc is None:
                    continue
                try:
                    info = node.cmd("CLUSTER", "INFO")
                except OSError:
                    return False
                if "cluster_state:ok" not in info:
                    return False
            # Every running node agrees on one owner per slot range.
            return self._agree()
        wait_for(ok, timeout=timeout, interval=0.1, what="cluster_state:ok on every node")

    def _agree(self):
        maps = set()
        for node in self.nodes:
            if node.proc is None:
                continue
            slots = node.cmd("CLUSTER", "SLOTS")
            maps.add(tuple(sorted((r[0], r[1], r[2][1]) for r in slots)))
        return len(maps) == 1

    def stop(self):
        for node in self.nodes:
            node.stop()

    def owner(self, slot):
        """The node that serves `slot`, by the first running node's map."""
        for node in self.nodes:
            if node.proc is None:
                continue
            for start, end, primary, *_ in node.cmd("CLUSTER", "SLOTS"):
                if start <= slot <= end:
                    return next(n for n in self.nodes if n.port == primary[1])
        raise AssertionError("no owner for slot %d" % slot)

    def partition_on(self, node, ns="seat", prefix="p"):
        """A partition name whose keys land on `node`."""
        for i in range(100000):
            partition = "%s-%d" % (prefix, i)
            if self.owner(keyslot(hold_key(ns, partition, "x"))) is node:
                return partition
        raise AssertionError("no partition found for node %d" % node.index)

    def migrate_begin(self, slot, src, dst):
        """Open `slot` for migration and move its keys; the slot stays
        MIGRATING/IMPORTING until migrate_end()."""
        assert dst.cmd("CLUSTER", "SETSLOT", slot, "IMPORTING", src.id) == "OK"
        assert src.cmd("CLUSTER", "SETSLOT", slot, "MIGRATING", dst.id) == "OK"
        keys = src.cmd("CLUSTER", "GETKEYSINSLOT", slot, 1000)
        if keys:
            assert src.cmd("MIGRATE", "127.0.0.1", dst.port, "", 0, 5000, "KEYS", *keys) == "OK"
        return keys

    def migrate_end(self, slot, dst):
        """Give `slot` to dst on every node (the importing node first)."""
        order = [dst] + [n for n in self.nodes if n is not dst]
        for node in order:
            if node.proc is not None:
                assert node.cmd("CLUSTER", "SETSLOT", slot, "NODE", dst.id) == "OK"
        self.wait_ok()
