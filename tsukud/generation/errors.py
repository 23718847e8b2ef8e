"""What a generation ends in when no answer passes: one code for both writers."""

from __future__ import annotations

from tsukud.errors import TsukuError


class GenerationFailed(TsukuError):
    code = "generation_failed"
