from rulesage.v1 import arm_pb2 as _arm_pb2
from rulesage.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class FuseRequest(_message.Message):
    __slots__ = ("question", "game", "limit")
    QUESTION_FIELD_NUMBER: _ClassVar[int]
    GAME_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    question: str
    game: str
    limit: int
    def __init__(self, question: _Optional[str] = ..., game: _Optional[str] = ..., limit: _Optional[int] = ...) -> None: ...

class ArmStatus(_message.Message):
    __slots__ = ("arm", "state", "detail", "hits", "ms", "category")
    ARM_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    HITS_FIELD_NUMBER: _ClassVar[int]
    MS_FIELD_NUMBER: _ClassVar[int]
    CATEGORY_FIELD_NUMBER: _ClassVar[int]
    arm: str
    state: _common_pb2.StageState
    detail: str
    hits: int
    ms: float
    category: _arm_pb2.Category
    def __init__(self, arm: _Optional[str] = ..., state: _Optional[_Union[_common_pb2.StageState, str]] = ..., detail: _Optional[str] = ..., hits: _Optional[int] = ..., ms: _Optional[float] = ..., category: _Optional[_Union[_arm_pb2.Category, _Mapping]] = ...) -> None: ...

class FuseResult(_message.Message):
    __slots__ = ("passages", "voted", "k", "ceiling", "arms", "timings", "aliases", "embed_model", "question_vector", "cards")
    PASSAGES_FIELD_NUMBER: _ClassVar[int]
    VOTED_FIELD_NUMBER: _ClassVar[int]
    K_FIELD_NUMBER: _ClassVar[int]
    CEILING_FIELD_NUMBER: _ClassVar[int]
    ARMS_FIELD_NUMBER: _ClassVar[int]
    TIMINGS_FIELD_NUMBER: _ClassVar[int]
    ALIASES_FIELD_NUMBER: _ClassVar[int]
    EMBED_MODEL_FIELD_NUMBER: _ClassVar[int]
    QUESTION_VECTOR_FIELD_NUMBER: _ClassVar[int]
    CARDS_FIELD_NUMBER: _ClassVar[int]
    passages: _containers.RepeatedCompositeFieldContainer[_common_pb2.Passage]
    voted: _containers.RepeatedScalarFieldContainer[str]
    k: int
    ceiling: float
    arms: _containers.RepeatedCompositeFieldContainer[ArmStatus]
    timings: _containers.RepeatedCompositeFieldContainer[_common_pb2.StageTiming]
    aliases: _containers.RepeatedScalarFieldContainer[str]
    embed_model: str
    question_vector: _containers.RepeatedScalarFieldContainer[float]
    cards: _containers.RepeatedCompositeFieldContainer[_common_pb2.NamedCard]
    def __init__(self, passages: _Optional[_Iterable[_Union[_common_pb2.Passage, _Mapping]]] = ..., voted: _Optional[_Iterable[str]] = ..., k: _Optional[int] = ..., ceiling: _Optional[float] = ..., arms: _Optional[_Iterable[_Union[ArmStatus, _Mapping]]] = ..., timings: _Optional[_Iterable[_Union[_common_pb2.StageTiming, _Mapping]]] = ..., aliases: _Optional[_Iterable[str]] = ..., embed_model: _Optional[str] = ..., question_vector: _Optional[_Iterable[float]] = ..., cards: _Optional[_Iterable[_Union[_common_pb2.NamedCard, _Mapping]]] = ...) -> None: ...
