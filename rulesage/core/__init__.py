"""Pure logic of the road, with no I/O and no imports of the rest of RuleSage: fusion arithmetic (rrf),
the kept count and the dealing order (deal), text normalisation (text), question checks (questions), the
evaluation metrics (metrics) and the typed ruling (models). Services, the gateway, the CLI and the
evaluation all import from here; nothing here imports them back (import-linter checks it)."""
