"""Ranking above the stores: keyword and semantic candidates fused, neighbouring chunks merged
into passages, one way for every backend."""
