// holdfast-client: expiring holds on scarce resources through holdfastd.

export {
  Client,
  Hold,
  HoldBase,
  PoolHold,
  DEFAULT_SOCKET,
  DEFAULT_TIMEOUT_MS,
  SOCKET_ENV,
  WAIT_MARGIN_MS,
  jsonReplacer,
  legIds,
  newCorrelationId,
  withHold,
  withHoldUnits,
  type CallOptions,
  type CancelOptions,
  type CancelResult,
  type Capacities,
  type Claim,
  type ClientOptions,
  type ConfirmOptions,
  type ConfirmResult,
  type Health,
  type HoldOptions,
  type HoldOptionsBase,
  type OnLost,
  type PoolCancelOptions,
  type PoolCancelResult,
  type PoolCapacity,
  type PoolConfirmOptions,
  type PoolConfirmResult,
  type PoolHoldOptions,
  type PoolStatus,
  type ResourceStatus,
  type Segment,
  type SegmentOptions,
  type UnitCounts,
  type Units,
} from "./client.js";
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
