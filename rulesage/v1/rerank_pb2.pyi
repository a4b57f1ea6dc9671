from rulesage.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RerankRequest(_message.Message):
    __slots__ = ("question", "game", "candidates", "keep")
    QUESTION_FIELD_NUMBER: _ClassVar[int]
    GAME_FIELD_NUMBER: _ClassVar[int]
    CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    KEEP_FIELD_NUMBER: _ClassVar[int]
    question: str
    game: str
    candidates: _containers.RepeatedCompositeFieldContainer[_common_pb2.Passage]
    keep: int
    def __init__(self, question: _Optional[str] = ..., game: _Optional[str] = ..., candidates: _Optional[_Iterable[_Union[_common_pb2.Passage, _Mapping]]] = ..., keep: _Optional[int] = ...) -> None: ...

class RerankResult(_message.Message):
    __slots__ = ("passages", "scores", "guarantees_fired", "model", "timings")
    PASSAGES_FIELD_NUMBER: _ClassVar[int]
    SCORES_FIELD_NUMBER: _ClassVar[int]
    GUARANTEES_FIRED_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    TIMINGS_FIELD_NUMBER: _ClassVar[int]
    passages: _containers.RepeatedCompositeFieldContainer[_common_pb2.Passage]
    scores: _containers.RepeatedScalarFieldContainer[float]
    guarantees_fired: _containers.RepeatedScalarFieldContainer[str]
    model: str
    timings: _containers.RepeatedCompositeFieldContainer[_common_pb2.StageTiming]
    def __init__(self, passages: _Optional[_Iterable[_Union[_common_pb2.Passage, _Mapping]]] = ..., scores: _Optional[_Iterable[float]] = ..., guarantees_fired: _Optional[_Iterable[str]] = ..., model: _Optional[str] = ..., timings: _Optional[_Iterable[_Union[_common_pb2.StageTiming, _Mapping]]] = ...) -> None: ...
