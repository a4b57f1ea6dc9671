"""The search encoder: MiniLM-L6 tuned on our books with in-batch negatives (see recipe.py)."""
