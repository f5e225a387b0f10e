"""Embedders: turn text into L2-normalised vectors, and count tokens the way the model does."""
