from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

CODE_CONFIRMED: Code
CODE_CONFLICT: Code
CODE_DEADLINE_EXCEEDED: Code
CODE_FAILED_PRECONDITION: Code
CODE_HELD_BY_ANOTHER: Code
CODE_HOLD_LOST: Code
CODE_IDEMPOTENCY_MISMATCH: Code
CODE_INTERNAL: Code
CODE_INVALID_ARGUMENT: Code
CODE_NOT_FOUND: Code
CODE_NOT_HELD: Code
CODE_OK: Code
CODE_PERMISSION_DENIED: Code
CODE_RESOURCE_EXHAUSTED: Code
CODE_STALE: Code
CODE_UNAVAILABLE: Code
CODE_UNIMPLEMENTED: Code
CODE_UNSPECIFIED: Code
DESCRIPTOR: _descriptor.FileDescriptor
RESOURCE_STATE_CONFIRMED: ResourceState
RESOURCE_STATE_FREE: ResourceState
RESOURCE_STATE_HELD: ResourceState
RESOURCE_STATE_UNSPECIFIED: ResourceState

class CancelRequest(_message.Message):
    __slots__ = ["idempotency_key", "ids", "namespace", "partition", "reference", "segment", "units"]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    REFERENCE_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_FIELD_NUMBER: _ClassVar[int]
    UNITS_FIELD_NUMBER: _ClassVar[int]
    idempotency_key: str
    ids: _containers.RepeatedScalarFieldContainer[str]
    namespace: str
    partition: str
    reference: str
    segment: Segment
    units: _containers.RepeatedCompositeFieldContainer[PoolTake]
    def __init__(self, namespace: _Optional[str] = ..., partition: _Optional[str] = ..., ids: _Optional[_Iterable[str]] = ..., idempotency_key: _Optional[str] = ..., reference: _Optional[str] = ..., segment: _Optional[_Union[Segment, _Mapping]] = ..., units: _Optional[_Iterable[_Union[PoolTake, _Mapping]]] = ...) -> None: ...

class CancelResponse(_message.Message):
    __slots__ = ["cancelled", "replayed", "units"]
    CANCELLED_FIELD_NUMBER: _ClassVar[int]
    REPLAYED_FIELD_NUMBER: _ClassVar[int]
    UNITS_FIELD_NUMBER: _ClassVar[int]
    cancelled: int
    replayed: bool
    units: _containers.RepeatedCompositeFieldContainer[PoolTake]
    def __init__(self, cancelled: _Optional[int] = ..., replayed: bool = ..., units: _Optional[_Iterable[_Union[PoolTake, _Mapping]]] = ...) -> None: ...

class Claim(_message.Message):
    __slots__ = ["confirmed_at_unix_ms", "fence", "reference", "resource_id"]
    CONFIRMED_AT_UNIX_MS_FIELD_NUMBER: _ClassVar[int]
    FENCE_FIELD_NUMBER: _ClassVar[int]
    REFERENCE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    confirmed_at_unix_ms: int
    fence: int
    reference: str
    resource_id: str
    def __init__(self, resource_id: _Optional[str] = ..., fence: _Optional[int] = ..., reference: _Optional[str] = ..., confirmed_at_unix_ms: _Optional[int] = ...) -> None: ...

class ConfirmRequest(_message.Message):
    __slots__ = ["idempotency_key", "ids", "namespace", "partition", "payload", "reference", "segment", "token", "units"]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    REFERENCE_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    UNITS_FIELD_NUMBER: _ClassVar[int]
    idempotency_key: str
    ids: _containers.RepeatedScalarFieldContainer[str]
    namespace: str
    partition: str
    payload: bytes
    reference: str
    segment: Segment
    token: str
    units: _containers.RepeatedCompositeFieldContainer[PoolTake]
    def __init__(self, namespace: _Optional[str] = ..., partition: _Optional[str] = ..., ids: _Optional[_Iterable[str]] = ..., token: _Optional[str] = ..., idempotency_key: _Optional[str] = ..., reference: _Optional[str] = ..., payload: _Optional[bytes] = ..., segment: _Optional[_Union[Segment, _Mapping]] = ..., units: _Optional[_Iterable[_Union[PoolTake, _Mapping]]] = ...) -> None: ...

