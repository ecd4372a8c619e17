// holdfast-client: expiring holds on scarce resources through holdfastd.

export {
  Client,
  Hold,
  DEFAULT_SOCKET,
  DEFAULT_TIMEOUT_MS,
  SOCKET_ENV,
  jsonReplacer,
  legIds,
  newCorrelationId,
  withHold,
  type CallOptions,
  type CancelOptions,
  type CancelResult,
  type Claim,
  type ClientOptions,
  type ConfirmOptions,
  type ConfirmResult,
  type Health,
  type HoldOptions,
  type ResourceStatus,
  type Segment,
  type SegmentOptions,
} from "./client.js";
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
