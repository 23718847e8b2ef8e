"""What validating a recipe can end in, besides a verdict: the recipe refused, or no
way to run the proof at all. Create, the instructions builder and the bottle and
ecosystem validations raise the same two, so a caller tells them apart by code alone.
"""

from __future__ import annotations

from tsukud.errors import TsukuError


class ValidationFailed(TsukuError):
    code = "validation_failed"


class ValidationUnavailable(TsukuError):
    """Validation could not run at all (no runtime, no image): a recipe nobody has seen
    work is neither saved nor installed unless the user said ``--skip-validation``."""

    code = "validation_unavailable"
