-- The answer's own vector of each passage, drawn with its sentence vectors by the answer's encoder: the
-- quote selector reads the passage's cosine to the question, and when the answer reads another encoder than
-- search (RULESAGE_ANSWER_ENCODER) the search's passage vector is not comparable. NULL rows are redrawn.
ALTER TABLE sentence_vectors ADD COLUMN passage_vec vector(384);
