"""Workflows that span features, each in its own module with typed results.

A feature service does one job (discover a source, write a recipe, install a tool); a
flow strings several together for one request. RPC handlers call one flow or one
service, so no handler calls another.

- ``install_missing``: install a tool that has no recipe (discover → create → install).
"""
