-- The careful reader's encoder states of each passage's window, drawn at ingest (index time) so that a rerank
-- only encodes the question and runs the head. int8 values with a float32 scale per token (services/rerank/states.py).
CREATE TABLE window_states (
    passage_id  bigint PRIMARY KEY REFERENCES passages(id) ON DELETE CASCADE,
    model       text  NOT NULL,   -- the reranker identity whose encoder drew the states
    text_sha    text  NOT NULL,   -- sha256 of the passage text the window was cut from
    states      bytea NOT NULL
);
-- int8 states do not compress: skip the attempt on every write and read
ALTER TABLE window_states ALTER COLUMN states SET STORAGE EXTERNAL;
