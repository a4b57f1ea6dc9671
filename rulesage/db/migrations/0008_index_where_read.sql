-- Index-time work only where the road reads it.

-- No query reads these two indexes, and both cost every ingest. The lexical arm scores from `postings`, never
-- `tsv @@`. The dense arm and the aisle filter by family or by document, and the planner served them through
-- `passages_live` / `passages_document` (an exact top-k over the family's rows: 12 ms for the largest family,
-- 3,120 passages); a global graph filtered down to one family of a 750-game shelf would walk much of it.
DROP INDEX IF EXISTS passages_tsv;
DROP INDEX IF EXISTS passages_embedding;

-- Whether the road rules on a family's questions (the reader and the answer read it). A retrieval-only corpus
-- (BEIR) is searched by the arms only, so its reader window states and answer sentence vectors are never
-- drawn.
ALTER TABLE families ADD COLUMN ruled boolean NOT NULL DEFAULT true;

-- The passages whose reader and answer rows ingest draws: live passages of ruled families.
CREATE VIEW ruled_passages AS
SELECT p.* FROM passages p JOIN families f ON f.id = p.family_id
WHERE f.ruled AND p.searchable AND NOT p.superseded AND p.retired_at IS NULL;
