// The client surface (protos/contract/surface.json, and surface/typescript.json
// for this client's spellings and deprecated aliases): every name exists in
// its TypeScript spelling, nothing public exists beyond it, and every
// deprecated alias sends exactly what its replacement sends. Types, which
// do not exist at run time, are read from the package's declarations
// (dist/src/index.d.ts) with the TypeScript compiler.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, test } from "node:test";

import { create, toJson, type JsonValue } from "@bufbuild/protobuf";
import ts from "typescript";
import * as hf from "../src/index.js";
import { Admin, Client, Hold, seats, units, withHold, withHoldUnits } from "../src/index.js";
import { CALL } from "../src/call.js";
import { SessionHolds } from "../src/session.js";
import { RequestSchema } from "../src/gen/holdfast/v1/holdfast_pb.js";
import { okFor } from "./fake-daemon.js";

type Names = Record<string, string>;
interface Surface {
  naming: Record<string, { type: string; member: string; target: string }>;
  naming_rules: Record<string, string>;
  types: Names;
  targets: Names;
  client: Names;
  hold: Names;
  admin: Names;
}
interface LanguageFile {
  spelling: Record<string, string | string[]>;
  deprecated: Record<string, string>;
}

const CONTRACT = new URL("../../../../protos/contract/", import.meta.url);
const SURFACE: Surface = JSON.parse(readFileSync(new URL("surface.json", CONTRACT), "utf8"));
const MINE: LanguageFile = JSON.parse(readFileSync(new URL("surface/typescript.json", CONTRACT), "utf8"));
const RULE = SURFACE.naming.typescript;

/** The canonical names of a section, without its comments. */
const names = (section: Names) => Object.keys(section).filter((k) => !k.startsWith("$"));

/** snake_case spelled by one of surface.json's naming rules. */
function spell(rule: string, canonical: string): string {
  if (rule === "snake") return canonical;
  const pascal = canonical
    .split("_")
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join("");
  if (rule === "Pascal") return pascal;
  if (rule === "camel") return pascal.charAt(0).toLowerCase() + pascal.slice(1);
  throw new Error(`unknown naming rule ${rule}`);
}

/** How this client spells `section.canonical`: its own spelling if typescript.json has one, else the rule's. */
function spelled(section: keyof Surface, rule: string, canonical: string): string[] {
  const own = MINE.spelling[`${section}.${canonical}`];
  return own === undefined ? [spell(rule, canonical)] : ([] as string[]).concat(own);
}

// Members beyond surface.json that are this language's own: the state a
// handle shows (`closed`, `active`, `session`), `close` for `await using`,
// JSON and string forms, and withHold (the scope helper for runtimes
// without `await using`; the other clients have the language's own scope).
const EXTRAS: Record<string, string[]> = {
  client: ["closed"],
  hold: ["active", "session", "close", "toJSON", "toString"],
  admin: [],
  functions: ["withHold"],
};

const TOKEN = "1.fake"; // what okFor's holds carry
const SEG = { fromStop: 0, toStop: 2 };
const offline = () => new Client({ socketPath: "/nonexistent/holdfast.sock" });
const aHold = (c: Client) => c.resume("seat", "p", seats(["E7", "E8"]), TOKEN);
const aUnitsHold = (c: Client) => c.resume("ga", "p", units({ adult: 2, child: 1 }), TOKEN);

/** Public member names on an object's prototype chain up to Object (methods and getters). */
function protoMembers(obj: object): string[] {
  const out = new Set<string>();
  for (let p = Object.getPrototypeOf(obj); p && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
    for (const n of Object.getOwnPropertyNames(p)) if (n !== "constructor") out.add(n);
  }
  return [...out];
}

// ---- the package's declarations, as a TypeScript user sees them ---------------

const DTS = fileURLToPath(new URL("../src/index.d.ts", import.meta.url));
let declared: Map<string, ts.Symbol> | undefined;

