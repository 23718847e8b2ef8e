"""Batch generation: a queue of sources drained through create (docs/batch.md)."""
