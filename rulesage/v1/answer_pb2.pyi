from rulesage.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Verdict(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    VERDICT_UNSPECIFIED: _ClassVar[Verdict]
    ANSWERED: _ClassVar[Verdict]
    NOT_IN_BOOK: _ClassVar[Verdict]
    UNAVAILABLE: _ClassVar[Verdict]
VERDICT_UNSPECIFIED: Verdict
ANSWERED: Verdict
NOT_IN_BOOK: Verdict
UNAVAILABLE: Verdict

class AnswerRequest(_message.Message):
    __slots__ = ("question", "game", "passages", "priors", "cards")
    QUESTION_FIELD_NUMBER: _ClassVar[int]
    GAME_FIELD_NUMBER: _ClassVar[int]
    PASSAGES_FIELD_NUMBER: _ClassVar[int]
    PRIORS_FIELD_NUMBER: _ClassVar[int]
    CARDS_FIELD_NUMBER: _ClassVar[int]
    question: str
    game: str
    passages: _containers.RepeatedCompositeFieldContainer[_common_pb2.Passage]
    priors: _containers.RepeatedCompositeFieldContainer[PriorRuling]
    cards: _containers.RepeatedCompositeFieldContainer[_common_pb2.NamedCard]
    def __init__(self, question: _Optional[str] = ..., game: _Optional[str] = ..., passages: _Optional[_Iterable[_Union[_common_pb2.Passage, _Mapping]]] = ..., priors: _Optional[_Iterable[_Union[PriorRuling, _Mapping]]] = ..., cards: _Optional[_Iterable[_Union[_common_pb2.NamedCard, _Mapping]]] = ...) -> None: ...

class PriorRuling(_message.Message):
    __slots__ = ("question", "answer", "score", "id")
    QUESTION_FIELD_NUMBER: _ClassVar[int]
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    question: str
    answer: str
    score: float
    id: str
    def __init__(self, question: _Optional[str] = ..., answer: _Optional[str] = ..., score: _Optional[float] = ..., id: _Optional[str] = ...) -> None: ...

class Citation(_message.Message):
    __slots__ = ("passage_id", "quote", "start", "end", "page", "doc_key", "doc_title", "doc_version", "rule_id")
    PASSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    QUOTE_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    PAGE_FIELD_NUMBER: _ClassVar[int]
    DOC_KEY_FIELD_NUMBER: _ClassVar[int]
    DOC_TITLE_FIELD_NUMBER: _ClassVar[int]
    DOC_VERSION_FIELD_NUMBER: _ClassVar[int]
    RULE_ID_FIELD_NUMBER: _ClassVar[int]
    passage_id: int
    quote: str
    start: int
    end: int
    page: int
    doc_key: str
    doc_title: str
    doc_version: str
    rule_id: str
    def __init__(self, passage_id: _Optional[int] = ..., quote: _Optional[str] = ..., start: _Optional[int] = ..., end: _Optional[int] = ..., page: _Optional[int] = ..., doc_key: _Optional[str] = ..., doc_title: _Optional[str] = ..., doc_version: _Optional[str] = ..., rule_id: _Optional[str] = ...) -> None: ...

class AnswerResult(_message.Message):
    __slots__ = ("verdict", "answer", "citations", "model", "attempts", "rejections", "confidence", "timings", "threshold", "threshold_source")
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    CITATIONS_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    REJECTIONS_FIELD_NUMBER: _ClassVar[int]
    CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    TIMINGS_FIELD_NUMBER: _ClassVar[int]
    THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    THRESHOLD_SOURCE_FIELD_NUMBER: _ClassVar[int]
    verdict: Verdict
    answer: str
    citations: _containers.RepeatedCompositeFieldContainer[Citation]
    model: str
    attempts: int
    rejections: _containers.RepeatedScalarFieldContainer[str]
    confidence: float
    timings: _containers.RepeatedCompositeFieldContainer[_common_pb2.StageTiming]
    threshold: float
    threshold_source: str
    def __init__(self, verdict: _Optional[_Union[Verdict, str]] = ..., answer: _Optional[str] = ..., citations: _Optional[_Iterable[_Union[Citation, _Mapping]]] = ..., model: _Optional[str] = ..., attempts: _Optional[int] = ..., rejections: _Optional[_Iterable[str]] = ..., confidence: _Optional[float] = ..., timings: _Optional[_Iterable[_Union[_common_pb2.StageTiming, _Mapping]]] = ..., threshold: _Optional[float] = ..., threshold_source: _Optional[str] = ...) -> None: ...
