// W3C trace context for requests (the client contract's "Trace context"): a
// call's own traceparent, else the current OpenTelemetry span's when
// @opentelemetry/api (an optional peer dependency) is installed, else none.

/** The part of @opentelemetry/api used here (so its types are not needed either). */
interface SpanContextLike {
  traceId: string;
  spanId: string;
  traceFlags: number;
}
interface OtelApi {
  context: { active(): unknown };
  trace: { getSpanContext(ctx: unknown): SpanContextLike | undefined };
  isSpanContextValid(sc: SpanContextLike): boolean;
}

// A variable, not a literal: compilers and bundlers must not require it.
const OTEL_API = "@opentelemetry/api";

let otel: OtelApi | null | undefined; // undefined: not looked for yet; null: not installed
let loading: Promise<void> | undefined;

async function load(): Promise<OtelApi | null> {
  if (otel === undefined) {
    loading ??= import(OTEL_API).then(
      (m: Partial<OtelApi> & { default?: Partial<OtelApi> }) => {
        const api = m.context && m.trace ? m : m.default;
        otel = api?.context && api.trace && api.isSpanContextValid ? (api as OtelApi) : null;
      },
      () => {
        otel = null;
      },
    );
    await loading;
  }
  return otel ?? null;
}

const HEX32 = /^[0-9a-f]{32}$/;
const HEX16 = /^[0-9a-f]{16}$/;

/** The traceparent of `api`'s active context, "" without a valid span context. */
function traceparentOf(api: OtelApi): string {
  try {
    const sc = api.trace.getSpanContext(api.context.active());
    if (!sc || !api.isSpanContextValid(sc)) return "";
    const traceId = sc.traceId.toLowerCase();
    const spanId = sc.spanId.toLowerCase();
    if (!HEX32.test(traceId) || !HEX16.test(spanId)) return "";
    const flags = (Number(sc.traceFlags) & 0xff).toString(16).padStart(2, "0");
    return `00-${traceId}-${spanId}-${flags}`;
  } catch {
    return ""; // a tracing problem never fails a call
  }
}

/**
 * The traceparent of the active OpenTelemetry context, "" without the API or
 * a valid span context. The first call loads the API (once); the context is
 * read after that, still in the caller's async context.
 */
export async function currentTraceparent(): Promise<string> {
  const api = otel === undefined ? await load() : otel;
  return api ? traceparentOf(api) : "";
}

/** A request's traceparent: the call's own (even ""), else OpenTelemetry's. */
export async function traceparentFor(explicit: string | undefined): Promise<string> {
  return traceparentNow(explicit);
}

/**
 * traceparentFor without a promise once the API was looked for: a string
 * at once (the context read synchronously, in the caller's context), a
 * promise only on the first call that has to load it.
 */
export function traceparentNow(explicit: string | undefined): string | Promise<string> {
  if (explicit !== undefined && explicit !== null) {
    if (typeof explicit !== "string") throw new TypeError("traceparent must be a string");
    return explicit;
  }
  if (otel === undefined) return currentTraceparent();
  return otel === null ? "" : traceparentOf(otel);
}
