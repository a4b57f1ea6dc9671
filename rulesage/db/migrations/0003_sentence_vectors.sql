-- The extractive answer's sentence vectors, drawn at ingest so an answer embeds only the question: per
-- passage, its sentence spans (services/answer/backends/extractive.py: sentences) and one float16 MiniLM
-- vector per sentence (the sentence with the passage's nearest heading).
CREATE TABLE sentence_vectors (
    passage_id  bigint PRIMARY KEY REFERENCES passages(id) ON DELETE CASCADE,
    model       text  NOT NULL,   -- the embedding model that drew them
    text_sha    text  NOT NULL,   -- sha256 of the passage text
    spans       int[] NOT NULL,   -- start, end, start, end, ... (character offsets into the text)
    vectors     bytea NOT NULL    -- float16, len(spans) / 2 rows of 384
);
ALTER TABLE sentence_vectors ALTER COLUMN vectors SET STORAGE EXTERNAL;
