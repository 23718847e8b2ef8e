"""What a runner's ``fetch`` for validation needs from the host: without it, the recipe
is refused as not validated (``ToolchainUnavailable``), and nothing is fetched."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest
import trio

from tsukud.install.ecosystem import pipx
from tsukud.install.ecosystem.prefix import Prefix, RunContext
from tsukud.install.ecosystem.staging import Stage, ToolchainUnavailable
from tsukud.recipe.model import EcosystemStep


def test_a_python_fetch_without_debian_s_pip_wheel_is_unavailable_not_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pipx, "PYTHON_WHEELS", tmp_path / "no-wheels")
    stage = Stage(tmp_path / "stage", "/tsuku/tool", "/tsuku/work")
    stage.make()
    ctx = RunContext(
        EcosystemStep(action="pipx_install", package_name="tool", executables=("tool",)),
        "1.0",
        Prefix("tool", stage.tool, stage.scratch),
        Path("/usr/bin/python3"),
        "http://127.0.0.1:9",  # never asked: nothing is fetched
        {"PATH": "/usr/bin:/bin"},
    )
    with pytest.raises(ToolchainUnavailable, match="pip wheel"):
        trio.run(pipx.fetch, ctx, stage, cast(Any, None))
    assert not (stage.work / "dist").exists()
