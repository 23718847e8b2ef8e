"""Batch generation: a queue of sources drained through create and validation (docs/batch.md)."""
