"""``install_shell_init`` through the real daemon and client: a change to the person's
shell start-up is shown in full and written only after their yes.

* ``--yes`` at a terminal: stopped (exit 12) before the tool's ``source_command`` ran,
  nothing written, nothing installed (``--yes`` never counts as the person's yes);
* at a terminal without ``--yes``: each fragment's exact text is shown, ``y`` writes it
  to ``share/shell.d/<target>@<version>.<shell>`` (0600), the bash hook sources it, and
  ``remove`` takes it away with the tool.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.conftest import Tsuku
from tests.integration.install.conftest import installed
from tests.integration.install.test_install_terminal import PtyRun
from tests.integration.install.test_recipe_errors import local_recipe
from tests.integration.install.test_url_actions import tar_gz
from tsukud.testing.download_host import FakeDownloadHost

REPO = Path(__file__).resolve().parents[3]
# The tool's own program: `greet init <shell>` prints its start-up line, and records
# that it ran (a `source_command` must not run before the person could say yes).
GREET = """#!/bin/sh
if [ "$1" = init ]; then
    echo ran >> {ran}
    echo "export GREET_SHELL_INIT=$2"
    exit 0
fi
echo "greet 2.0"
"""


class Greet(NamedTuple):
    ran: Path  # written by the tool's source_command, if it ever runs
    host: FakeDownloadHost


@pytest.fixture
def greet(inst: Tsuku, tmp_path: Path) -> Iterator[Greet]:
    ran = tmp_path / "source-command-ran"
    with FakeDownloadHost() as fake:
        fake.add_json("/greet/latest.json", {"version": "2.0"})
        fake.add("/greet/greet-2.0.tar.gz", tar_gz({"bin/greet": GREET.format(ran=ran).encode()}))
        local_recipe(
            inst,
            "greet",
            f"""[metadata]
name = "greet"

[version]
source = "http_json"
url = "{fake.url}/greet/latest.json"
version_path = "version"

[[steps]]
action = "download_archive"
url = "{fake.url}/greet/greet-{{version}}.tar.gz"
binaries = ["bin/greet"]
install_mode = "directory"

[[steps]]
action = "install_shell_init"
source_command = "bin/greet init {{shell}}"
target = "greet"
shells = ["bash"]

[verify]
command = "greet"
pattern = "{{version}}"
""",
        )
        yield Greet(ran, fake)


def finished(run: PtyRun) -> tuple[int, str]:
    """The run's exit status and what the terminal showed, newlines as written."""
    try:
        status = run.wait()
    finally:
        run.kill()
    return status, run.text.replace("\r\n", "\n")


def test_yes_alone_never_changes_the_shell_start_up(inst: Tsuku, greet: Greet) -> None:
    run = PtyRun(inst, "install", "greet", "--yes", TERM="dumb")
    status, text = finished(run)
    assert status == 12, text
    assert "--yes does not accept a change to your shell start-up" in text
    assert "the output of `bin/greet init {shell}`" in text
    assert not greet.ran.exists(), "source_command ran before anyone could say yes"
    assert not (inst.home / "share" / "shell.d").exists()
    assert "greet" not in installed(inst)
    # The answer was known before anything was fetched: nothing was.
    assert [r.path for r in greet.host.requests if "tar.gz" in r.path] == []
    # No terminal: the same stop.
    piped = inst.ctl("install", "greet", "--json")
    assert piped.returncode == 12
    assert json.loads(piped.stdout)["error"]["code"] == "shell_init_needs_consent"
    assert not greet.ran.exists() and "greet" not in installed(inst)


def test_shown_then_yes_writes_it_and_remove_takes_it_away(inst: Tsuku, greet: Greet) -> None:
    run = PtyRun(inst, "install", "greet", TERM="dumb")
    try:
        run.read_until(r"Add this to your shell start-up\? \[y/N\] ")
        shown = run.text.replace("\r\n", "\n")
        assert "share/shell.d/greet@2.0.bash (bash):\n    | export GREET_SHELL_INIT=bash\n" in shown
        fragment = inst.home / "share" / "shell.d" / "greet@2.0.bash"
        assert not fragment.exists()  # nothing before the yes
        run.type(b"y\n")
        status = run.wait()
    finally:
        run.kill()
    assert status == 0, run.text
    assert fragment.read_text() == "export GREET_SHELL_INIT=bash\n"
    assert stat.S_IMODE(fragment.stat().st_mode) == 0o600
    assert stat.S_IMODE(fragment.parent.stat().st_mode) == 0o700
    lines = inst.ctl("events", "--type", "install.completed", "--json", check=True).stdout
    (done,) = [json.loads(x)["payload"] for x in lines.splitlines()]
    assert done["shell_init"] == ["share/shell.d/greet@2.0.bash"]

    # The bash hook runs it in every new interactive shell.
    hook = REPO / "tsukuctl" / "hooks" / "tsuku.bash"
    shell = subprocess.run(
        ["bash", "--norc", "--noprofile", "-i", "-c", f'. {hook}; echo "[$GREET_SHELL_INIT]"'],
        capture_output=True,
        text=True,
        env={"TSUKU_HOME": str(inst.home), "PATH": os.environ["PATH"], "HOME": str(inst.home)},
        check=True,
    )
    assert shell.stdout.strip().endswith("[bash]"), shell.stdout + shell.stderr

    inst.ctl("remove", "greet", check=True)
    assert not fragment.exists()


APP = """[metadata]
name = "app"
dependencies = ["greet"]

[version]
source = "http_json"
url = "{url}/greet/latest.json"
version_path = "version"

[[steps]]
action = "download_file"
url = "{url}/app/app-{{version}}.tar.gz"
checksum = "{sha}"

[[steps]]
action = "extract"
archive = "app-{{version}}.tar.gz"

[[steps]]
action = "configure_make"
source_dir = "app-{{version}}"
executables = ["app"]
"""


def test_a_build_dependency_asks_what_it_would_ask_alone(inst: Tsuku, greet: Greet) -> None:
    """greet (a build dependency of app) adds to the shell's start-up: installing app
    with ``--yes`` at a terminal does not let that through either; nothing of app is
    fetched and greet is not installed."""
    recipe = (inst.home / "recipes" / "greet.toml").read_text()
    url = recipe.split('url = "', 1)[1].split("/greet/", 1)[0]
    local_recipe(inst, "app", APP.format(url=url, sha="0" * 64))
    run = PtyRun(inst, "install", "app", "--yes", TERM="dumb")
    status, text = finished(run)
    assert status == 12, text
    assert "greet adds to your shell's start-up" in text
    assert not greet.ran.exists() and not (inst.home / "share" / "shell.d").exists()
    assert installed(inst) == {}
