// holdfast-client: expiring holds on scarce resources through holdfastd.
// The surface (protos/contract/surface.json): a target (seats or units), a
// Client whose every operation takes one, one Hold handle, the Admin calls.

export { Client } from "./client.js";
export { Hold, withHold } from "./hold.js";
export { Admin } from "./admin.js";
export { seats, units, legIds, type Segment, type SeatsTarget, type Target, type UnitCounts, type Units, type UnitsTarget } from "./target.js";
export {
  jsonReplacer,
  type CancelResult,
  type Capacities,
  type Claim,
  type ConfirmResult,
  type Health,
  type PoolCapacity,
  type PoolStatus,
  type ResourceStatus,
  type StatusResult,
} from "./results.js";
export type { CallOptions, CancelOptions, ClientOptions, ConfirmOptions, HoldOptions, OnLost, StatusOptions } from "./options.js";
export { DEFAULT_SOCKET, DEFAULT_TIMEOUT_MS, SOCKET_ENV, WAIT_MARGIN_MS, newCorrelationId } from "./contract.js";
// Deprecated names, kept one release (see the README's "Deprecated names").
export {
  HoldBase,
  PoolHold,
  withHoldUnits,
  type HoldOptionsBase,
  type PoolCancelOptions,
  type PoolCancelResult,
  type PoolConfirmOptions,
  type PoolConfirmResult,
  type PoolHoldOptions,
  type SegmentOptions,
} from "./deprecated.js";
export { isSessionEvent } from "./session.js";
export {
  ClientClosedError,
  HoldfastError,
  RETRYABLE_CODES,
  codeName,
  isHoldfastError,
  isRetryable,
  type HoldfastErrorInit,
} from "./errors.js";
export { FrameError, FrameReader, MAX_RESPONSE_FRAME, decodeResponse, encodeFrame, encodeRequest } from "./frame.js";
// The generated schemas and types, for callers who need the raw wire messages.
export * as pb from "./gen/holdfast/v1/holdfast_pb.js";
export { Code, ResourceState } from "./gen/holdfast/v1/holdfast_pb.js";
