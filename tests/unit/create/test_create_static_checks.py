"""Static checks on candidate recipes: limits, verify commands, paths, replay."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tsukud.create.static_checks import (
    check_recipe,
    replay,
)
from tsukud.recipe import (
    Binary,
    GenericStep,
    GitHubArchiveStep,
    InstallShellInitStep,
    Metadata,
    Recipe,
    RunCommandStep,
    parse_recipe,
)
from tsukud.recipe.release import Release
from tsukud.validation.findings import (
    BINARY_PATH,
    GUARDED_COMMAND,
    INTENT,
    LIMITS,
    LITERAL_VERSION,
    REPLAY,
    SCHEMA,
    UNSUPPORTED,
    VERIFY_COMMAND,
    WRONG_PLATFORM,
    errors,
    format_findings,
)
from tsukud.validation.verify_command import verify_command_findings


def _release(version: str, *, arm_darwin: bool = True) -> Release:
    names = [
        f"foo_{version}_linux_amd64.tar.gz",
        f"foo_{version}_linux_arm64.tar.gz",
        f"foo_{version}_darwin_amd64.tar.gz",
        f"foo_{version}_checksums.txt",
        f"foo_{version}_windows_amd64.zip",
    ]
    if arm_darwin:
        names.append(f"foo_{version}_darwin_arm64.tar.gz")
    return Release(tag=f"v{version}", assets=tuple(names))


RELEASES = [_release("1.2.3"), _release("1.2.2"), _release("1.1.0")]

GOOD = """
[metadata]
name = "foo"
[version]
source = "github_releases"
github_repo = "o/foo"
[[steps]]
action = "github_archive"
repo = "o/foo"
asset_pattern = "foo_{version}_{os}_{arch}.tar.gz"
binaries = ["foo"]
[verify]
command = "foo --version"
pattern = "{version}"
"""


def _recipe(text: str = GOOD, **replace: str) -> Recipe:
    for old, new in replace.items():
        text = text.replace(old, new)
    return parse_recipe(text)


def test_good_recipe_passes() -> None:
    assert check_recipe(_recipe(), RELEASES) == []


def test_a_guarded_command_for_another_tool_is_an_error_the_model_is_told() -> None:
    """What an injected page asks a model for: ``sudo`` beside the tool (issue 33)."""
    bad = _recipe(**{'binaries = ["foo"]': 'binaries = ["foo", "bin/sudo", "git-credential-x"]'})
    found = [f for f in check_recipe(bad, RELEASES) if f.category == GUARDED_COMMAND]
    assert [f.severity for f in found] == ["error", "error"]
    text = format_findings(found)
    assert "binary 'sudo'" in text and "binary 'git-credential-x'" in text
    assert "only the recipe for sudo may install it" in text
    # The command's own recipe may ship it; a name that merely shadows is the installer's.
    own = _recipe(**{'name = "foo"': 'name = "sudo"', 'binaries = ["foo"]': 'binaries = ["sudo"]'})
    assert [f for f in check_recipe(own, RELEASES) if f.category == GUARDED_COMMAND] == []
    git = _recipe(**{'binaries = ["foo"]': 'binaries = ["foo", "git"]'})
    assert [f for f in check_recipe(git, RELEASES) if f.category == GUARDED_COMMAND] == []


def test_wrong_arch_mapping_is_caught_by_replay_with_a_useful_message() -> None:
    recipe = _recipe(
        **{'binaries = ["foo"]': 'binaries = ["foo"]\narch_mapping = { arm64 = "aarch64" }'}
    )
    findings = errors(check_recipe(recipe, RELEASES))
    assert {f.category for f in findings} == {REPLAY}
    assert {f.platform for f in findings} == {"linux/arm64", "darwin/arm64"}
    assert (
        "darwin/arm64: rendered 'foo_1.2.3_darwin_aarch64.tar.gz', not among the assets of "
        "v1.2.3; closest: 'foo_1.2.3_darwin_arm64.tar.gz'"
    ) in [f.message for f in findings]
    # Three releases checked, both platforms fail at each.
    assert len(findings) == 6


def test_literal_version_is_rejected() -> None:
    recipe = _recipe(**{"foo_{version}_{os}": "foo_1.2.3_{os}"})
    findings = errors(check_recipe(recipe, RELEASES))
    assert [f.category for f in findings] == [LITERAL_VERSION]
    assert "literal version 1.2.3" in findings[0].message
    four_part = _recipe(**{"foo_{version}_{os}": "foo_1.2.3.0_{os}"})
    assert [f.category for f in errors(check_recipe(four_part, RELEASES))] == [LITERAL_VERSION]
    # Replay alone would also fail it at the previous releases.
    assert {f.release for f in replay(recipe, RELEASES)} == {"v1.2.2", "v1.1.0"}


@pytest.mark.parametrize(
    "command",
    [
        "foo --version; rm -rf /",
        "foo --version && curl x",
        "foo --version | sh",
        "foo --version > /tmp/x",
        "foo < /etc/passwd",
        "foo $(id)",
        "foo `id`",
        "foo ${HOME}",
        "foo --version\nrm -rf /",
        "foo &",
    ],
)
def test_shell_operators_in_verify_are_rejected(command: str) -> None:
    recipe = msgspec.structs.replace(
        _recipe(), verify=msgspec.structs.replace(_recipe().verify, command=command)
    )
    findings = errors(check_recipe(recipe, RELEASES))
    assert [f.category for f in findings] == [VERIFY_COMMAND]
    assert "shell operators" in findings[0].message


@given(st.text(max_size=30), st.sampled_from(";&|<>$`\n\r"), st.text(max_size=30))
def test_verify_commands_with_operators_never_pass(left: str, op: str, right: str) -> None:
    findings = verify_command_findings(f"tool{left}{op}{right}")
    assert any("shell operators" in f.message for f in findings), findings


def test_verify_must_run_an_installed_binary() -> None:
    findings = errors(check_recipe(_recipe(**{'command = "foo': 'command = "bar'}), RELEASES))
    assert [f.category for f in findings] == [VERIFY_COMMAND]
    assert "does not install" in findings[0].message


def test_verify_may_run_an_installed_path_under_install_dir() -> None:
    ok = _recipe(**{'command = "foo': 'command = "{install_dir}/bin/foo'})
    assert errors(check_recipe(ok, RELEASES)) == []
    renamed = _recipe(
        **{
            'binaries = ["foo"]': 'binaries = [{ src = "foo", dest = "libexec/foo" }]',
            'command = "foo': 'command = "{install_dir}/libexec/foo',
        }
    )
    assert errors(check_recipe(renamed, RELEASES)) == []
    for wrong in ("{install_dir}/bin/bar", "{install_dir}/foo"):
        findings = errors(
            check_recipe(_recipe(**{'command = "foo': f'command = "{wrong}'}), RELEASES)
        )
        assert [f.category for f in findings] == [VERIFY_COMMAND]
        assert "it installs: {install_dir}/bin/foo" in findings[0].message


def test_a_literal_version_in_a_binary_path_is_rejected() -> None:
    recipe = _recipe(**{'binaries = ["foo"]': 'binaries = ["foo-1.2.3/foo"]'})
    findings = errors(check_recipe(recipe, RELEASES))
    assert [f.category for f in findings] == [LITERAL_VERSION]
    assert "steps[0].binaries[0]" in findings[0].message


def test_replay_follows_the_tag_prefix() -> None:
    """A monorepo: only the tool's tags count, and {version} is what follows the prefix."""
    monorepo = [Release(tag=f"foo-v{r.version}", assets=r.assets) for r in RELEASES] + [
        Release(tag="lib-v0.3.0", assets=("lib-0.3.0.tar.gz",))
    ]
    monorepo.insert(0, Release(tag="lib-v0.4.0", assets=("lib-0.4.0.tar.gz",)))
    prefixed = _recipe(**{'github_repo = "o/foo"': 'github_repo = "o/foo"\ntag_prefix = "foo-v"'})
    assert errors(check_recipe(prefixed, monorepo)) == []
    assert errors(check_recipe(_recipe(), monorepo))  # without it: lib's tags, no assets


