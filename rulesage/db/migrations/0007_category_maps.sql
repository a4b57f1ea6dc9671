-- Category maps (rulesage.core.categories): per game, question categories mapped to the book's own sections.
-- Loaded by the ingest from the map named in shelf.toml; read by the category arm (services/category).

-- One loaded map per game: which file, its sha256 and the embedding space its example vectors are drawn in
-- (an unchanged file in the active space is not re-embedded).
CREATE TABLE category_maps (
    game_id    int PRIMARY KEY REFERENCES games(id) ON DELETE CASCADE,
    source     text NOT NULL,
    sha256     text NOT NULL,
    space_id   int REFERENCES embedding_space(id),
    loaded_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE categories (
    id           serial PRIMARY KEY,
    game_id      int  NOT NULL REFERENCES games(id) ON DELETE CASCADE,
    name         text NOT NULL,
    description  text NOT NULL,
    sections     text[] NOT NULL DEFAULT '{}',   -- heading paths, ' > '-joined
    rules        text[] NOT NULL DEFAULT '{}',   -- rule-number prefixes
    UNIQUE (game_id, name)
);

-- What the classifier reads: the description (ord 0), each authored example and each learned example (a
-- training question answered inside the category's sections), with its sentence vector.
CREATE TABLE category_texts (
    category_id  int NOT NULL REFERENCES categories(id) ON DELETE CASCADE,
    ord          int NOT NULL,
    kind         text NOT NULL CHECK (kind IN ('description', 'example', 'learned')),
    text         text NOT NULL,
    embedding    vector(384) NOT NULL,
    PRIMARY KEY (category_id, ord)
);

-- The passages each category's sections select, resolved at ingest (again after every ingest, so a new
-- release of a book is mapped as soon as it is stored). Readers join live_passages: a retired or
-- superseded passage drops out without a refresh.
CREATE TABLE category_passages (
    category_id  int    NOT NULL REFERENCES categories(id) ON DELETE CASCADE,
    passage_id   bigint NOT NULL REFERENCES passages(id) ON DELETE CASCADE,
    PRIMARY KEY (category_id, passage_id)
);
CREATE INDEX category_passages_passage ON category_passages (passage_id);
