// hold+release pairs/s: holdfast's TypeScript client against node-redlock
// (redlock 5 beta + ioredis: acquire with retryCount 0, then release), on the
// same private stack (the daemon's Redis is the one redlock locks in), run
// alternately in the same process: sequentially (one awaited call after
// another) and with N loops in flight on one client. Each loop holds a key of
// its own. Prints one line per phase and a table of medians (over the
// rounds) with the ratios holdfast / redlock as the last lines.
//
//   node bench.mjs --socket DIR/holdfast.sock --redis DIR/redis.sock
//                  [--seconds 5] [--rounds 3] [--concurrency 16]
//                  [--only holdfast|redlock] [--mode seq|inflight]
//                  [--pids PID,PID] [--before PATH]
//
// --pids: processes (holdfastd, redis-server) whose CPU use is shown per phase.
// --before: another build of the client (its dist/src/index.js, e.g. of an
// older commit), measured as "before" in the same rounds: its ratio to
// redlock is shown too.

import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

import { Client } from "holdfast-client";
import Redis from "ioredis";
import Redlock from "redlock";

const { values: args } = parseArgs({
  options: {
    socket: { type: "string" },
    redis: { type: "string" },
    seconds: { type: "string", default: "5" },
    rounds: { type: "string", default: "3" },
    concurrency: { type: "string", default: "16" },
    only: { type: "string" },
    pids: { type: "string", default: "" },
    warmup: { type: "string", default: "1" },
    before: { type: "string" },
    mode: { type: "string" },
  },
});
if (!args.socket || !args.redis) {
  console.error("usage: node bench.mjs --socket HOLDFAST_SOCK --redis REDIS_SOCK [--seconds 5] [--rounds 3] [--concurrency 16]");
  process.exit(2);
}
const SECONDS = Number(args.seconds);
const ROUNDS = Number(args.rounds);
const CONC = Number(args.concurrency);
const WARMUP = Number(args.warmup);
const TTL_MS = 10_000;
const PIDS = args.pids.split(",").filter(Boolean).map(Number);
const TAG = `b${process.pid}`;

// ---- the two contenders: one hold+release pair each ----------------------

const client = new Client({ socketPath: args.socket, timeoutMs: 5000 });
const redis = new Redis({ path: args.redis, enableAutoPipelining: false, lazyConnect: true });
await redis.connect();
const redlock = new Redlock([redis], { retryCount: 0 });

const holdfastPair = (c) => async (key) => {
  const h = await c.hold("seat", TAG, [key], { ttlMs: TTL_MS });
  await h.release();
};
let before = null;
if (args.before) {
  const { Client: BeforeClient } = await import(pathToFileURL(resolve(args.before)).href);
  before = new BeforeClient({ socketPath: args.socket, timeoutMs: 5000 });
}

const contenders = {
  holdfast: { pair: holdfastPair(client) },
  ...(before ? { before: { pair: holdfastPair(before) } } : {}),
  redlock: {
    pair: async (key) => {
      const lock = await redlock.acquire([`${TAG}:${key}`], TTL_MS);
      await lock.release();
    },
  },
};

// ---- measurement ------------------------------------------------------------

const CLK_TCK = 100; // USER_HZ, Linux
function cpuTicks(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return Number(f[11]) + Number(f[12]); // utime + stime (fields 14, 15)
  } catch {
    return NaN;
  }
}

