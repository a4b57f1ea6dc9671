"""The first librarian: Postgres full-text search with BM25 computed from the passages' tsvector postings."""
