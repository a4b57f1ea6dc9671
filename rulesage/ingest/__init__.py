"""Ingestion: real rulebooks become page-numbered sections and passages (extraction, chunking, embedding,
releases, errata links, aliases)."""