class ConfirmResponse(_message.Message):
    __slots__ = ["claims", "confirmed_at_unix_ms", "fence", "replayed", "units"]
    CLAIMS_FIELD_NUMBER: _ClassVar[int]
    CONFIRMED_AT_UNIX_MS_FIELD_NUMBER: _ClassVar[int]
    FENCE_FIELD_NUMBER: _ClassVar[int]
    REPLAYED_FIELD_NUMBER: _ClassVar[int]
    UNITS_FIELD_NUMBER: _ClassVar[int]
    claims: _containers.RepeatedCompositeFieldContainer[Claim]
    confirmed_at_unix_ms: int
    fence: int
    replayed: bool
    units: _containers.RepeatedCompositeFieldContainer[PoolTake]
    def __init__(self, fence: _Optional[int] = ..., claims: _Optional[_Iterable[_Union[Claim, _Mapping]]] = ..., replayed: bool = ..., units: _Optional[_Iterable[_Union[PoolTake, _Mapping]]] = ..., confirmed_at_unix_ms: _Optional[int] = ...) -> None: ...

class ErrorDetail(_message.Message):
    __slots__ = ["field", "resource_id"]
    FIELD_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    field: str
    resource_id: str
    def __init__(self, field: _Optional[str] = ..., resource_id: _Optional[str] = ...) -> None: ...

class ExtendRequest(_message.Message):
    __slots__ = ["ids", "namespace", "partition", "pools", "segment", "token", "ttl_ms"]
    IDS_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    POOLS_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    TTL_MS_FIELD_NUMBER: _ClassVar[int]
    ids: _containers.RepeatedScalarFieldContainer[str]
    namespace: str
    partition: str
    pools: _containers.RepeatedScalarFieldContainer[str]
    segment: Segment
    token: str
    ttl_ms: int
    def __init__(self, namespace: _Optional[str] = ..., partition: _Optional[str] = ..., ids: _Optional[_Iterable[str]] = ..., token: _Optional[str] = ..., ttl_ms: _Optional[int] = ..., segment: _Optional[_Union[Segment, _Mapping]] = ..., pools: _Optional[_Iterable[str]] = ...) -> None: ...

class ExtendResponse(_message.Message):
    __slots__ = ["ttl_ms"]
    TTL_MS_FIELD_NUMBER: _ClassVar[int]
    ttl_ms: int
    def __init__(self, ttl_ms: _Optional[int] = ...) -> None: ...

class GetCapacityRequest(_message.Message):
    __slots__ = ["namespace", "partition", "pools"]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    POOLS_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    partition: str
    pools: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, namespace: _Optional[str] = ..., partition: _Optional[str] = ..., pools: _Optional[_Iterable[str]] = ...) -> None: ...

class GetCapacityResponse(_message.Message):
    __slots__ = ["default_capacity", "pools"]
    DEFAULT_CAPACITY_FIELD_NUMBER: _ClassVar[int]
    POOLS_FIELD_NUMBER: _ClassVar[int]
    default_capacity: int
    pools: _containers.RepeatedCompositeFieldContainer[PoolCapacity]
    def __init__(self, pools: _Optional[_Iterable[_Union[PoolCapacity, _Mapping]]] = ..., default_capacity: _Optional[int] = ...) -> None: ...

class HealthRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class HealthResponse(_message.Message):
    __slots__ = ["connections", "draining", "in_flight", "library", "live", "postgres", "ready", "redis", "release_path", "script_path", "version"]
    CONNECTIONS_FIELD_NUMBER: _ClassVar[int]
    DRAINING_FIELD_NUMBER: _ClassVar[int]
    IN_FLIGHT_FIELD_NUMBER: _ClassVar[int]
    LIBRARY_FIELD_NUMBER: _ClassVar[int]
    LIVE_FIELD_NUMBER: _ClassVar[int]
    POSTGRES_FIELD_NUMBER: _ClassVar[int]
    READY_FIELD_NUMBER: _ClassVar[int]
    REDIS_FIELD_NUMBER: _ClassVar[int]
    RELEASE_PATH_FIELD_NUMBER: _ClassVar[int]
    SCRIPT_PATH_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    connections: int
    draining: bool
    in_flight: int
    library: str
    live: bool
    postgres: str
    ready: bool
    redis: str
    release_path: str
    script_path: str
    version: str
    def __init__(self, live: bool = ..., ready: bool = ..., version: _Optional[str] = ..., redis: _Optional[str] = ..., postgres: _Optional[str] = ..., script_path: _Optional[str] = ..., release_path: _Optional[str] = ..., library: _Optional[str] = ..., connections: _Optional[int] = ..., in_flight: _Optional[int] = ..., draining: bool = ...) -> None: ...

