"""The third librarian: the asked game's own books and errata, 8 per document, at most 4 documents."""
