"""The second librarian: meaning search over pgvector, with expanded and canonical lanes for aliases."""
