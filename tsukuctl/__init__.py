"""tsukuctl: the thin, fast client of tsukud. Standard library only on its hot path."""
