"""Whether a candidate's latest release has an asset for this platform (pure)."""

from __future__ import annotations

from tsukud.discover.releases import assess_release
from tsukud.github.client import Asset, Release


def release(*names: str, tag: str = "v1.22.0") -> Release:
    return Release(tag_name=tag, assets=tuple(Asset(name=n) for n in names))


STRIPE = release(
    "checksums.txt",
    "stripe_1.22.0_linux_x86_64.tar.gz",
    "stripe_1.22.0_linux_arm64.tar.gz",
    "stripe_1.22.0_mac-os_all.tar.gz",
    "stripe_1.22.0_windows_x86_64.zip",
)


def test_the_asset_for_this_platform_is_found() -> None:
    rc = assess_release(STRIPE, "linux", "amd64")
    assert rc.installable and rc.tag == "v1.22.0" and rc.platform == "linux/amd64"
    assert rc.assets == ("stripe_1.22.0_linux_x86_64.tar.gz",)
    assert assess_release(STRIPE, "darwin", "arm64").assets == ("stripe_1.22.0_mac-os_all.tar.gz",)


def test_a_release_with_nothing_for_this_platform_needs_the_instructions_builder() -> None:
    rc = assess_release(release("tool-1.0-windows-amd64.zip", "checksums.txt"), "linux", "amd64")
    assert not rc.installable
    assert rc.note == (
        "its latest release (v1.22.0, 2 assets) has no asset for linux/amd64: installing it "
        "will need the instructions builder"
    )


def test_no_release_at_all() -> None:
    rc = assess_release(None, "linux", "arm64")
    assert not rc.installable and rc.tag is None
    assert rc.note is not None and "has no GitHub releases" in rc.note
