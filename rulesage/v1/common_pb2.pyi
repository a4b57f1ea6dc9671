from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class StageState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    STAGE_STATE_UNSPECIFIED: _ClassVar[StageState]
    STAGE_STATE_OK: _ClassVar[StageState]
    STAGE_STATE_FAILED: _ClassVar[StageState]
    STAGE_STATE_TIMEOUT: _ClassVar[StageState]
    STAGE_STATE_SKIPPED: _ClassVar[StageState]
    STAGE_STATE_DOWN: _ClassVar[StageState]
    STAGE_STATE_OVERLOADED: _ClassVar[StageState]
STAGE_STATE_UNSPECIFIED: StageState
STAGE_STATE_OK: StageState
STAGE_STATE_FAILED: StageState
STAGE_STATE_TIMEOUT: StageState
STAGE_STATE_SKIPPED: StageState
STAGE_STATE_DOWN: StageState
STAGE_STATE_OVERLOADED: StageState

class StageTiming(_message.Message):
    __slots__ = ("stage", "ms")
    STAGE_FIELD_NUMBER: _ClassVar[int]
    MS_FIELD_NUMBER: _ClassVar[int]
    stage: str
    ms: float
    def __init__(self, stage: _Optional[str] = ..., ms: _Optional[float] = ...) -> None: ...

class ArmRank(_message.Message):
    __slots__ = ("arm", "rank", "score")
    ARM_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    arm: str
    rank: int
    score: float
    def __init__(self, arm: _Optional[str] = ..., rank: _Optional[int] = ..., score: _Optional[float] = ...) -> None: ...

class Passage(_message.Message):
    __slots__ = ("id", "text", "doc_key", "doc_title", "doc_kind", "doc_version", "game", "page_start", "page_end", "heading_path", "rule_id", "section_id", "fused_score", "ranks", "rerank_score", "has_rerank_score", "amends")
    ID_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    DOC_KEY_FIELD_NUMBER: _ClassVar[int]
    DOC_TITLE_FIELD_NUMBER: _ClassVar[int]
    DOC_KIND_FIELD_NUMBER: _ClassVar[int]
    DOC_VERSION_FIELD_NUMBER: _ClassVar[int]
    GAME_FIELD_NUMBER: _ClassVar[int]
    PAGE_START_FIELD_NUMBER: _ClassVar[int]
    PAGE_END_FIELD_NUMBER: _ClassVar[int]
    HEADING_PATH_FIELD_NUMBER: _ClassVar[int]
    RULE_ID_FIELD_NUMBER: _ClassVar[int]
    SECTION_ID_FIELD_NUMBER: _ClassVar[int]
    FUSED_SCORE_FIELD_NUMBER: _ClassVar[int]
    RANKS_FIELD_NUMBER: _ClassVar[int]
    RERANK_SCORE_FIELD_NUMBER: _ClassVar[int]
    HAS_RERANK_SCORE_FIELD_NUMBER: _ClassVar[int]
    AMENDS_FIELD_NUMBER: _ClassVar[int]
    id: int
    text: str
    doc_key: str
    doc_title: str
    doc_kind: str
    doc_version: str
    game: str
    page_start: int
    page_end: int
    heading_path: _containers.RepeatedScalarFieldContainer[str]
    rule_id: str
    section_id: int
    fused_score: float
    ranks: _containers.RepeatedCompositeFieldContainer[ArmRank]
    rerank_score: float
    has_rerank_score: bool
    amends: str
    def __init__(self, id: _Optional[int] = ..., text: _Optional[str] = ..., doc_key: _Optional[str] = ..., doc_title: _Optional[str] = ..., doc_kind: _Optional[str] = ..., doc_version: _Optional[str] = ..., game: _Optional[str] = ..., page_start: _Optional[int] = ..., page_end: _Optional[int] = ..., heading_path: _Optional[_Iterable[str]] = ..., rule_id: _Optional[str] = ..., section_id: _Optional[int] = ..., fused_score: _Optional[float] = ..., ranks: _Optional[_Iterable[_Union[ArmRank, _Mapping]]] = ..., rerank_score: _Optional[float] = ..., has_rerank_score: _Optional[bool] = ..., amends: _Optional[str] = ...) -> None: ...

class NamedCard(_message.Message):
    __slots__ = ("name", "written", "how", "type_line", "mana_cost", "oracle", "pt", "loyalty", "other_face", "rulings", "searched")
    NAME_FIELD_NUMBER: _ClassVar[int]
    WRITTEN_FIELD_NUMBER: _ClassVar[int]
    HOW_FIELD_NUMBER: _ClassVar[int]
    TYPE_LINE_FIELD_NUMBER: _ClassVar[int]
    MANA_COST_FIELD_NUMBER: _ClassVar[int]
    ORACLE_FIELD_NUMBER: _ClassVar[int]
    PT_FIELD_NUMBER: _ClassVar[int]
    LOYALTY_FIELD_NUMBER: _ClassVar[int]
    OTHER_FACE_FIELD_NUMBER: _ClassVar[int]
    RULINGS_FIELD_NUMBER: _ClassVar[int]
    SEARCHED_FIELD_NUMBER: _ClassVar[int]
    name: str
    written: str
    how: str
    type_line: str
    mana_cost: str
    oracle: str
    pt: str
    loyalty: str
    other_face: str
    rulings: _containers.RepeatedScalarFieldContainer[str]
    searched: bool
    def __init__(self, name: _Optional[str] = ..., written: _Optional[str] = ..., how: _Optional[str] = ..., type_line: _Optional[str] = ..., mana_cost: _Optional[str] = ..., oracle: _Optional[str] = ..., pt: _Optional[str] = ..., loyalty: _Optional[str] = ..., other_face: _Optional[str] = ..., rulings: _Optional[_Iterable[str]] = ..., searched: _Optional[bool] = ...) -> None: ...
