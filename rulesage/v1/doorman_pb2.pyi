from rulesage.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Decision(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DECISION_UNSPECIFIED: _ClassVar[Decision]
    CLEAR: _ClassVar[Decision]
    HOLD: _ClassVar[Decision]
DECISION_UNSPECIFIED: Decision
CLEAR: Decision
HOLD: Decision

class ScreenRequest(_message.Message):
    __slots__ = ("text",)
    TEXT_FIELD_NUMBER: _ClassVar[int]
    text: str
    def __init__(self, text: _Optional[str] = ...) -> None: ...

class ScreenResult(_message.Message):
    __slots__ = ("decision", "reason", "checks", "timings", "holder")
    DECISION_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    CHECKS_FIELD_NUMBER: _ClassVar[int]
    TIMINGS_FIELD_NUMBER: _ClassVar[int]
    HOLDER_FIELD_NUMBER: _ClassVar[int]
    decision: Decision
    reason: str
    checks: _containers.RepeatedScalarFieldContainer[str]
    timings: _containers.RepeatedCompositeFieldContainer[_common_pb2.StageTiming]
    holder: str
    def __init__(self, decision: _Optional[_Union[Decision, str]] = ..., reason: _Optional[str] = ..., checks: _Optional[_Iterable[str]] = ..., timings: _Optional[_Iterable[_Union[_common_pb2.StageTiming, _Mapping]]] = ..., holder: _Optional[str] = ...) -> None: ...