/** The package's exports by name, resolved through re-exports. */
function exportsOfPackage(): Map<string, ts.Symbol> {
  if (declared) return declared;
  const program = ts.createProgram([DTS], {
    noEmit: true,
    skipLibCheck: true,
    types: [],
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
  });
  const checker = program.getTypeChecker();
  const mod = checker.getSymbolAtLocation(program.getSourceFile(DTS)!)!;
  declared = new Map(
    checker.getExportsOfModule(mod).map((s) => [s.name, s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s]),
  );
  return declared;
}

function isExportedType(name: string): boolean {
  const s = exportsOfPackage().get(name);
  return s !== undefined && (s.flags & ts.SymbolFlags.Type) !== 0;
}

/** What an exported type alias stands for ("ConfirmResult"), or undefined. */
function aliasOf(name: string): string | undefined {
  const decl = exportsOfPackage()
    .get(name)
    ?.declarations?.find((d): d is ts.TypeAliasDeclaration => ts.isTypeAliasDeclaration(d));
  return decl?.type.getText();
}

// ---- the names of surface.json ------------------------------------------------

describe("surface.json in TypeScript spelling", () => {
  test("the naming rules give their own examples", () => {
    for (const [rule, text] of Object.entries(SURFACE.naming_rules)) {
      for (const [, from, to] of text.matchAll(/([a-z_]+) -> ([A-Za-z]+)/g)) assert.equal(spell(rule, from), to, `${rule}: ${from}`);
    }
    assert.deepEqual(RULE, { type: "Pascal", member: "camel", target: "camel" });
  });

  test("every type is exported by the package", () => {
    const missing = names(SURFACE.types).flatMap((t) => spelled("types", RULE.type, t).filter((n) => !isExportedType(n)));
    assert.deepEqual(missing, [], "types missing from dist/src/index.d.ts");
  });

  test("every target constructor is an exported function making that kind", () => {
    for (const t of names(SURFACE.targets)) {
      for (const n of spelled("targets", RULE.target, t)) {
        const make = (hf as unknown as Record<string, unknown>)[n];
        assert.equal(typeof make, "function", `targets.${t}: ${n}`);
        const sample = t === "seats" ? (make as typeof seats)(["E7"]) : (make as typeof units)({ adult: 1 });
        assert.equal(sample.kind, t, n);
      }
    }
  });

  const sections = {
    client: () => offline(),
    hold: () => aHold(offline()),
    admin: () => offline().admin,
  } as const;

  for (const [section, make] of Object.entries(sections) as [keyof typeof sections, () => object][]) {
    test(`every ${section} member exists`, () => {
      const obj = make();
      const missing = names(SURFACE[section]).flatMap((m) => spelled(section, RULE.member, m).filter((n) => !(n in obj)));
      assert.deepEqual(missing, [], `${section} members missing`);
    });

    test(`${section} has no public method beyond the surface, its deprecated aliases and the language's own`, () => {
      const known = new Set([
        ...names(SURFACE[section]).flatMap((m) => spelled(section, RULE.member, m)),
        ...Object.keys(MINE.deprecated).filter((k) => k.startsWith(`${section}.`)).map((k) => k.slice(section.length + 1)),
        ...EXTRAS[section],
      ]);
      assert.deepEqual(protoMembers(make()).filter((n) => !known.has(n)), [], `undeclared ${section} members`);
    });
  }

  test("the handle is one class for seats and units; resume makes one without a call", () => {
    const c = offline();
    const h = aUnitsHold(c);
    assert.ok(h instanceof Hold && aHold(c) instanceof Hold);
    assert.ok(c.admin instanceof Admin && c.admin === c.admin);
    assert.equal(h.fence, 1n);
    assert.deepEqual(h.target, { kind: "units", units: { adult: 2, child: 1 }, pools: ["adult", "child"] });
    assert.throws(() => c.resume("seat", "p", ["E7"], "not-a-token"), (err: unknown) => hf.isHoldfastError(err, hf.Code.INVALID_ARGUMENT));
  });
});