/** Runs `loops` loops of pairs for `seconds`; pairs/s, p50 and p99 of one pair (µs), CPU%. */
async function phase(name, loops, seconds) {
  const { pair } = contenders[name];
  const lat = [];
  let stop = false;
  const cpu0 = process.cpuUsage();
  const ext0 = PIDS.map(cpuTicks);
  const t0 = performance.now();
  const timer = setTimeout(() => (stop = true), seconds * 1000);
  let pairs = 0;
  await Promise.all(
    Array.from({ length: loops }, async (_, loop) => {
      const key = `L${loop}`;
      while (!stop) {
        const s = performance.now();
        await pair(key);
        lat.push(performance.now() - s);
        pairs++;
      }
    }),
  );
  clearTimeout(timer);
  const wall = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const ext = PIDS.map((p, i) => (cpuTicks(p) - ext0[i]) / CLK_TCK / wall);
  lat.sort((a, b) => a - b);
  const q = (f) => lat[Math.min(lat.length - 1, Math.floor(f * lat.length))] * 1000;
  return { pairs: pairs / wall, p50: q(0.5), p99: q(0.99), node: (cpu.user + cpu.system) / 1e6 / wall, ext };
}

const fmt = (n, w = 8) => String(Math.round(n)).padStart(w);
const pct = (x) => `${Math.round(x * 100)}%`.padStart(5);
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

const names = args.only ? [args.only] : Object.keys(contenders);
const modes = [
  { mode: "seq", loops: 1 },
  { mode: `${CONC} in flight`, loops: CONC },
].filter((m) => !args.mode || (args.mode === "seq") === (m.loops === 1));

for (const name of names) for (const m of modes) await phase(name, m.loops, WARMUP); // JIT, connections

const results = {}; // `${mode}/${name}` -> [{pairs, p50, ...}] per round
console.log(`phase                      pairs/s   p50 µs   p99 µs  node CPU  µs/pair${PIDS.length ? "  " + PIDS.map((p) => `pid ${p}`.padStart(9)).join(" ") : ""}`);
for (let round = 1; round <= ROUNDS; round++) {
  for (const m of modes) {
    // Alternate which goes first, so that neither always follows the other.
    const order = round % 2 ? names : [...names].reverse();
    for (const name of order) {
      const r = await phase(name, m.loops, SECONDS);
      (results[`${m.mode}/${name}`] ??= []).push(r);
      const label = `r${round} ${m.mode} ${name}`.padEnd(24);
      console.log(`${label} ${fmt(r.pairs, 9)} ${fmt(r.p50)} ${fmt(r.p99)}   ${pct(r.node)} ${fmt((r.node * 1e6) / r.pairs, 8)}${r.ext.map((x) => pct(x).padStart(10)).join("")}`);
    }
  }
}

client.close();
before?.close();
redis.disconnect();

// ---- summary: medians over the rounds; ratios from the same rounds ---------
const medianRatio = (mode, name) =>
  median(results[`${mode}/${name}`].map((r, i) => r.pairs / results[`${mode}/redlock`][i].pairs));
console.log("");
if (names.includes("holdfast") && names.includes("redlock")) {
  // For bench/run.sh --clients (issue 15's goals: >= 1.0 and >= 2.0).
  for (const m of modes) console.log(`${m.loops === 1 ? "ratio_seq" : `ratio_${m.loops}`} ${medianRatio(m.mode, "holdfast").toFixed(2)}`);
  console.log("");
}
console.log(`median of ${ROUNDS} rounds, ${SECONDS} s each (hold+release pairs; keys distinct per loop)`);
const others = names.filter((n) => n !== "redlock");
const ratioCols = names.includes("redlock") ? others.map((n) => `${n}/redlock`) : [];
console.log(`mode            ${names.map((n) => `${n} pairs/s  p50 µs`.padStart(26)).join("")}${ratioCols.map((c) => c.padStart(18)).join("")}`);
for (const m of modes) {
  const cols = names.map((n) => {
    const rs = results[`${m.mode}/${n}`];
    return `${fmt(median(rs.map((r) => r.pairs)), 17)}${fmt(median(rs.map((r) => r.p50)), 9)}`;
  });
  const ratios = ratioCols.map((_, k) => medianRatio(m.mode, others[k]).toFixed(2).padStart(18));
  console.log(`${m.mode.padEnd(16)}${cols.join("")}${ratios.join("")}`);
}
