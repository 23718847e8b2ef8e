"""The shell hook scripts (package data), copied to ``$TSUKU_HOME/share/hooks/``."""