// ---- deprecated aliases --------------------------------------------------------

/** Runs `fn` with the client's transport replaced by a recorder answering as okFor does. */
async function sentBy(fn: (c: Client) => unknown): Promise<{ sent: JsonValue[]; result: unknown }> {
  const proto = Client.prototype as unknown as Record<symbol, unknown>;
  const saved = proto[CALL];
  const sent: JsonValue[] = [];
  proto[CALL] = async (method: string, value: object) => {
    const req = create(RequestSchema, { method: { case: method, value } } as never);
    sent.push(toJson(RequestSchema, req, { useProtoFieldName: true }));
    const resp = okFor(req);
    return [resp.result.value, resp, { sessions: new SessionHolds() }];
  };
  try {
    return { sent, result: comparable(await fn(offline())) };
  } finally {
    proto[CALL] = saved;
  }
}

/** A result as compared: a hold by what it shows, less its (random) correlation id. */
function comparable(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(comparable);
  return v instanceof Hold ? { ...v.toJSON(), correlationId: "-" } : v;
}

// Each alias beside the same call through its replacement: both must send
// the same requests and resolve to the same result.
const FORWARDS: Record<string, [alias: (c: Client) => unknown, replacement: (c: Client) => unknown]> = {
  "client.holdUnits": [(c) => c.holdUnits("ga", "p", { adult: 2 }, { ttlMs: 1000 }), (c) => c.hold("ga", "p", units({ adult: 2 }), { ttlMs: 1000 })],
  "client.extend": [
    (c) => c.extend("train", "p", ["E7"], TOKEN, { ttlMs: 1000, segment: SEG }),
    (c) => c.resume("train", "p", seats(["E7"], SEG), TOKEN).extend(1000),
  ],
  "client.extendUnits": [
    (c) => c.extendUnits("ga", "p", ["adult"], TOKEN, { ttlMs: 1000 }),
    (c) => c.resume("ga", "p", units(["adult"]), TOKEN).extend(1000),
  ],
  "client.release": [(c) => c.release("seat", "p", ["E7"], TOKEN), (c) => c.resume("seat", "p", seats(["E7"]), TOKEN).release()],
  "client.releaseUnits": [(c) => c.releaseUnits("ga", "p", ["adult"], TOKEN), (c) => c.resume("ga", "p", units(["adult"]), TOKEN).release()],
  "client.confirm": [
    (c) => c.confirm("train", "p", ["E7"], TOKEN, { idempotencyKey: "k", reference: "r", segment: SEG }),
    (c) => c.resume("train", "p", seats(["E7"], SEG), TOKEN).confirm({ idempotencyKey: "k", reference: "r" }),
  ],
  "client.confirmUnits": [
    (c) => c.confirmUnits("ga", "p", { adult: 2 }, TOKEN, { idempotencyKey: "k" }),
    (c) => c.resume("ga", "p", units({ adult: 2 }), TOKEN).confirm({ idempotencyKey: "k" }),
  ],
  "client.cancelUnits": [
    (c) => c.cancelUnits("ga", "p", { adult: 1 }, { idempotencyKey: "k", reference: "r" }),
    (c) => c.cancel("ga", "p", units({ adult: 1 }), { idempotencyKey: "k", reference: "r" }),
  ],
  "client.poolStatus": [
    (c) => c.poolStatus("ga", "p", ["adult"], { token: TOKEN }),
    async (c) => (await c.status("ga", "p", units(["adult"]), { token: TOKEN })).pools,
  ],
  "client.setCapacity": [(c) => c.setCapacity("ga", "p", "adult", 5), (c) => c.admin.setCapacity("ga", "p", "adult", 5)],
  "client.setDefaultCapacity": [(c) => c.setDefaultCapacity("ga", "p", 1), (c) => c.admin.setDefaultCapacity("ga", "p", 1)],
  "hold.ids": [(c) => aHold(c).ids, (c) => (aHold(c).target as hf.SeatsTarget).ids],
  "hold.segment": [
    (c) => c.resume("train", "p", seats(["E7"], SEG), TOKEN).segment,
    (c) => (c.resume("train", "p", seats(["E7"], SEG), TOKEN).target as hf.SeatsTarget).segment,
  ],
  "hold.units": [(c) => aUnitsHold(c).units, (c) => (aUnitsHold(c).target as hf.UnitsTarget).units],
  "hold.pools": [(c) => aUnitsHold(c).pools, (c) => (aUnitsHold(c).target as hf.UnitsTarget).pools],
  "functions.withHoldUnits": [
    (c) => withHoldUnits(c, "ga", "p", { adult: 2 }, {}, (h) => h.release()),
    (c) => withHold(c, "ga", "p", units({ adult: 2 }), {}, (h) => h.release()),
  ],
  "options.segment": [
    async (c) => [
      await c.hold("train", "p", ["E7"], { segment: SEG }),
      await c.status("train", "p", ["E7"], { segment: SEG }),
      await c.cancel("train", "p", ["E7"], { idempotencyKey: "k", segment: SEG }),
    ],
    async (c) => [
      await c.hold("train", "p", seats(["E7"], SEG)),
      await c.status("train", "p", seats(["E7"], SEG)),
      await c.cancel("train", "p", seats(["E7"], SEG), { idempotencyKey: "k" }),
    ],
  ],
};