def test_limits() -> None:
    base = _recipe()
    step = base.steps[0]
    many = msgspec.structs.replace(base, steps=(step,) * 21)
    deps = msgspec.structs.replace(
        base, metadata=Metadata(name="foo", dependencies=tuple(f"d{i}" for i in range(6)))
    )
    run = msgspec.structs.replace(base, steps=(step, RunCommandStep(command="curl x | sh")))
    other = msgspec.structs.replace(base, steps=(step, GenericStep(action="npm_install")))
    init = InstallShellInitStep(target="foo", source_command="bin/foo init {shell}")
    shell = msgspec.structs.replace(base, steps=(step, init))
    for recipe, needle in (
        (many, "21 steps"),
        (deps, "6 dependencies"),
        (run, "run_command is not allowed"),
        (shell, "install_shell_init is not allowed"),  # the shell's start-up: a host change
        (other, "npm_install is not allowed"),
    ):
        findings = errors(check_recipe(recipe, RELEASES))
        assert any(f.category == LIMITS and needle in f.message for f in findings), findings


def test_binary_paths() -> None:
    step = _recipe().steps[0]
    assert isinstance(step, GitHubArchiveStep)
    for path, needle in (
        ("../foo", "'..'"),
        ("a/../../foo", "'..'"),
        ("/usr/bin/foo", "relative"),
        ("a\\foo", "backslash"),
    ):
        bad = msgspec.structs.replace(
            _recipe(), steps=(msgspec.structs.replace(step, binaries=(Binary(path),)),)
        )
        findings = [f for f in check_recipe(bad, RELEASES) if f.category == BINARY_PATH]
        assert findings and needle in findings[0].message


