-- The card table (rulesage.ingest.cards): a game's cards, the names a question may call them by, and their
-- official rulings. Loaded by the ingest from the table the shelf names on the game (`cards = ...`); read by
-- fusion (which cards a question names) and the gateway (the ruling page, /api/cards).

-- One loaded table per game: which file and its sha256 (an unchanged file is not read again).
CREATE TABLE card_tables (
    game_id    int PRIMARY KEY REFERENCES games(id) ON DELETE CASCADE,
    source     text NOT NULL,
    sha256     text NOT NULL,
    cards      int  NOT NULL,
    rulings    int  NOT NULL,
    loaded_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE cards (
    id          bigserial PRIMARY KEY,
    game_id     int  NOT NULL REFERENCES games(id) ON DELETE CASCADE,
    name        text NOT NULL,
    name_key    text NOT NULL,            -- rulesage.core.cards.name_key(name): what fuzzy search compares
    type_line   text NOT NULL DEFAULT '',
    mana_cost   text NOT NULL DEFAULT '',
    oracle      text NOT NULL DEFAULT '',
    pt          text NOT NULL DEFAULT '',
    loyalty     text NOT NULL DEFAULT '',
    other_face  text NOT NULL DEFAULT '',
    digest      text NOT NULL,            -- sha256 of the card's line: an unchanged card is not rewritten
    UNIQUE (game_id, name)
);
CREATE INDEX cards_name_key_trgm ON cards USING gin (name_key gin_trgm_ops);

-- Every name a question may use for a card: its own, its other face's, the short name of a legendary card
-- ("Avacyn"), a reviewed nickname ("Goyf"). `plain` says how the matcher must find it written
-- (rulesage.core.cards.CardName.plain).
CREATE TABLE card_names (
    game_id   int    NOT NULL REFERENCES games(id) ON DELETE CASCADE,
    key       text   NOT NULL,
    card_id   bigint NOT NULL REFERENCES cards(id) ON DELETE CASCADE,
    kind      text   NOT NULL CHECK (kind IN ('name', 'face', 'short', 'nickname')),
    plain     boolean NOT NULL DEFAULT false,
    PRIMARY KEY (game_id, key, card_id)
);
CREATE INDEX card_names_card ON card_names (card_id);

CREATE TABLE card_rulings (
    card_id  bigint NOT NULL REFERENCES cards(id) ON DELETE CASCADE,
    ord      int    NOT NULL,
    text     text   NOT NULL,
    PRIMARY KEY (card_id, ord)
);
