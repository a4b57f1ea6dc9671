"""RuleSage shared package: config, db + migrations, telemetry, the service runner, text normalisation,
the embedder, the launcher and CLI, ingestion and evaluation. Generated stubs live in rulesage.v1."""

__version__ = "0.1.0"