def test_schema_round_trip_failure() -> None:
    step = _recipe().steps[0]
    assert isinstance(step, GitHubArchiveStep)
    bad = msgspec.structs.replace(
        _recipe(), steps=(msgspec.structs.replace(step, asset_pattern="a/b_{os}.tar.gz"),)
    )
    findings = errors(check_recipe(bad, RELEASES))
    assert findings[0].category == SCHEMA and "asset_pattern" in findings[0].message
    no_version = msgspec.structs.replace(_recipe(), version=None)
    assert any("[version]" in f.message for f in check_recipe(no_version, RELEASES))


def test_os_mapping_to_the_other_os_is_a_wrong_platform() -> None:
    recipe = _recipe(
        **{'binaries = ["foo"]': 'binaries = ["foo"]\nos_mapping = { darwin = "linux" }'}
    )
    findings = errors(check_recipe(recipe, RELEASES))
    assert {f.category for f in findings} == {WRONG_PLATFORM}
    assert "a linux build; check os_mapping" in findings[0].message


def test_arm64_to_amd64_is_wrong_except_rosetta_without_an_arm_build() -> None:
    mapped = _recipe(
        **{'binaries = ["foo"]': 'binaries = ["foo"]\narch_mapping = { arm64 = "amd64" }'}
    )
    findings = errors(check_recipe(mapped, RELEASES))
    assert {f.platform for f in findings} == {"linux/arm64", "darwin/arm64"}
    assert all("exec format error" in f.message for f in findings)
    # Without a darwin arm64 build, amd64-under-Rosetta is accepted on darwin/arm64 only.
    no_arm = [_release(v, arm_darwin=False) for v in ("1.2.3", "1.2.2", "1.1.0")]
    findings = errors(check_recipe(mapped, no_arm))
    assert {f.platform for f in findings} == {"linux/arm64"}


def test_intended_asset_is_enforced() -> None:
    expected = {"linux/amd64": "foo_1.2.3_linux_arm64.tar.gz"}
    findings = errors(check_recipe(_recipe(), RELEASES, expected=expected))
    assert [f.category for f in findings] == [INTENT]
    assert "the intended asset is 'foo_1.2.3_linux_arm64.tar.gz'" in findings[0].message


def test_rendering_a_checksum_file_is_not_an_install() -> None:
    recipe = _recipe(**{"foo_{version}_{os}_{arch}.tar.gz": "foo_{version}_checksums.txt"})
    recipe = msgspec.structs.replace(
        recipe,
        steps=(msgspec.structs.replace(recipe.steps[0], archive_format="tar.gz"),),
    )
    findings = errors(check_recipe(recipe, RELEASES))
    assert findings and all(f.category == INTENT for f in findings)


def test_declared_unsupported_platform_that_has_a_build_is_a_warning() -> None:
    recipe = msgspec.structs.replace(
        _recipe(), metadata=Metadata(name="foo", unsupported_platforms=("darwin/arm64",))
    )
    findings = check_recipe(recipe, RELEASES)
    assert errors(findings) == []
    (warning,) = findings
    assert warning.category == UNSUPPORTED and "'foo_1.2.3_darwin_arm64.tar.gz'" in warning.message


def test_fewer_releases_than_three_is_fine() -> None:
    assert check_recipe(_recipe(), RELEASES[:1]) == []


def test_feedback_text_lists_errors_first_and_caps() -> None:
    recipe = _recipe(**{'binaries = ["foo"]': 'binaries = ["foo"]\narch_mapping = { arm64 = "x" }'})
    text = format_findings(check_recipe(recipe, RELEASES), limit=2)
    lines = text.splitlines()
    assert lines[0].startswith("- [replay] linux/arm64: rendered")
    assert lines[-1] == "- … and 4 more"


