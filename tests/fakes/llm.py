"""Shared test data for LLM provider tests: canary keys and two typical tools."""

from __future__ import annotations

from tsukud.llm.types import Tool

# Canary keys: shaped unlike real keys on purpose, so only the explicit-secret
# redaction (not the key-shape patterns) can keep them out of errors and logs.
CLAUDE_KEY = "canary-claude-key-5d1e8f0b7a"
GEMINI_KEY = "canary-gemini-key-93c1aa04e2"
OPENAI_KEY = "canary-local-key-2b77de51c9"
CANARIES = (CLAUDE_KEY, GEMINI_KEY, OPENAI_KEY)

FETCH = Tool(
    "fetch_file",
    "Read a text file of the repository at the release tag.",
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)
EXTRACT = Tool(
    "extract_pattern",
    "Give the final asset pattern.",
    {
        "type": "object",
        "properties": {
            "asset_type": {"type": "string", "enum": ["archive", "binary"]},
            "asset_pattern": {"type": "string"},
        },
        "required": ["asset_type", "asset_pattern"],
    },
)