class HoldRequest(_message.Message):
    __slots__ = ["ids", "namespace", "partition", "segment", "session", "ttl_ms", "units", "wait_ms"]
    IDS_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    TTL_MS_FIELD_NUMBER: _ClassVar[int]
    UNITS_FIELD_NUMBER: _ClassVar[int]
    WAIT_MS_FIELD_NUMBER: _ClassVar[int]
    ids: _containers.RepeatedScalarFieldContainer[str]
    namespace: str
    partition: str
    segment: Segment
    session: bool
    ttl_ms: int
    units: _containers.RepeatedCompositeFieldContainer[PoolTake]
    wait_ms: int
    def __init__(self, namespace: _Optional[str] = ..., partition: _Optional[str] = ..., ids: _Optional[_Iterable[str]] = ..., ttl_ms: _Optional[int] = ..., segment: _Optional[_Union[Segment, _Mapping]] = ..., session: bool = ..., wait_ms: _Optional[int] = ..., units: _Optional[_Iterable[_Union[PoolTake, _Mapping]]] = ...) -> None: ...

class HoldResponse(_message.Message):
    __slots__ = ["fence", "token", "ttl_ms"]
    FENCE_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    TTL_MS_FIELD_NUMBER: _ClassVar[int]
    fence: int
    token: str
    ttl_ms: int
    def __init__(self, token: _Optional[str] = ..., fence: _Optional[int] = ..., ttl_ms: _Optional[int] = ...) -> None: ...

class MetricsRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class MetricsResponse(_message.Message):
    __slots__ = ["text"]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    text: str
    def __init__(self, text: _Optional[str] = ...) -> None: ...

class PoolCapacity(_message.Message):
    __slots__ = ["capacity", "partition_default", "pool", "sold"]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    PARTITION_DEFAULT_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    SOLD_FIELD_NUMBER: _ClassVar[int]
    capacity: int
    partition_default: bool
    pool: str
    sold: int
    def __init__(self, pool: _Optional[str] = ..., capacity: _Optional[int] = ..., sold: _Optional[int] = ..., partition_default: bool = ...) -> None: ...

class PoolStatus(_message.Message):
    __slots__ = ["capacity", "free", "held", "owned", "pool", "sold", "ttl_ms"]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    FREE_FIELD_NUMBER: _ClassVar[int]
    HELD_FIELD_NUMBER: _ClassVar[int]
    OWNED_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    SOLD_FIELD_NUMBER: _ClassVar[int]
    TTL_MS_FIELD_NUMBER: _ClassVar[int]
    capacity: int
    free: int
    held: int
    owned: int
    pool: str
    sold: int
    ttl_ms: int
    def __init__(self, pool: _Optional[str] = ..., capacity: _Optional[int] = ..., sold: _Optional[int] = ..., held: _Optional[int] = ..., free: _Optional[int] = ..., owned: _Optional[int] = ..., ttl_ms: _Optional[int] = ...) -> None: ...

class PoolTake(_message.Message):
    __slots__ = ["count", "pool"]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    count: int
    pool: str
    def __init__(self, pool: _Optional[str] = ..., count: _Optional[int] = ...) -> None: ...

class ReleaseRequest(_message.Message):
    __slots__ = ["ids", "namespace", "partition", "pools", "segment", "token"]
    IDS_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    POOLS_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    ids: _containers.RepeatedScalarFieldContainer[str]
    namespace: str
    partition: str
    pools: _containers.RepeatedScalarFieldContainer[str]
    segment: Segment
    token: str
    def __init__(self, namespace: _Optional[str] = ..., partition: _Optional[str] = ..., ids: _Optional[_Iterable[str]] = ..., token: _Optional[str] = ..., segment: _Optional[_Union[Segment, _Mapping]] = ..., pools: _Optional[_Iterable[str]] = ...) -> None: ...

class ReleaseResponse(_message.Message):
    __slots__ = ["released"]
    RELEASED_FIELD_NUMBER: _ClassVar[int]
    released: int
    def __init__(self, released: _Optional[int] = ...) -> None: ...

