"""Homebrew bottles: the formulae API and bottle registry client (``client.py``),
relocation of a poured keg (``relocate.py``) and runtime dependencies (``deps.py``)."""
