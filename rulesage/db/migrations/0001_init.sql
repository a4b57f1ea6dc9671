-- RuleSage data model (see docs/ARCHITECTURE.md). Applied once, inside a transaction, by `rulesage migrate`.
CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- The shelf ----------------------------------------------------------------------------------------------
CREATE TABLE families (
    id          serial PRIMARY KEY,
    slug        text NOT NULL UNIQUE
);

CREATE TABLE games (
    id          serial PRIMARY KEY,
    slug        text NOT NULL UNIQUE,
    name        text NOT NULL,
    family_id   int  NOT NULL REFERENCES families(id)
);
CREATE INDEX games_name_trgm ON games USING gin (name gin_trgm_ops);

-- Which model drew the vectors. Exactly one row is active; passages embedded by another space are re-embedded.
CREATE TABLE embedding_space (
    id              serial PRIMARY KEY,
    model           text NOT NULL UNIQUE,     -- identity: name + weights sha256 + runtime variant
    dim             int  NOT NULL,
    query_prefix    text NOT NULL DEFAULT '',
    passage_prefix  text NOT NULL DEFAULT '',
    max_tokens      int  NOT NULL,
    active          boolean NOT NULL DEFAULT false,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX embedding_space_one_active ON embedding_space (active) WHERE active;

-- One row per document key: the current release. Older releases are logged in document_releases.
CREATE TABLE documents (
    id          serial PRIMARY KEY,
    key         text NOT NULL UNIQUE,
    version     text NOT NULL DEFAULT '',
    title       text NOT NULL,
    kind        text NOT NULL CHECK (kind IN ('rulebook', 'expansion', 'errata', 'faq', 'reference')),
    game_id     int  REFERENCES games(id),          -- NULL for a family-level document
    family_id   int  NOT NULL REFERENCES families(id),
    amends      text,                               -- key of the book an errata/faq document corrects
    path        text NOT NULL,
    licence     text NOT NULL DEFAULT '',
    sha256      text NOT NULL,                      -- of the source file of the current release
    pages       int  NOT NULL DEFAULT 0,
    ingested_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX documents_family ON documents (family_id);

CREATE TABLE document_releases (
    id               serial PRIMARY KEY,
    document_id      int NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    version          text NOT NULL,
    sha256           text NOT NULL,
    passages_kept    int NOT NULL DEFAULT 0,
    passages_added   int NOT NULL DEFAULT 0,
    passages_retired int NOT NULL DEFAULT 0,
    ingested_at      timestamptz NOT NULL DEFAULT now()
);

-- A document that failed to ingest, with its reason (the rest of the shelf continues).
CREATE TABLE ingest_failures (
    id          serial PRIMARY KEY,
    key         text NOT NULL,
    path        text NOT NULL,
    error       text NOT NULL,
    failed_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE pages (
    document_id int  NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    page_no     int  NOT NULL,                      -- 1-based page of the source file
    text        text NOT NULL,
    method      text NOT NULL,                      -- 'pdf-text', 'pdf-ocr', 'form-feed', 'markup', 'plain'
    PRIMARY KEY (document_id, page_no)
);

-- Coarse sections: one topic, the "read big" unit.
CREATE TABLE sections (
    id           bigserial PRIMARY KEY,
    document_id  int  NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    ord          int  NOT NULL,
    heading_path text[] NOT NULL DEFAULT '{}',
    text         text NOT NULL,
    page_start   int,
    page_end     int,
    retired_at   timestamptz
);
CREATE INDEX sections_document ON sections (document_id, ord);

-- Passages: the search and citation unit.
CREATE TABLE passages (
    id            bigserial PRIMARY KEY,
    document_id   int  NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    family_id     int  NOT NULL REFERENCES families(id),
    section_id    bigint REFERENCES sections(id),
    ord           int  NOT NULL,
    kind          text NOT NULL DEFAULT 'prose' CHECK (kind IN ('prose', 'table', 'rule', 'leaf', 'glossary')),
    heading_path  text[] NOT NULL DEFAULT '{}',
    text          text NOT NULL,
    content_hash  text NOT NULL,                    -- sha256 of text: a release keeps unchanged passages
    page_start    int,
    page_end      int,
    rule_id       text,                             -- '702.19' (rule row) or '702.19b' (leaf row)
    parent_rule   text,                             -- leaf rows: the rule they belong to
    searchable    boolean NOT NULL DEFAULT true,    -- false for leaf rows (citation unit only)
    tsv           tsvector NOT NULL,
    doc_len       int NOT NULL,                     -- lexemes with repetition, for BM25 length normalisation
    embedding     vector(384),
    space_id      int REFERENCES embedding_space(id),
    superseded    boolean NOT NULL DEFAULT false,   -- hidden from every arm while an errata replaces its wording
    retired_at    timestamptz,                      -- removed by a later release; kept for old rulings
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX passages_document ON passages (document_id, ord);
CREATE INDEX passages_live ON passages (family_id) WHERE NOT superseded AND retired_at IS NULL AND searchable;
CREATE INDEX passages_hash ON passages (document_id, content_hash);
CREATE INDEX passages_rule ON passages (document_id, rule_id);
CREATE INDEX passages_tsv ON passages USING gin (tsv);
CREATE INDEX passages_embedding ON passages USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64);

-- BM25 postings derived from each passage's tsvector: one row per (passage, lexeme) with its term frequency.
CREATE TABLE postings (
    family_id   int    NOT NULL,
    lexeme      text   NOT NULL,
    passage_id  bigint NOT NULL REFERENCES passages(id) ON DELETE CASCADE,
    tf          int    NOT NULL,
    PRIMARY KEY (family_id, lexeme, passage_id)
);
CREATE INDEX postings_passage ON postings (passage_id);

-- Errata links: which passage's wording an errata/faq passage replaces, and how the link was found.
CREATE TABLE supersessions (
    old_passage_id  bigint NOT NULL REFERENCES passages(id) ON DELETE CASCADE,
    new_passage_id  bigint NOT NULL REFERENCES passages(id) ON DELETE CASCADE,
    method          text NOT NULL,                  -- 'rule-number', 'section-name', 'page-reference', 'vector'
    evidence        text NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (old_passage_id, new_passage_id)
);

-- Player word -> book term, each justified by a verbatim quote from a passage.
CREATE TABLE aliases (
    id          serial PRIMARY KEY,
    family_id   int  NOT NULL REFERENCES families(id),
    alias       text NOT NULL,
    term        text NOT NULL,
    evidence    text NOT NULL,
    passage_id  bigint NOT NULL REFERENCES passages(id) ON DELETE CASCADE,
    source      text NOT NULL,                      -- 'definition', 'see', 'glossary'
    UNIQUE (family_id, alias, term)
);

-- Rulings -------------------------------------------------------------------------------------------------
CREATE TABLE rulings (
    id             text PRIMARY KEY,                -- permalink id
    game_id        int  NOT NULL REFERENCES games(id),
    question       text NOT NULL,
    answer         text NOT NULL,
    verdict        text NOT NULL CHECK (verdict IN ('answered', 'not_in_book', 'unavailable')),
    citations      jsonb NOT NULL DEFAULT '[]',
    passages       jsonb NOT NULL DEFAULT '[]',
    wrench         jsonb NOT NULL DEFAULT '{}',
    models         jsonb NOT NULL DEFAULT '{}',
    trace_id       text NOT NULL DEFAULT '',
    public_state   text NOT NULL DEFAULT 'pending' CHECK (public_state IN ('pending', 'held', 'cleared')),
    public_reason  text NOT NULL DEFAULT '',
    created_at     timestamptz NOT NULL DEFAULT now(),
    reviewed_at    timestamptz
);
CREATE INDEX rulings_wall ON rulings (created_at DESC) WHERE public_state = 'cleared';
CREATE INDEX rulings_queue ON rulings (created_at) WHERE public_state IN ('pending', 'held');

CREATE TABLE ratings (
    id          bigserial PRIMARY KEY,
    ruling_id   text NOT NULL REFERENCES rulings(id) ON DELETE CASCADE,
    score       smallint NOT NULL CHECK (score BETWEEN 1 AND 3),
    client      text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ratings_ruling ON ratings (ruling_id);
