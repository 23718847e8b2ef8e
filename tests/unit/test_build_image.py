"""The build image's name and contents, as the daemon and ``scripts/dev`` know them.

An image is built only when its tag is missing (``prepare_debian_image``,
``debootstrap_image``), so a machine holding an older build image keeps it unless the
tag changes with what it carries: a new package without a new tag would leave every
such machine without it (cpan_install's cpanm, say) and its builds failing."""

from __future__ import annotations

import re
from pathlib import Path

from tsukud.sandbox.image import BUILD_PACKAGES
from tsukud.sandbox.runtime import BUILD_IMAGE

DEV = Path(__file__).resolve().parents[2] / "scripts" / "dev"


def test_scripts_dev_builds_the_image_the_daemon_runs_with_the_same_packages() -> None:
    text = DEV.read_text()
    (tag,) = re.findall(r'^BUILD_IMAGE="([^"]+)"$', text, re.M)
    (include,) = re.findall(r'debootstrap_image "\$BUILD_IMAGE" "([^"]+)"', text)
    assert (tag, tuple(include.split(","))) == (BUILD_IMAGE, BUILD_PACKAGES)


def test_the_tag_changes_with_the_packages() -> None:
    # Changing BUILD_PACKAGES means a new tag (…:local-v3) and this pair updated.
    assert (BUILD_IMAGE, BUILD_PACKAGES) == (
        "tsuku/validate-build:local-v2",
        ("gcc", "make", "libc6-dev", "patchelf", "cmake", "perl", "cpanminus"),
    )
