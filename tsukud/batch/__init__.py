"""Batch generation: drain a queue of sources through create and validation."""
