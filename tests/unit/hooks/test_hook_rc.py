"""Editing rc files: one marked line, idempotent, removed exactly, every other byte kept."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tsukuctl.hook_commands import (
    TAG,
    add_line,
    detect_shell,
    effective_mode,
    has_line,
    install_rc,
    rc_path,
    remove_line,
    set_mode,
    source_line,
    uninstall_rc,
)
from tsukud.errors import UsageError

LINE = source_line("bash", "/opt/tsuku", {"HOME": "/home/u"})


def test_source_line_spellings() -> None:
    env = {"HOME": "/home/u"}
    assert source_line("bash", "/home/u/.tsuku", env) == (
        'export PATH="$HOME/.tsuku/bin":"${PATH#"$HOME/.tsuku/bin":}";'
        ' if [ -f "$HOME/.tsuku/share/hooks/tsuku.bash" ]; then'
        ' . "$HOME/.tsuku/share/hooks/tsuku.bash"; fi # tsuku hook (managed)'
    )
    assert source_line("zsh", "/opt/t", env) == (
        'export PATH="/opt/t/bin":"${PATH#"/opt/t/bin":}";'
        ' if [ -f "/opt/t/share/hooks/tsuku.zsh" ]; then'
        ' . "/opt/t/share/hooks/tsuku.zsh"; fi # tsuku hook (managed)'
    )
    assert source_line("fish", "/home/u/.tsuku", env) == (
        'contains -- "$HOME/.tsuku/bin" $PATH; or set -gx PATH "$HOME/.tsuku/bin" $PATH;'
        ' if test -f "$HOME/.tsuku/share/hooks/tsuku.fish";'
        ' source "$HOME/.tsuku/share/hooks/tsuku.fish"; end # tsuku hook (managed)'
    )
    # Odd characters in a custom home are quoted for the shell that reads them.
    assert '"/o p/$x\\"`/share' in source_line("fish", '/o p/$x"`', env).replace("\\$", "$")
    assert '"/o p/\\$x\\"\\`/share' in source_line("bash", '/o p/$x"`', env)


def test_rc_paths() -> None:
    env = {"HOME": "/h"}
    assert rc_path("bash", env) == "/h/.bashrc"
    assert rc_path("zsh", env) == "/h/.zshrc"
    assert rc_path("zsh", {**env, "ZDOTDIR": "/z"}) == "/z/.zshrc"
    assert rc_path("fish", env) == "/h/.config/fish/conf.d/tsuku.fish"
    assert rc_path("fish", {**env, "XDG_CONFIG_HOME": "/x"}) == "/x/fish/conf.d/tsuku.fish"


def test_detect_shell() -> None:
    assert detect_shell({"SHELL": "/usr/bin/zsh"}) == "zsh"
    assert detect_shell({"SHELL": "/usr/local/bin/fish"}) == "fish"
    with pytest.raises(UsageError, match="--shell"):
        detect_shell({"SHELL": "/bin/tcsh"})
    with pytest.raises(UsageError):
        detect_shell({})


@pytest.mark.parametrize(
    "before",
    ["", "export A=1\n", "export A=1", "a\n\n\nb\n", "# tsuku hook\n", "x\r\ny\r\n", "\n"],
)
def test_round_trip_is_exact(before: str) -> None:
    after = add_line(before, LINE)
    assert after.count(TAG.split(")")[0]) == 1 and after.endswith("\n")
    assert add_line(after, LINE) == after  # idempotent
    assert remove_line(after) == before


def test_missing_final_newline_is_restored_only_while_ours_is_last() -> None:
    after = add_line("export A=1", LINE)
    assert after.startswith("export A=1\nexport PATH=") and after.endswith("\n")
    assert remove_line(after) == "export A=1"
    # The user appended below our line: the newline we added now separates real lines.
    appended = after + "export B=2\n"
    assert remove_line(appended) == "export A=1\nexport B=2\n"


def test_update_in_place_keeps_position_and_neighbours() -> None:
    old = source_line("bash", "/old/home", {"HOME": "/h"})
    text = f"a\n{old}\nb"  # a later line without a final newline
    new = add_line(text, LINE)
    assert new == f"a\n{LINE}\nb"
    assert remove_line(new) == "a\nb"


def test_duplicates_collapse_and_all_go_on_removal() -> None:
    text = f"{LINE}\nx\n{LINE}\n"
    assert add_line(text, LINE) == f"{LINE}\nx\n"
    assert remove_line(text) == "x\n"
    assert not has_line(remove_line(text))


@given(
    st.text(
        alphabet=st.sampled_from(["a", " ", "\n", "\r", "#", "é", "\t", "\x0c", "\u2028"]),
        max_size=40,
    )
)
def test_round_trip_any_text(before: str) -> None:
    if has_line(before):
        return
    after = add_line(before, LINE)
    assert add_line(after, LINE) == after
    assert remove_line(after) == before


def test_files_symlink_mode_and_undecodable_bytes(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "bashrc"
    real.parent.mkdir()
    original = b"# \xff not utf-8\nexport A=1"
    real.write_bytes(original)
    os.chmod(real, 0o600)
    rc = tmp_path / ".bashrc"
    rc.symlink_to(real)
    env = {"HOME": str(tmp_path)}
    assert install_rc("bash", str(rc), "/opt/t", env) == "added"
    assert install_rc("bash", str(rc), "/opt/t", env) == "unchanged"
    assert install_rc("bash", str(rc), "/opt/t2", env) == "updated"
    assert rc.is_symlink()
    assert stat.S_IMODE(real.stat().st_mode) == 0o600
    assert b"/opt/t2/share/hooks/tsuku.bash" in real.read_bytes()
    assert uninstall_rc("bash", str(rc)) is True
    assert real.read_bytes() == original
    assert uninstall_rc("bash", str(rc)) is False
    assert [p.name for p in real.parent.iterdir()] == ["bashrc"]  # no temp files left


def test_missing_rc_is_created_and_fish_file_deleted_when_emptied(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path)}
    fish = rc_path("fish", env)
    assert install_rc("fish", fish, "/opt/t", env) == "added"
    assert Path(fish).read_text().startswith("contains -- ")
    assert uninstall_rc("fish", fish) is True
    assert not os.path.exists(fish)
    bashrc = rc_path("bash", env)
    install_rc("bash", bashrc, "/opt/t", env)
    uninstall_rc("bash", bashrc)
    assert Path(bashrc).read_text() == ""  # not ours to delete


def test_mode_resolution(tmp_path: Path) -> None:
    home = str(tmp_path)
    assert effective_mode(home, {}) == ("suggest", "default")
    path = set_mode(home, "confirm")
    assert effective_mode(home, {}) == ("confirm", path)
    assert effective_mode(home, {"TSUKU_AUTO_INSTALL": "auto"}) == ("auto", "TSUKU_AUTO_INSTALL")
    assert effective_mode(home, {"TSUKU_AUTO_INSTALL": "1"})[0] == "auto"
    assert effective_mode(home, {"TSUKU_AUTO_INSTALL": "suggest"})[0] == "suggest"
    # What the hooks do with a value they do not know: suggest.
    assert effective_mode(home, {"TSUKU_AUTO_INSTALL": "bogus"}) == (
        "suggest",
        "TSUKU_AUTO_INSTALL",
    )
