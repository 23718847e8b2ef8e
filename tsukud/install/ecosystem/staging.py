"""What a runner module's ``fetch`` works in and answers, for validation.

Validation (``validation/ecosystem.py``) proves an ecosystem recipe without running any
of the package on the host: each runner's ``fetch`` only downloads the package and its
dependencies, scripts off, into a :class:`Stage`, and answers the :class:`Build` the
validation container runs offline to finish the install. How to do that for one
package manager is the runner module's knowledge (its arguments, its directories);
the container, its mounts and its verdict are validation's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

#: The host's programs the container runs (its ``/usr`` is mounted read-only).
SYSTEM_BIN = Path("/usr/bin")


@dataclass(frozen=True)
class Stage:
    """One validation's throw-away directory (outside ``$TSUKU_HOME``): ``tool`` is
    mounted at ``seen_tool`` in the container, ``work`` at ``seen_work``; ``scratch``
    is the host package manager's home and cache, never mounted."""

    root: Path
    seen_tool: str  # the container's path of ``tool``
    seen_work: str  # and of ``work``

    @property
    def tool(self) -> Path:
        return self.root / "tool"

    @property
    def work(self) -> Path:
        return self.root / "work"

    @property
    def scratch(self) -> Path:
        return self.root / "scratch"

    def make(self) -> None:
        for d in (self.tool, self.work / "home", self.work / "tmp", self.work / "cache"):
            d.mkdir(parents=True, exist_ok=True)


@dataclass(frozen=True)
class Build:
    """What the container runs, offline, to finish the install (None: nothing left)."""

    script: str | None
    bin_subdir: str
    env: Mapping[str, str] = field(default_factory=dict)
    needs: str | None = None  # the program the container takes from the host's /usr
    # Run on the host once the container's build is done (gem's bin/ wrappers).
    finish: Callable[[], None] | None = None


class ToolchainUnavailable(Exception):
    """The host lacks what the container needs from its ``/usr``: the recipe cannot be
    validated (validation refuses it as such, never passes it on the host)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason
