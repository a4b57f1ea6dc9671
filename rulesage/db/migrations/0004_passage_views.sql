-- Which passages count, said once. Both views are simple (one table, no aggregate), so Postgres inlines them
-- into each query: plans are those of the written-out predicate, partial index passages_live included, and
-- UPDATE through current_passages reaches the table.

-- The current release of every document: passages a later release removed are kept for old rulings only.
CREATE VIEW current_passages AS
SELECT * FROM passages WHERE retired_at IS NULL;

-- What the search arms, the reader and the answerer read: current, searchable (not a leaf row kept only for
-- citations) and not hidden by an errata that replaces its wording.
CREATE VIEW live_passages AS
SELECT * FROM passages WHERE searchable AND NOT superseded AND retired_at IS NULL;
