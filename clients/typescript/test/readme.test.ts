// Every `ts` snippet of README.md type-checks against the built package, as
// an application would import it ("holdfast-client", strict), so the README
// cannot drift from the surface. Each snippet becomes the body of an async
// function; the few names snippets take as given (`run`, `pay`, ...) are
// declared once beside them.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "node:test";

const PKG = fileURLToPath(new URL("../../", import.meta.url)); // clients/typescript/
const TSC = join(PKG, "node_modules", "typescript", "bin", "tsc");

// What a snippet may use without importing it.
const PACKAGE_NAMES = ["Client", "Code", "Hold", "isHoldfastError", "isRetryable", "seats", "units", "withHold"];
const GIVEN = `
declare const run: string;
declare const show: string;
declare const orderId: string;
declare const client: import("holdfast-client").Client;
declare const other: import("holdfast-client").Client;
declare const hold: import("holdfast-client").Hold;
declare function pay(): Promise<void>;
declare function saveOrder(orderId: string, token: string): Promise<void>;
declare function loadToken(orderId: string): Promise<string>;
`;

function snippets(): string[] {
  const readme = readFileSync(join(PKG, "README.md"), "utf8");
  return [...readme.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
}

/** A module for one snippet: its imports on top, the rest as a function body. */
function moduleOf(snippet: string): string {
  const lines = snippet.split("\n");
  const imports = lines.filter((l) => l.startsWith("import "));
  const imported = new Set(imports.flatMap((l) => /\{([^}]*)\}/.exec(l)?.[1].split(",").map((n) => n.trim()) ?? []));
  const rest = PACKAGE_NAMES.filter((n) => !imported.has(n));
  return [
    ...imports,
    rest.length ? `import { ${rest.join(", ")} } from "holdfast-client";` : "",
    "export async function snippet() {",
    ...lines.filter((l) => !l.startsWith("import ")),
    "}",
  ].join("\n");
}

test("every ts snippet of the README type-checks against the package", () => {
  const found = snippets();
  assert.ok(found.length >= 8, `only ${found.length} snippets found`);
  const dir = mkdtempSync(join(tmpdir(), "hf-readme-"));
  try {
    // The package as an application's dependency.
    mkdirSync(join(dir, "node_modules"));
    symlinkSync(PKG, join(dir, "node_modules", "holdfast-client"), "dir");
    writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "module" }));
    writeFileSync(join(dir, "given.d.ts"), GIVEN);
    const files = found.map((s, i) => {
      const name = `snippet-${i + 1}.ts`;
      writeFileSync(join(dir, name), moduleOf(s));
      return name;
    });
    const tsconfig = {
      compilerOptions: {
        target: "ES2022",
        lib: ["ES2022", "ESNext.Disposable"],
        module: "NodeNext",
        moduleResolution: "NodeNext",
        strict: true,
        noEmit: true,
        skipLibCheck: true,
        types: ["node"],
        typeRoots: [join(PKG, "node_modules", "@types")],
      },
      files: ["given.d.ts", ...files],
    };
    writeFileSync(join(dir, "tsconfig.json"), JSON.stringify(tsconfig));
    const r = spawnSync(process.execPath, [TSC, "-p", join(dir, "tsconfig.json")], { encoding: "utf8", timeout: 120_000 });
    // Name the snippet by its first line, so a failure says which.
    const report = (r.stdout + r.stderr).replace(/snippet-(\d+)\.ts/g, (m, n) => `${m} (${found[Number(n) - 1].split("\n")[0]})`);
    assert.equal(r.status, 0, report);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
