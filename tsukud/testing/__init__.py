"""Fakes that speak real wire formats, shipped with tsuku (like ``trio.testing``).

The offline demo (``tsukuctl demo``) serves these, and the tests use the same code:
a fake GitHub (API, release downloads, a recipe registry) on loopback, and
deterministic release archives synthesised from recipes. Nothing here is imported by
the daemon itself.
"""
