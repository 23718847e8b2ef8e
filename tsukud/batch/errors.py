"""The batch queue's errors (codes, exit codes and hints in ``tsukud/errors.py``)."""

from __future__ import annotations

from tsukud.errors import TsukuError


class BatchRunning(TsukuError):
    """A batch run is active: a second run, or clearing the queue under it, is refused."""

    code = "batch_running"