describe("deprecated aliases (surface/typescript.json)", () => {
  const aliases = Object.entries(MINE.deprecated);

  test("every replacement is a name of this client", () => {
    const c = offline();
    const where: Record<string, (n: string) => boolean> = {
      client: (n) => n in c,
      hold: (n) => n in aHold(c),
      admin: (n) => n in c.admin,
      targets: (n) => typeof (hf as unknown as Record<string, unknown>)[n] === "function",
      functions: (n) => typeof (hf as unknown as Record<string, unknown>)[n] === "function",
      types: isExportedType,
    };
    for (const [alias, replacement] of aliases) {
      const [section, name] = replacement.split(".");
      assert.ok(where[section]?.(name), `${alias} -> ${replacement}: no such name`);
    }
  });

  test("every alias but the types has a forwarding check here, and no check lacks its alias", () => {
    assert.deepEqual(
      aliases.map(([a]) => a).filter((a) => !a.startsWith("types.")).sort(),
      Object.keys(FORWARDS).sort(),
    );
  });

  for (const [alias, [viaAlias, viaReplacement]] of Object.entries(FORWARDS)) {
    test(`${alias} forwards to ${MINE.deprecated[alias]}`, async () => {
      const [section, name] = alias.split(".");
      const where: Record<string, unknown> = { client: offline(), hold: aHold(offline()), functions: hf };
      if (section in where) assert.ok(name in (where[section] as object), `${alias} is missing`);
      const got = await sentBy(viaAlias);
      const want = await sentBy(viaReplacement);
      assert.deepEqual(got, want);
      assert.ok(want.sent.length > 0 || section === "hold", "the check makes no call");
    });
  }

  test("every deprecated type is exported and stands for its replacement", () => {
    for (const [alias, replacement] of aliases.filter(([a]) => a.startsWith("types."))) {
      const name = alias.slice("types.".length);
      const [section, target] = replacement.split(".");
      assert.ok(isExportedType(name), `${alias} is not exported`);
      if (section === "types") {
        assert.equal(aliasOf(name), target, `${alias} is not an alias of ${target}`);
        // A class's alias is the class itself at run time too.
        const value = (hf as unknown as Record<string, unknown>)[target];
        if (typeof value === "function") assert.equal((hf as unknown as Record<string, unknown>)[name], value, alias);
      }
    }
  });
});