class Request(_message.Message):
    __slots__ = ["cancel", "confirm", "correlation_id", "extend", "get_capacity", "health", "hold", "id", "metrics", "release", "set_capacity", "status", "timeout_ms", "traceparent"]
    CANCEL_FIELD_NUMBER: _ClassVar[int]
    CONFIRM_FIELD_NUMBER: _ClassVar[int]
    CORRELATION_ID_FIELD_NUMBER: _ClassVar[int]
    EXTEND_FIELD_NUMBER: _ClassVar[int]
    GET_CAPACITY_FIELD_NUMBER: _ClassVar[int]
    HEALTH_FIELD_NUMBER: _ClassVar[int]
    HOLD_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    METRICS_FIELD_NUMBER: _ClassVar[int]
    RELEASE_FIELD_NUMBER: _ClassVar[int]
    SET_CAPACITY_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    TRACEPARENT_FIELD_NUMBER: _ClassVar[int]
    cancel: CancelRequest
    confirm: ConfirmRequest
    correlation_id: str
    extend: ExtendRequest
    get_capacity: GetCapacityRequest
    health: HealthRequest
    hold: HoldRequest
    id: int
    metrics: MetricsRequest
    release: ReleaseRequest
    set_capacity: SetCapacityRequest
    status: StatusRequest
    timeout_ms: int
    traceparent: str
    def __init__(self, id: _Optional[int] = ..., correlation_id: _Optional[str] = ..., timeout_ms: _Optional[int] = ..., traceparent: _Optional[str] = ..., hold: _Optional[_Union[HoldRequest, _Mapping]] = ..., extend: _Optional[_Union[ExtendRequest, _Mapping]] = ..., release: _Optional[_Union[ReleaseRequest, _Mapping]] = ..., confirm: _Optional[_Union[ConfirmRequest, _Mapping]] = ..., cancel: _Optional[_Union[CancelRequest, _Mapping]] = ..., status: _Optional[_Union[StatusRequest, _Mapping]] = ..., health: _Optional[_Union[HealthRequest, _Mapping]] = ..., metrics: _Optional[_Union[MetricsRequest, _Mapping]] = ..., set_capacity: _Optional[_Union[SetCapacityRequest, _Mapping]] = ..., get_capacity: _Optional[_Union[GetCapacityRequest, _Mapping]] = ...) -> None: ...

class ResourceStatus(_message.Message):
    __slots__ = ["id", "owned", "state", "ttl_ms"]
    ID_FIELD_NUMBER: _ClassVar[int]
    OWNED_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    TTL_MS_FIELD_NUMBER: _ClassVar[int]
    id: str
    owned: bool
    state: ResourceState
    ttl_ms: int
    def __init__(self, id: _Optional[str] = ..., state: _Optional[_Union[ResourceState, str]] = ..., ttl_ms: _Optional[int] = ..., owned: bool = ...) -> None: ...

class Response(_message.Message):
    __slots__ = ["cancel", "code", "confirm", "correlation_id", "degraded", "error", "extend", "get_capacity", "health", "hold", "id", "message", "metrics", "release", "session_event", "set_capacity", "status"]
    CANCEL_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    CONFIRM_FIELD_NUMBER: _ClassVar[int]
    CORRELATION_ID_FIELD_NUMBER: _ClassVar[int]
    DEGRADED_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    EXTEND_FIELD_NUMBER: _ClassVar[int]
    GET_CAPACITY_FIELD_NUMBER: _ClassVar[int]
    HEALTH_FIELD_NUMBER: _ClassVar[int]
    HOLD_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    METRICS_FIELD_NUMBER: _ClassVar[int]
    RELEASE_FIELD_NUMBER: _ClassVar[int]
    SESSION_EVENT_FIELD_NUMBER: _ClassVar[int]
    SET_CAPACITY_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    cancel: CancelResponse
    code: Code
    confirm: ConfirmResponse
    correlation_id: str
    degraded: bool
    error: ErrorDetail
    extend: ExtendResponse
    get_capacity: GetCapacityResponse
    health: HealthResponse
    hold: HoldResponse
    id: int
    message: str
    metrics: MetricsResponse
    release: ReleaseResponse
    session_event: SessionEvent
    set_capacity: SetCapacityResponse
    status: StatusResponse
    def __init__(self, id: _Optional[int] = ..., correlation_id: _Optional[str] = ..., code: _Optional[_Union[Code, str]] = ..., message: _Optional[str] = ..., degraded: bool = ..., error: _Optional[_Union[ErrorDetail, _Mapping]] = ..., hold: _Optional[_Union[HoldResponse, _Mapping]] = ..., extend: _Optional[_Union[ExtendResponse, _Mapping]] = ..., release: _Optional[_Union[ReleaseResponse, _Mapping]] = ..., confirm: _Optional[_Union[ConfirmResponse, _Mapping]] = ..., cancel: _Optional[_Union[CancelResponse, _Mapping]] = ..., status: _Optional[_Union[StatusResponse, _Mapping]] = ..., health: _Optional[_Union[HealthResponse, _Mapping]] = ..., metrics: _Optional[_Union[MetricsResponse, _Mapping]] = ..., set_capacity: _Optional[_Union[SetCapacityResponse, _Mapping]] = ..., get_capacity: _Optional[_Union[GetCapacityResponse, _Mapping]] = ..., session_event: _Optional[_Union[SessionEvent, _Mapping]] = ...) -> None: ...

