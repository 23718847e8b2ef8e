"""Installing recipes: safe extraction (``extract``), the layout of installed tools
(``layout``), and the installer built on them.

Kept import-free: the daemon imports ``layout`` before it serves (to reconcile ``bin/``
with the ledger), and a package ``__init__`` that imported the extractor (zstandard,
tarfile, zipfile, the recipe model) made every start pay for it (issue 32).
"""
