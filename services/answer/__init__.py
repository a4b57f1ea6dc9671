"""answer: writes a ruling from the kept passages, quotes first, every citation checked against the book.

Pure logic: ``citations`` (the check and the validated type), ``loop`` (the attempt typestate), ``context``
(read big), ``prompt`` (messages); ``backends`` (extractive, llama-cpp, openai); ``server`` is the servicer.
"""
