"""``tsukuctl create <tool> --from homebrew:<formula>`` validates the recipe like any
recipe, against a real tsukud, the fake formulae API and bottle registry and real
Docker: the bottle and its dependency's bottle (compiled in the test, the executable
linked against the dependency's library) are poured, relocated for the container and
the verify command runs there. A bottle whose binary does not run is refused with what
ran and what it printed, and nothing is written."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterator

import pytest

from tests.conftest import Tsuku
from tests.fakes import bottles
from tests.fakes.github import FakeGitHub
from tests.integration.create import test_create_daemon as daemon
from tests.integration.install import test_homebrew_install as installs
from tests.integration.install.conftest import make_tsuku
from tests.integration.install.test_recipe_errors import local_recipe
from tsukud.errors import ExitCode
from tsukud.recipe import host_platform
from tsukud.recipe.homebrew import platform_tags
from tsukud.testing.homebrew import FakeHomebrew

HOST_TAG = platform_tags(host_platform())[0]
IMAGE = "tsuku/validate-debian:local"
pytestmark = [
    pytest.mark.docker,
    pytest.mark.skipif(
        host_platform().os != "linux" or not bottles.have_gcc(), reason="needs Linux and gcc"
    ),
]


# test_create_daemon's fake GitHub world (the recipe registry) and its events reader;
# the install tests' compiled bottles and fake Homebrew.
fw = daemon.fw
events = daemon.events
built = installs.built
brew = installs.brew


@pytest.fixture
def t(fw: FakeGitHub, brew: FakeHomebrew, docker_endpoint: str, image: str) -> Iterator[Tsuku]:
    """A daemon with the libgreet recipe (hello's runtime dependency), not hello's."""
    tsuku = make_tsuku(fw, **brew.env())
    try:
        tsuku.start()
        local_recipe(tsuku, "libgreet", bottles.libgreet_recipe())
        yield tsuku
    finally:
        tsuku.stop_all()
        shutil.rmtree(tsuku.home, ignore_errors=True)


def publish(
    brew: FakeHomebrew, built: bottles.Built, *, binary: str = "2.0", deps: bool = True
) -> str:
    """libgreet 1.0 and hello 2.0_1 (whose binary says ``binary``); hello's blob sha256."""
    brew.publish("libgreet", bottles.LIB_VERSION, {HOST_TAG: bottles.libgreet_bottle(built)})
    tarball = bottles.hello_bottle(built, binary, "2.0_1")
    brew.publish(
        "hello",
        "2.0",
        {HOST_TAG: tarball},
        revision=1,
        dependencies=["libgreet"] if deps else [],
    )
    return hashlib.sha256(tarball).hexdigest()


def kinds(t: Tsuku) -> list[str]:
    return [e["type"] for e in events(t) if e["type"].split(".")[0] in ("create", "validation")]


def test_the_bottle_and_its_dependency_are_poured_and_verified_before_saving(
    t: Tsuku, brew: FakeHomebrew, built: bottles.Built
) -> None:
    digest = publish(brew, built)
    cp = t.ctl("create", "hello", "--from", "homebrew:hello", "--yes")
    assert cp.returncode == 0, cp.stderr
    saved = t.home / "recipes" / "hello.toml"
    assert cp.stdout.splitlines()[0] == f"Recipe created: {saved}"
    assert f"Validation: passed on {host_platform().key} in {IMAGE}: " in cp.stdout
    assert f"hello--2.0_1.{HOST_TAG}.bottle.tar.gz (sha256 {digest[:12]}…)" in cp.stdout
    assert 'runtime_dependencies = ["libgreet"]' in saved.read_text()

    assert kinds(t) == ["create.started", "validation.started", "validation.passed"]
    (started,) = events(t, "create.started")
    assert started["payload"]["skip_validation"] is False
    (passed,) = events(t, "validation.passed")
    p = passed["payload"]
    assert (p["stage"], p["platform"], p["image"]) == ("verify", host_platform().key, IMAGE)
    assert (p["command"], p["exit_code"]) == ("hello --version", 0)
    # Both bottles were downloaded and checked against their manifest digests.
    libgreet = hashlib.sha256(bottles.libgreet_bottle(built)).hexdigest()
    assert [(a["name"], a["sha256"]) for a in p["assets"]] == [
        (f"hello--2.0_1.{HOST_TAG}.bottle.tar.gz", digest),
        (f"libgreet--1.0.{HOST_TAG}.bottle.tar.gz", libgreet),
    ]
    assert all(r.headers.get("authorization") is None for r in brew.blob_requests())
    (done,) = events(t, "generation.completed")
    assert done["payload"]["validation"] == "passed"
    (written,) = events(t, "recipe.written")
    assert written["payload"]["path"] == str(saved)
    assert events(t, "sandbox.lock_acquired"), "the verify command ran in a container"
    assert not list((t.home / "validate").glob("run-*")), "the throw-away trees are gone"

    # The validated recipe installs and runs against its dependency.
    assert t.ctl("install", "hello").returncode == 0


def test_a_binary_that_cannot_find_its_library_is_refused_and_nothing_is_written(
    t: Tsuku, brew: FakeHomebrew, built: bottles.Built
) -> None:
    # The formula forgets its dependency: the recipe names none, so the relocated
    # binary has no path to libgreet and the loader refuses to start it.
    publish(brew, built, deps=False)
    cp = t.ctl("create", "hello", "--from", "homebrew:hello", "--yes", "-v")
    assert cp.returncode == ExitCode.VERIFY_FAILED, cp.stderr
    assert "the recipe for hello did not validate: `hello --version` in the container" in (
        cp.stderr
    )
    assert "libgreet.so.1: cannot open shared object file" in cp.stderr
    assert not (t.home / "recipes" / "hello.toml").exists()
    assert kinds(t) == ["create.started", "validation.started", "validation.failed"]
    (failed,) = events(t, "validation.failed")
    assert failed["payload"]["command"] == "hello --version"
    assert failed["payload"]["exit_code"] == 127
    (gen,) = events(t, "generation.failed")
    assert (gen["payload"]["stage"], gen["payload"]["error_code"]) == (
        "validation",
        "validation_failed",
    )
    assert events(t, "recipe.written") == []
    # -v names the failed run's session, to read with `events --session` (issue 29, 1).
    session = gen["session"]
    assert f"debug: session {session} (tsukuctl events --session {session})" in cp.stderr


def test_a_binary_printing_another_version_is_refused(
    t: Tsuku, brew: FakeHomebrew, built: bottles.Built
) -> None:
    publish(brew, built, binary="1.5")  # the 2.0 bottle holds a binary saying 1.5
    cp = t.ctl("create", "hello", "--from", "homebrew:hello", "-o", "-")
    assert cp.returncode == ExitCode.VERIFY_FAILED, cp.stderr
    assert cp.stdout == ""
    assert "`hello --version` in the container exited with 0 and printed:\nhello 1.5" in (cp.stderr)
    (failed,) = events(t, "validation.failed")
    assert failed["payload"]["category"] == "version_mismatch"


def test_skip_validation_saves_without_a_container_and_says_so(
    t: Tsuku, brew: FakeHomebrew, built: bottles.Built
) -> None:
    publish(brew, built, binary="1.5")  # would fail validation
    shown = t.ctl("create", "hello", "--from", "homebrew:hello", "--skip-validation", "--json")
    assert shown.returncode == 0, shown.stderr
    res = json.loads(shown.stdout)
    assert res["validation"]["status"] == "skipped"
    preview = res["preview"]  # what the terminal's review shows
    assert {
        "platform": host_platform().key,
        "assets": [f"hello--2.0_1.{HOST_TAG}.bottle.tar.gz"],
    } in (preview["downloads"])
    assert preview["actions"][0] == "runtime dependencies first: libgreet"
    assert preview["actions"][2] == "install_binaries: link bin/hello, bin/hello-config"
    assert (preview["verify"], preview["verify_pattern"]) == ("hello --version", "{version}")
    assert not (t.home / "recipes" / "hello.toml").exists()  # --json alone writes nothing

    cp = t.ctl("create", "hello", "--from", "homebrew:hello", "--yes", "--skip-validation")
    assert cp.returncode == 0, cp.stderr
    assert (t.home / "recipes" / "hello.toml").exists()
    assert "Validation: NOT validated (--skip-validation: the bottle was NOT poured" in (cp.stdout)
    assert kinds(t) == ["create.started", "validation.skipped"] * 2
    assert all(e["payload"]["skip_validation"] for e in events(t, "create.started"))
    assert events(t, "sandbox.lock_acquired") == []
    assert brew.blob_requests() == []  # nothing was poured


def test_a_formula_without_a_bottle_for_the_container_is_written_not_validated(
    t: Tsuku, brew: FakeHomebrew, built: bottles.Built
) -> None:
    brew.publish("hello", "2.0", {"arm64_sonoma": bottles.hello_bottle(built, "2.0")})
    cp = t.ctl("create", "hello", "--from", "homebrew:hello", "--yes")
    assert cp.returncode == 0, cp.stderr
    assert "Validation: NOT validated (" in cp.stdout
    assert f"hello 2.0 has no bottle for {host_platform()}" in cp.stdout
    assert "bottles exist for: arm64_sonoma" in cp.stdout
    assert kinds(t) == ["create.started", "validation.started", "validation.skipped"]
    assert brew.blob_requests() == []


def test_a_tampered_bottle_or_a_dependency_without_a_recipe_is_the_installs_error(
    t: Tsuku, brew: FakeHomebrew, built: bottles.Built
) -> None:
    digest = publish(brew, built)
    brew.tamper(digest, bottles.hello_bottle(built, "1.5", "2.0_1"))
    cp = t.ctl("create", "hello", "--from", "homebrew:hello", "--yes")
    assert cp.returncode == ExitCode.INSTALL_FAILED, cp.stderr
    assert f"the bottle's manifest digest says sha256 {digest}" in cp.stderr
    assert not (t.home / "recipes" / "hello.toml").exists()
    (failed,) = events(t, "validation.failed")
    assert failed["payload"]["category"] == "checksum_mismatch"

    brew.served.clear()
    (t.home / "recipes" / "libgreet.toml").unlink()
    cp = t.ctl("create", "hello", "--from", "homebrew:hello", "--yes")
    assert cp.returncode == ExitCode.DEPENDENCY_FAILED, cp.stderr
    assert "hello needs libgreet, which has no recipe" in cp.stderr
    assert not (t.home / "recipes" / "hello.toml").exists()


def test_without_the_image_the_recipe_is_refused_like_any(
    t: Tsuku, brew: FakeHomebrew, built: bottles.Built
) -> None:
    publish(brew, built)
    t.stop_all()
    t.env["TSUKU_SANDBOX_IMAGE"] = "tsuku/validate-absent:never-built"
    t.start()
    cp = t.ctl("create", "hello", "--from", "homebrew:hello", "--yes")
    assert cp.returncode == ExitCode.SANDBOX, cp.stderr
    assert "validation cannot run, so the recipe was not accepted" in cp.stderr
    assert "--skip-validation" in cp.stderr
    assert not (t.home / "recipes" / "hello.toml").exists()
    assert brew.blob_requests() == []
    (gen,) = events(t, "generation.failed")
    assert gen["payload"]["error_code"] == "validation_unavailable"


def test_install_from_homebrew_writes_validates_and_installs_then_notes_the_recipe(
    t: Tsuku, brew: FakeHomebrew, built: bottles.Built
) -> None:
    """``install --from homebrew:<formula>`` as for the other sources; the same line run
    again installs from the recipe the first wrote and says --from is not used; a
    malformed --from is a usage error even with a recipe there."""
    publish(brew, built)
    cp = t.ctl("install", "hello", "--from", "homebrew:hello", "--yes", timeout=180)
    assert cp.returncode == 0, cp.stderr
    assert "writing a recipe for hello from homebrew:hello" in cp.stderr
    assert events(t, "validation.passed"), "validated before it was installed"
    assert (t.home / "recipes" / "hello.toml").exists()

    again = t.ctl("install", "hello", "--from", "homebrew:hello", "--force", "--yes")
    assert again.returncode == 0, again.stderr
    assert (
        "a recipe for hello exists (local), so --from homebrew:hello is not used; "
        "`tsukuctl create hello --from homebrew:hello --force` replaces it"
    ) in again.stderr
    assert len(events(t, "create.started")) == 1  # nothing written the second time

    bad = t.ctl("install", "hello", "--from", "github:only-an-owner")
    assert bad.returncode == 2 and "--from 'github:only-an-owner'" in bad.stderr
