// The live tests' daemon: a real holdfastd with Redis (and PostgreSQL).
//
// The live tests only ever talk to a stack made for tests (the client
// contract, protos/contract/client-contract.md): they restart its daemon,
// pause its Redis and confirm into its `seat` namespace. HOLDFAST_SOCKET,
// which points at a user's real daemon, is ignored. Where the stack comes from:
//   HOLDFAST_TEST_STACK  a directory where `tools/devstack.sh up DIR` runs (the
//                        client test scripts start one and set this)
//   otherwise            `tools/devstack.sh up` in a temp dir, `down` at the
//                        end; skipped when holdfastd is not built.

import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { accessSync, constants as fsConstants, existsSync, mkdtempSync, openSync, closeSync, readFileSync, readdirSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import * as net from "node:net";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";

import { Client } from "../src/index.js";

const REPO = fileURLToPath(new URL("../../../../", import.meta.url));
const DEVSTACK = join(REPO, "tools", "devstack.sh");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export const TEST_STACK_ENV = "HOLDFAST_TEST_STACK";

export type StackChoice = { kind: "given"; dir: string } | { kind: "own" } | { kind: "skip"; reason: string };

const executable = (p: string) => {
  try {
    accessSync(p, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
};

/** Where the live tests' daemon comes from. Never from HOLDFAST_SOCKET. */
export function stackChoice(env: NodeJS.ProcessEnv | Record<string, string>): StackChoice {
  const dir = env[TEST_STACK_ENV];
  if (dir) return { kind: "given", dir };
  if (!existsSync(DEVSTACK)) {
    return { kind: "skip", reason: `live tests need a stack: ${DEVSTACK} is missing and ${TEST_STACK_ENV} is unset` };
  }
  const holdfastd = env.HOLDFASTD || join(REPO, "build", "daemon", "holdfastd");
  if (!executable(holdfastd)) {
    return { kind: "skip", reason: `live tests start their own stack, but ${holdfastd} is not built (tools/build.sh), and ${TEST_STACK_ENV} is unset` };
  }
  const path = (env.PATH ?? "").split(":").filter(Boolean);
  if (!path.some((d) => executable(join(d, "redis-server")))) {
    return { kind: "skip", reason: "live tests start their own stack, but redis-server is not installed" };
  }
  return { kind: "own" };
}

export class Stack {
  /** Every token issued to the tests, checked against the daemon log at the end. */
  readonly tokens: string[] = [];
  private readonly spawned: ChildProcess[] = [];

  private constructor(
    readonly socket: string,
    readonly dir: string | null,
    readonly owned: boolean,
  ) {}

  /** Why live tests cannot run, or null when a stack is available. */
  static unavailableReason(): string | null {
    const choice = stackChoice(process.env);
    return choice.kind === "skip" ? choice.reason : null;
  }

  static async start(): Promise<Stack> {
    const choice = stackChoice(process.env);
    if (choice.kind === "given") {
      const s = new Stack(join(choice.dir, "holdfast.sock"), choice.dir, false);
      await s.waitReady(30_000);
      return s;
    }
    const dir = mkdtempSync(join(tmpdir(), "hf-ts-")); // short: socket paths max 107 bytes
    const up = spawnSync("bash", [DEVSTACK, "up", dir], { encoding: "utf8", timeout: 300_000 });
    if (up.status !== 0) {
      spawnSync("bash", [DEVSTACK, "down", dir], { timeout: 120_000 });
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`tools/devstack.sh up failed (${up.status}):\n${up.stdout}\n${up.stderr}`);
    }
    const s = new Stack(join(dir, "holdfast.sock"), dir, true);
    await s.waitReady(30_000);
    return s;
  }

  async stop(): Promise<void> {
    // A daemon restarted in a stack we do not own is left running: its pid is
    // in DIR/holdfastd.pid, so that stack's `devstack.sh down` stops it.
    if (!this.owned) return;
    if (this.dir) spawnSync("bash", [DEVSTACK, "down", this.dir], { timeout: 120_000 });
    await this.stopSpawned();
    if (this.dir && !process.env.HOLDFAST_KEEP_STACK) rmSync(this.dir, { recursive: true, force: true });
  }

  async waitReady(ms: number): Promise<void> {
    const c = new Client({ socketPath: this.socket, timeoutMs: 1000 });
    const until = Date.now() + ms;
    let last: unknown = "not ready";
    try {
      while (Date.now() < until) {
        try {
          if ((await c.health()).ready) return;
          last = "daemon not ready";
        } catch (err) {
          last = err;
        }
        await sleep(100);
      }
    } finally {
      c.close();
    }
    throw new Error(`holdfastd at ${this.socket} not ready: ${String(last)}`);
  }

  // ---- Redis --------------------------------------------------------------

  get redisSocket(): string | null {
    if (!this.dir) return null;
    const p = join(this.dir, "redis.sock");
    return existsSync(p) ? p : null;
  }

  /** Asked from Redis itself (INFO server), so no pid file is needed. */
  async redisPid(): Promise<number> {
    const text = await new Promise<string>((resolve, reject) => {
      const s = net.createConnection({ path: this.redisSocket! });
      let data = "";
      s.setTimeout(5000, () => s.destroy(new Error("redis INFO timed out")));
      s.on("connect", () => s.write("INFO server\r\n"));
      s.on("data", (d) => {
        data += d.toString("latin1");
        if (/process_id:\d+/.test(data) && data.endsWith("\r\n\r\n")) {
          s.end();
          resolve(data);
        }
      });
      s.on("error", reject);
    });
    return Number(/process_id:(\d+)/.exec(text)![1]);
  }

  /** SIGSTOP the stack's redis-server for the duration of fn. */
  async withRedisPaused<T>(fn: () => Promise<T>): Promise<T> {
    const pid = await this.redisPid();
    process.kill(pid, "SIGSTOP");
    try {
      return await fn();
    } finally {
      process.kill(pid, "SIGCONT");
    }
  }

  // ---- the daemon -----------------------------------------------------------

  /** The stack's holdfastd: its pid file, else the process naming the stack dir. */
  daemonPid(): number | null {
    const dir = this.dir!;
    const pidfile = join(dir, "holdfastd.pid");
    if (existsSync(pidfile)) {
      const pid = Number(readFileSync(pidfile, "utf8").trim());
      if (pid > 0 && alive(pid)) return pid;
    }
    for (const entry of readdirSync("/proc")) {
      if (!/^\d+$/.test(entry)) continue;
      let argv: string[];
      try {
        argv = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
      } catch {
        continue;
      }
      if (basename(argv[0] ?? "") === "holdfastd" && argv.slice(1).some((a) => a.includes(dir)) && alive(Number(entry))) {
        return Number(entry);
      }
    }
    return null;
  }

  /** A stack we do not own must keep a pid file its `down` can use. */
  get canRestart(): boolean {
    return this.dir !== null && (this.owned || existsSync(join(this.dir, "holdfastd.pid")));
  }

  /**
   * Marks this process as a user of the stack's daemon until the returned
   * function runs: restartDaemon() in another test process (node --test runs
   * files side by side on a machine with more cores) waits for it.
   */
  markInUse(): () => void {
    if (!this.dir) return () => {};
    const f = join(this.dir, `.in-use.${process.pid}`);
    writeFileSync(f, `${process.pid}\n`);
    return () => rmSync(f, { force: true });
  }

  private async waitUntilUnused(ms: number): Promise<void> {
    const until = Date.now() + ms;
    for (;;) {
      const users = readdirSync(this.dir!)
        .map((f) => /^\.in-use\.(\d+)$/.exec(f))
        .filter((m): m is RegExpExecArray => m !== null && Number(m[1]) !== process.pid && alive(Number(m[1])));
      if (users.length === 0 || Date.now() > until) return;
      await sleep(100);
    }
  }

  /** SIGTERM the daemon and start it again with the same argv, env and cwd. */
  async restartDaemon(): Promise<void> {
    await this.waitUntilUnused(60_000);
    const pid = this.daemonPid();
    if (pid === null) throw new Error(`no holdfastd found for ${this.dir}`);
    const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
    const env: Record<string, string> = {};
    for (const kv of readFileSync(`/proc/${pid}/environ`, "utf8").split("\0")) {
      const i = kv.indexOf("=");
      if (i > 0) env[kv.slice(0, i)] = kv.slice(i + 1);
    }
    // systemd-style activation state must not leak into the new process
    for (const k of ["LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES", "NOTIFY_SOCKET"]) delete env[k];
    const cwd = readlinkSync(`/proc/${pid}/cwd`);
    process.kill(pid, "SIGTERM");
    const until = Date.now() + 15_000;
    while (alive(pid)) {
      if (Date.now() > until) throw new Error("holdfastd did not exit after SIGTERM");
      await sleep(20);
    }
    const log = openSync(join(this.dir!, "holdfastd.log"), "a");
    const child = spawn(argv[0], argv.slice(1), { cwd, env, stdio: ["ignore", log, log], detached: true });
    closeSync(log);
    child.unref();
    this.spawned.push(child);
    const pidfile = join(this.dir!, "holdfastd.pid");
    if (existsSync(pidfile)) writeFileSync(pidfile, `${child.pid}\n`); // so `devstack.sh down` stops this one
  }

  private async stopSpawned(): Promise<void> {
    for (const child of this.spawned) {
      if (child.pid !== undefined && alive(child.pid)) {
        child.kill("SIGTERM");
        const until = Date.now() + 10_000;
        while (alive(child.pid) && Date.now() < until) await sleep(20);
        if (alive(child.pid)) child.kill("SIGKILL");
      }
    }
  }
}

function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const state = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0];
    return state !== "Z" && state !== "X";
  } catch {
    return false;
  }
}