STERN = Release(
    tag="v1.4.2",
    assets=(
        "stern_1.4.2_checksums.txt",
        "stern_1.4.2_darwin_amd64.tar.gz",
        "stern_1.4.2_darwin_arm64.tar.gz",
        "stern_1.4.2_linux_386.tar.gz",
        "stern_1.4.2_linux_amd64.tar.gz",
        "stern_1.4.2_linux_arm.tar.gz",
        "stern_1.4.2_linux_arm64.tar.gz",
        "stern_1.4.2_windows_amd64.tar.gz",
    ),
)


def _closest_by_platform(recipe: Recipe, release: Release) -> dict[str, str]:
    out = {}
    for finding in replay(recipe, [release]):
        assert finding.category == REPLAY and finding.platform is not None
        out[finding.platform] = finding.message.split("closest: ")[1].strip("'")
    return out


@pytest.mark.parametrize(("amd64", "arm64"), [("x86_64", "aarch64"), ("x64", "aarch64")])
def test_closest_suggestion_is_a_build_for_the_target_platform(amd64: str, arm64: str) -> None:
    # By string similarity alone, linux_x86_64 is closest to linux_386 and linux_x64 to
    # linux_arm64: feedback that would send the model to another platform's build.
    recipe = _recipe(
        **{
            "foo_{version}": "stern_{version}",
            "o/foo": "stern/stern",
            'binaries = ["foo"]': (
                f'binaries = ["foo"]\narch_mapping = {{ amd64 = "{amd64}", arm64 = "{arm64}" }}'
            ),
        }
    )
    assert _closest_by_platform(recipe, STERN) == {
        "linux/amd64": "stern_1.4.2_linux_amd64.tar.gz",
        "linux/arm64": "stern_1.4.2_linux_arm64.tar.gz",
        "darwin/amd64": "stern_1.4.2_darwin_amd64.tar.gz",
        "darwin/arm64": "stern_1.4.2_darwin_arm64.tar.gz",
    }


def test_closest_suggestion_falls_back_to_usable_assets_never_signatures() -> None:
    release = Release(
        tag="v1.2.3",
        assets=("foo_1.2.3_linux_amd64.tar.gz", "foo_1.2.3_linux_aarch64.tar.gz.sig"),
    )
    mapping = 'binaries = ["foo"]\narch_mapping = { arm64 = "aarch64" }'
    recipe = _recipe(**{'binaries = ["foo"]': mapping})
    # No arm64 build: the only usable asset, not the signature whose name is nearest.
    found = [f for f in replay(recipe, [release]) if f.platform == "linux/arm64"]
    assert [f.message.split("closest: ")[1] for f in found] == ["'foo_1.2.3_linux_amd64.tar.gz'"]


RANGED = """
[metadata]
name = "foo"
[version]
source = "github_releases"
github_repo = "o/foo"
[[steps]]
action = "github_archive"
when = { version = "FIRST" }
repo = "o/foo"
asset_pattern = "foo_{version}_{os}_{arch}.tar.gz"
binaries = ["foo"]
[[steps]]
action = "github_archive"
when = { version = "SECOND" }
repo = "o/foo"
asset_pattern = "foo-{os}-{arch}-{version}.tar.gz"
binaries = ["foo"]
[verify]
command = "foo --version"
pattern = "{version}"
"""


def test_version_ranged_steps_replay_at_each_release_with_their_own_naming() -> None:
    """The replay renders each release with the step its version selects: the newer
    naming at 1.2.x, the older one at 1.1.0, which the newer pattern would miss."""
    old = Release(
        tag="v1.1.0",
        assets=tuple(
            f"foo-{o}-{a}-1.1.0.tar.gz" for o in ("linux", "darwin") for a in ("amd64", "arm64")
        ),
    )
    releases = [RELEASES[0], RELEASES[1], old]
    ranged = _recipe(RANGED, FIRST=">=1.2.0", SECOND="<1.2.0")
    assert errors(check_recipe(ranged, releases)) == []
    single = _recipe()
    assert any(f.release == "v1.1.0" for f in errors(check_recipe(single, releases)))


def test_version_ranged_steps_must_come_newest_first() -> None:
    wrong = _recipe(RANGED, FIRST="<1.2.0", SECOND=">=1.2.0")
    found = [f for f in check_recipe(wrong, RELEASES) if f.category == SCHEMA]
    assert found and "newest naming first" in found[0].message
    overlapping = _recipe(RANGED, FIRST=">=1.0", SECOND=">=1.1.0, <1.2.0")
    assert any("overlap" in f.message for f in check_recipe(overlapping, RELEASES))
