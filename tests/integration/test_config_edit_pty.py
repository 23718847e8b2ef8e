"""``tsukuctl config edit`` at a terminal: an edit that does not read cleanly is shown
with its problems and offered again; the file changes only once it is right."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.conftest import base_env
from tests.integration.hooks.conftest import PtyShell, need_shell

# First run: a typo. Second run: the fix. (A counter file tells them apart.)
EDITOR = """#!/bin/sh
if [ -e "$(dirname "$0")/once" ]; then
    sed -i 's/daily_budjet/daily_budget/' "$1"
else
    : > "$(dirname "$0")/once"
    printf '[llm]\\ndaily_budjet = 1.5\\n' >> "$1"
fi
"""


def test_a_bad_edit_is_offered_again_and_the_file_changes_once_right(tmp_path: Path) -> None:
    bash = need_shell("bash")
    home = tmp_path / "th"
    home.mkdir(mode=0o700)
    cfg = home / "config.toml"
    cfg.write_text("# mine\n")
    cfg.chmod(0o600)
    editor = tmp_path / "editor.sh"
    editor.write_text(EDITOR)
    editor.chmod(0o755)
    env = {
        **base_env(home),
        "HOME": str(tmp_path),
        "VISUAL": str(editor),
        "PS1": "$ ",
        "TERM": "dumb",
    }
    sh = PtyShell([bash, "--norc", "-i"], env, tmp_path)
    try:
        sh.ready()
        sh.send(f'{sys.executable} -m tsukuctl config edit; echo "__RC_$?"__\n')
        sh.expect(r"line 3: unknown setting 'llm\.daily_budjet'; did you mean llm\.daily_budget\?")
        assert cfg.read_text() == "# mine\n"  # not yet
        sh.expect(r"Edit again\? \[Y/n\] ")
        sh.send("\n")
        sh.expect(r"config\.toml saved")
        m = sh.expect(r"__RC_(\d+)__")
        assert m.group(1) == "0"
        assert cfg.read_text() == "# mine\n[llm]\ndaily_budget = 1.5\n"
        assert cfg.stat().st_mode & 0o777 == 0o600
        assert not list(home.glob(".config.*"))  # the working copy is gone
    finally:
        sh.close()
