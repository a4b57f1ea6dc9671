-- The official rulings' reading of the book, for the dense arm's "dense.rulings" lane (the passages nearest
-- what the named cards' rulings say). The ingest draws each ruling's vector in the active embedding space
-- once its card table is loaded (a ruling without one of the active space is drawn again, its neighbours
-- cleared), then each ruling's nearest live passages of its game's family, best first (rulesage.ingest.pipeline).
-- card_tables.near_stamp says which passages those were drawn from: when the family's live passages or the
-- space change, every ruling's neighbours are drawn again. The lane then reads ids, never a vector scan.
ALTER TABLE card_rulings
    ADD COLUMN embedding vector(384),
    ADD COLUMN space_id  int REFERENCES embedding_space(id),
    ADD COLUMN near      bigint[];
ALTER TABLE card_tables ADD COLUMN near_stamp text;
