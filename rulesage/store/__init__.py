"""SQL the services share, one module per family of tables: ``passages`` (hydration, per-document reads)
and ``vectors`` (pgvector nearest-neighbour search). The passage visibility rules live in the database as
the views ``live_passages`` and ``current_passages`` (migration 0004), so no query spells them out."""
