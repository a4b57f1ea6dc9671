"""The sentence reader: a cross-encoder over (question, sentence) pairs picking the quote a ruling cites."""
