// The one internal door to the daemon: Client's transport, which a Hold and
// the Admin surface call through. Symbol-keyed, so it is no part of the
// public surface (surface.json) and cannot clash with a method name.

import type { Request, Response } from "./gen/holdfast/v1/holdfast_pb.js";
import type { Connection } from "./connection.js";
import type { CallOptions } from "./options.js";

export type Method = NonNullable<Request["method"]["case"]>;
export type MethodValue<K extends Method> = Extract<Request["method"], { case: K }>["value"];
export type ResultValue<K extends Method> = Extract<Response["result"], { case: K }>["value"];

export const CALL: unique symbol = Symbol("holdfast.call");

/** What a Hold and an Admin need of their Client. */
export interface Caller {
  readonly timeoutMs: number;
  /**
   * Sends one request and resolves to its result (rejects with a
   * HoldfastError for any other code), the whole response and the
   * connection it went out on. `timeout`: the call's deadline (ms) when not
   * the options' or the client's; `cid`: its correlation id.
   */
  [CALL]<K extends Method>(
    method: K,
    value: Partial<MethodValue<K>>,
    opts: CallOptions,
    timeout?: number,
    cid?: string,
  ): Promise<[ResultValue<K>, Response, Connection]>;
}
