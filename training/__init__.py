"""The training wing: every model we train, its recipe and its data, apart from the serving packages."""
