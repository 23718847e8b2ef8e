"""Shell integration on the daemon side: the plain-text binary index the hooks read."""
