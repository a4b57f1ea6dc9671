from rulesage.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Vector(_message.Message):
    __slots__ = ("lane", "text", "values")
    LANE_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    lane: str
    text: str
    values: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, lane: _Optional[str] = ..., text: _Optional[str] = ..., values: _Optional[_Iterable[float]] = ...) -> None: ...

class EmbedRequest(_message.Message):
    __slots__ = ("question", "game", "cards_text")
    QUESTION_FIELD_NUMBER: _ClassVar[int]
    GAME_FIELD_NUMBER: _ClassVar[int]
    CARDS_TEXT_FIELD_NUMBER: _ClassVar[int]
    question: str
    game: str
    cards_text: str
    def __init__(self, question: _Optional[str] = ..., game: _Optional[str] = ..., cards_text: _Optional[str] = ...) -> None: ...

class AliasMatch(_message.Message):
    __slots__ = ("alias", "term", "evidence")
    ALIAS_FIELD_NUMBER: _ClassVar[int]
    TERM_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_FIELD_NUMBER: _ClassVar[int]
    alias: str
    term: str
    evidence: str
    def __init__(self, alias: _Optional[str] = ..., term: _Optional[str] = ..., evidence: _Optional[str] = ...) -> None: ...

class EmbedResult(_message.Message):
    __slots__ = ("vectors", "aliases", "model", "timings")
    VECTORS_FIELD_NUMBER: _ClassVar[int]
    ALIASES_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    TIMINGS_FIELD_NUMBER: _ClassVar[int]
    vectors: _containers.RepeatedCompositeFieldContainer[Vector]
    aliases: _containers.RepeatedCompositeFieldContainer[AliasMatch]
    model: str
    timings: _containers.RepeatedCompositeFieldContainer[_common_pb2.StageTiming]
    def __init__(self, vectors: _Optional[_Iterable[_Union[Vector, _Mapping]]] = ..., aliases: _Optional[_Iterable[_Union[AliasMatch, _Mapping]]] = ..., model: _Optional[str] = ..., timings: _Optional[_Iterable[_Union[_common_pb2.StageTiming, _Mapping]]] = ...) -> None: ...

class ArmRequest(_message.Message):
    __slots__ = ("question", "game", "vectors", "limit", "cards_text", "card_ids")
    QUESTION_FIELD_NUMBER: _ClassVar[int]
    GAME_FIELD_NUMBER: _ClassVar[int]
    VECTORS_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    CARDS_TEXT_FIELD_NUMBER: _ClassVar[int]
    CARD_IDS_FIELD_NUMBER: _ClassVar[int]
    question: str
    game: str
    vectors: _containers.RepeatedCompositeFieldContainer[Vector]
    limit: int
    cards_text: str
    card_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, question: _Optional[str] = ..., game: _Optional[str] = ..., vectors: _Optional[_Iterable[_Union[Vector, _Mapping]]] = ..., limit: _Optional[int] = ..., cards_text: _Optional[str] = ..., card_ids: _Optional[_Iterable[int]] = ...) -> None: ...

class ArmHit(_message.Message):
    __slots__ = ("passage_id", "rank", "score", "lane")
    PASSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    LANE_FIELD_NUMBER: _ClassVar[int]
    passage_id: int
    rank: int
    score: float
    lane: str
    def __init__(self, passage_id: _Optional[int] = ..., rank: _Optional[int] = ..., score: _Optional[float] = ..., lane: _Optional[str] = ...) -> None: ...

class ArmResult(_message.Message):
    __slots__ = ("arm", "hits", "lanes", "timings", "note", "category")
    ARM_FIELD_NUMBER: _ClassVar[int]
    HITS_FIELD_NUMBER: _ClassVar[int]
    LANES_FIELD_NUMBER: _ClassVar[int]
    TIMINGS_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    CATEGORY_FIELD_NUMBER: _ClassVar[int]
    arm: str
    hits: _containers.RepeatedCompositeFieldContainer[ArmHit]
    lanes: _containers.RepeatedScalarFieldContainer[str]
    timings: _containers.RepeatedCompositeFieldContainer[_common_pb2.StageTiming]
    note: str
    category: Category
    def __init__(self, arm: _Optional[str] = ..., hits: _Optional[_Iterable[_Union[ArmHit, _Mapping]]] = ..., lanes: _Optional[_Iterable[str]] = ..., timings: _Optional[_Iterable[_Union[_common_pb2.StageTiming, _Mapping]]] = ..., note: _Optional[str] = ..., category: _Optional[_Union[Category, _Mapping]] = ...) -> None: ...

class Category(_message.Message):
    __slots__ = ("name", "confidence", "threshold", "sections", "runner_up", "runner_up_confidence", "best")
    NAME_FIELD_NUMBER: _ClassVar[int]
    CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    SECTIONS_FIELD_NUMBER: _ClassVar[int]
    RUNNER_UP_FIELD_NUMBER: _ClassVar[int]
    RUNNER_UP_CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    BEST_FIELD_NUMBER: _ClassVar[int]
    name: str
    confidence: float
    threshold: float
    sections: _containers.RepeatedScalarFieldContainer[str]
    runner_up: str
    runner_up_confidence: float
    best: str
    def __init__(self, name: _Optional[str] = ..., confidence: _Optional[float] = ..., threshold: _Optional[float] = ..., sections: _Optional[_Iterable[str]] = ..., runner_up: _Optional[str] = ..., runner_up_confidence: _Optional[float] = ..., best: _Optional[str] = ...) -> None: ...
