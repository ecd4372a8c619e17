// Module resolution hooks: @opentelemetry/* is not installed (and the
// attempt is noted on stderr for the test to see).

type Resolve = (specifier: string, context: unknown) => Promise<unknown>;

export async function resolve(specifier: string, context: unknown, nextResolve: Resolve): Promise<unknown> {
  if (specifier.startsWith("@opentelemetry/")) {
    process.stderr.write(`no-otel: refused ${specifier}\n`);
    throw Object.assign(new Error(`Cannot find package '${specifier}'`), { code: "ERR_MODULE_NOT_FOUND" });
  }
  return nextResolve(specifier, context);
}
