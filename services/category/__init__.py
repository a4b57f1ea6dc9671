"""The category leg: classify the question into the game's category map, then vote the mapped sections."""
