"""Tools that only have install instructions: a vendor's page read by an LLM into a
recipe in a closed vocabulary, proven in the validation container
(docs/design/instructions-builder.md)."""
