"""The cross reader: a true cross-encoder (question and window read together) on the tuned encoder's first
layers, trained with sentence-transformers' CrossEncoderTrainer on the road's hard negatives."""