class Segment(_message.Message):
    __slots__ = ["from_stop", "to_stop"]
    FROM_STOP_FIELD_NUMBER: _ClassVar[int]
    TO_STOP_FIELD_NUMBER: _ClassVar[int]
    from_stop: int
    to_stop: int
    def __init__(self, from_stop: _Optional[int] = ..., to_stop: _Optional[int] = ...) -> None: ...

class SessionEvent(_message.Message):
    __slots__ = ["lost"]
    LOST_FIELD_NUMBER: _ClassVar[int]
    lost: _containers.RepeatedCompositeFieldContainer[SessionHoldLost]
    def __init__(self, lost: _Optional[_Iterable[_Union[SessionHoldLost, _Mapping]]] = ...) -> None: ...

class SessionHoldLost(_message.Message):
    __slots__ = ["fence", "ids", "message", "namespace", "partition", "reason", "resource_id"]
    FENCE_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    fence: int
    ids: _containers.RepeatedScalarFieldContainer[str]
    message: str
    namespace: str
    partition: str
    reason: Code
    resource_id: str
    def __init__(self, namespace: _Optional[str] = ..., partition: _Optional[str] = ..., ids: _Optional[_Iterable[str]] = ..., fence: _Optional[int] = ..., reason: _Optional[_Union[Code, str]] = ..., resource_id: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class SetCapacityRequest(_message.Message):
    __slots__ = ["capacity", "namespace", "partition", "partition_default", "pool"]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PARTITION_DEFAULT_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    capacity: int
    namespace: str
    partition: str
    partition_default: bool
    pool: str
    def __init__(self, namespace: _Optional[str] = ..., partition: _Optional[str] = ..., pool: _Optional[str] = ..., capacity: _Optional[int] = ..., partition_default: bool = ...) -> None: ...

class SetCapacityResponse(_message.Message):
    __slots__ = ["pool"]
    POOL_FIELD_NUMBER: _ClassVar[int]
    pool: PoolCapacity
    def __init__(self, pool: _Optional[_Union[PoolCapacity, _Mapping]] = ...) -> None: ...

class StatusRequest(_message.Message):
    __slots__ = ["ids", "namespace", "partition", "pools", "segment", "token"]
    IDS_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    POOLS_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    ids: _containers.RepeatedScalarFieldContainer[str]
    namespace: str
    partition: str
    pools: _containers.RepeatedScalarFieldContainer[str]
    segment: Segment
    token: str
    def __init__(self, namespace: _Optional[str] = ..., partition: _Optional[str] = ..., ids: _Optional[_Iterable[str]] = ..., token: _Optional[str] = ..., segment: _Optional[_Union[Segment, _Mapping]] = ..., pools: _Optional[_Iterable[str]] = ...) -> None: ...

class StatusResponse(_message.Message):
    __slots__ = ["pools", "resources"]
    POOLS_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    pools: _containers.RepeatedCompositeFieldContainer[PoolStatus]
    resources: _containers.RepeatedCompositeFieldContainer[ResourceStatus]
    def __init__(self, resources: _Optional[_Iterable[_Union[ResourceStatus, _Mapping]]] = ..., pools: _Optional[_Iterable[_Union[PoolStatus, _Mapping]]] = ...) -> None: ...

class Code(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class ResourceState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
