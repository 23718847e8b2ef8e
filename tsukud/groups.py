"""Exception groups from trio nurseries, seen through.

A nursery wraps whatever its body or a child raised in an exception group, even when
there is only one error. Code that maps errors (HTTP to download errors, Docker to
sandbox errors) wants that one error: :func:`single_leaf` finds it.
"""

from __future__ import annotations


def single_leaf(exc: BaseException) -> BaseException | None:
    """The one exception inside (nested) single-member exception groups, if that is all
    (``exc`` itself when it is no group); None when a group holds several."""
    while isinstance(exc, BaseExceptionGroup):
        if len(exc.exceptions) != 1:
            return None
        exc = exc.exceptions[0]
    return exc
