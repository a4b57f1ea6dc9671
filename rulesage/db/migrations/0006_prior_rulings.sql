-- Prior rulings: a judge's rating that overrides the crowd, retiring a ruling, and the question's embedding
-- so that later asks about the same things can find it (rulesage/rulings.py: priors, asked_before).

-- A judge rating is one given by an authenticated admin. Judge rows are kept (the latest one is the ruling's
-- effective score); crowd rows stay one per client. The crowd's mean, count and sum read judge = false only.
ALTER TABLE ratings ADD COLUMN judge boolean NOT NULL DEFAULT false;
CREATE INDEX ratings_judge_latest ON ratings (ruling_id, created_at DESC, id DESC) WHERE judge;

-- A retired ruling stays readable at its permalink, says why, and is never offered as "asked before".
ALTER TABLE rulings ADD COLUMN retired_at timestamptz;
ALTER TABLE rulings ADD COLUMN retired_reason text NOT NULL DEFAULT '';

-- The question's embedding as fusion's embedder drew it (models->>'embed' names the model); NULL when the
-- embedder did not answer. No fixed dimension: a later embedding space may have another one, and rows are
-- only ever compared with vectors of their own model.
ALTER TABLE rulings ADD COLUMN question_vec vector;

-- Priors are found by exact cosine distance over one game's candidate rulings: an approximate (HNSW) index
-- filtered by game, state and rating could drop the nearest ones, and a game's answered, cleared rulings
-- are few enough to scan. This index narrows the scan to those rows.
CREATE INDEX rulings_priors ON rulings (game_id, created_at)
    WHERE question_vec IS NOT NULL AND retired_at IS NULL AND verdict = 'answered' AND public_state = 'cleared';
