"""``download`` with ``skip_verification_reason`` (tsuku's key for a file upstream
publishes no checksum or signature for): accepted, and the reason is said wherever the
file is shown: the plan (its text and ``--json``), the install's output and the
install's record in the ledger. Without the key, nothing changes (the file installs
with its sha256 shown and "no published checksum to compare")."""

from __future__ import annotations

import json
import os

from tests.conftest import Tsuku
from tests.integration.install.conftest import events, installed
from tests.integration.install.test_recipe_errors import local_recipe
from tests.integration.install.test_url_actions import HOST, kubectl_recipe, script
from tsukud.testing.download_host import FakeDownloadHost

REASON = "upstream publishes no checksums for its nightly builds"


def test_the_reason_is_shown_in_the_plan_the_install_and_the_record(inst: Tsuku) -> None:
    with FakeDownloadHost() as fake:
        fake.add_json("/release/stable.json", {"version": "v1.30.2"})
        fake.add(
            f"/release/v1.30.2/bin/{HOST.os}/{HOST.arch}/kubectl",
            script("Client Version: v1.30.2"),
        )
        text = kubectl_recipe(fake)
        checksum_line = next(line for line in text.splitlines() if line.startswith("checksum_url"))
        local_recipe(
            inst,
            "kubectl",
            text.replace(checksum_line, f'skip_verification_reason = "{REASON}"'),
        )
        plan = json.loads(inst.ctl("plan", "kubectl", "--json", check=True).stdout)
        (download,) = [s for s in plan["steps"] if s["action"] == "download_file"]
        assert download["skip_verification_reason"] == REASON
        assert "skip_verification_reason" not in download["params"]  # tsuku's params
        shown = inst.ctl("plan", "kubectl", check=True).stdout
        assert f"(not verified: {REASON})" in shown

        cp = inst.ctl("install", "kubectl", shell_env={"TERM": "dumb"})
        assert cp.returncode == 0, cp.stderr
        assert f"(not verified: {REASON})" in cp.stderr
        assert "kubectl" in installed(inst)
        (done,) = [e for e in events(inst) if e["type"] == "install.completed"]
        (asset,) = done["payload"]["assets"]
        assert asset["skip_verification_reason"] == REASON
        assert asset["checked_against"] == []
        assert os.access(inst.home / "bin" / "kubectl", os.X_OK)
