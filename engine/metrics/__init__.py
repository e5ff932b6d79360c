"""Metrics over a results dataset: pure Polars functions over LazyFrames."""
