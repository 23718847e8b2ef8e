"""Reading and writing recipe TOML: round trips, preserved keys, precise errors."""

from __future__ import annotations

import string
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.hypothesis_profiles import examples
from tsukud.recipe import (
    Binary,
    ChmodStep,
    DownloadArchiveStep,
    DownloadStep,
    ExtractStep,
    GenericStep,
    GitHubArchiveStep,
    GitHubFileStep,
    HomebrewStep,
    InstallBinariesStep,
    Metadata,
    Recipe,
    RecipeParseError,
    Verify,
    VerifyAdditional,
    VersionSection,
    When,
    dump_recipe,
    load_recipe,
    parse_recipe,
    recipe_from_dict,
    recipe_to_dict,
)
from tsukud.recipe.toml_io import RESERVED_STEP_KEYS

# ---------------------------------------------------------------------- fixture recipes


def test_fixture_recipe_round_trips(recipes_dir: Path, fixture_recipe: str) -> None:
    recipe = load_recipe(recipes_dir / fixture_recipe)
    text = dump_recipe(recipe)
    again = parse_recipe(text, fixture_recipe)
    assert again == recipe
    assert dump_recipe(again) == text  # writing is a fixed point


def test_all_fixture_recipes_are_present(recipes_dir: Path) -> None:
    names = {p.stem for p in recipes_dir.rglob("*.toml")}
    ground_truth = {"stern", "ast-grep", "trivy", "age", "k3d", "kind", "k9s", "tflint", "atlantis"}
    assert ground_truth <= names
    assert len(names) >= 20


def test_fixture_recipes_keep_their_fields(recipes_dir: Path) -> None:
    helix = load_recipe(recipes_dir / "h/helix.toml")
    assert helix.metadata.satisfies == {"aliases": ("hx",)}
    assert helix.metadata.supported_libc == ("glibc",)
    gotop = load_recipe(recipes_dir / "g/gotop.toml")
    assert gotop.metadata.unsupported_platforms == ("darwin/amd64",)
    liberica = load_recipe(recipes_dir / "l/liberica.toml")
    (step,) = liberica.steps
    assert isinstance(step, GitHubArchiveStep)
    assert step.install_mode == "directory" and step.strip_dirs == 1
    fly = load_recipe(recipes_dir / "f/fly.toml")
    assert fly.steps[0].binaries == (Binary("flyctl", "bin/fly"),)  # type: ignore[union-attr]
    k3d = load_recipe(recipes_dir / "k/k3d.toml")
    assert isinstance(k3d.steps[0], GitHubFileStep) and k3d.steps[0].binary == "k3d"
    age = load_recipe(recipes_dir / "a/age.toml")
    assert age.steps[0].when == When(os=("linux",), libc=("glibc", "musl"))
    assert age.verify == Verify(command="age --version", pattern="v{version}")


def test_dump_matches_registry_layout(recipes_dir: Path) -> None:
    """Apart from comments, our output of a canonical recipe is the original text."""
    original = (recipes_dir / "k/k3d.toml").read_text()
    assert dump_recipe(parse_recipe(original)) == original
    stern = (recipes_dir / "s/stern.toml").read_text()
    without_comments = "".join(
        line for line in stern.splitlines(keepends=True) if not line.startswith("#")
    )
    assert dump_recipe(parse_recipe(stern)) == without_comments


# -------------------------------------------------------------------- preserved keys

UNKNOWN = """\
schema = 2

[metadata]
name = "tool"
tier = 1
dependencies = ["zlib"]
maintainers = ["a", "b"]
added = 2024-01-02

[metadata.links]
docs = "https://example.com"

[version]
source = "github_releases"
github_repo = "o/r"
tag_prefix = "cli-"
timeline_tag = "release"

[[resources]]
name = "res"
url = "https://example.com/r.tar.gz"

[[steps]]
action = "homebrew"
formula = "tool"
when = { os = "darwin", gpu = ["nvidia"] }
options = { head = true, args = ["--with-x", { deep = [1, 2.5] }] }

[[steps]]
action = "github_archive"
repo = "o/r"
asset_pattern = "tool-{version}.tar.gz"
binaries = ["tool"]
install_subpath = "sub"
when = { os = ["linux"], distro = ["ubuntu"] }
description = "the linux build"
dependencies = ["make"]

[verify]
command = "tool --version"
patterns = ["{version}", "tool"]
exit_code = 0
timeout = 5

[[verify.additional]]
command = "tool --help"
pattern = "Usage"
"""


def test_unknown_keys_survive_a_round_trip() -> None:
    recipe = parse_recipe(UNKNOWN, "tool.toml")
    assert recipe.extra["schema"] == 2
    assert recipe.extra["resources"] == [{"name": "res", "url": "https://example.com/r.tar.gz"}]
    assert recipe.metadata.tier == 1
    assert recipe.metadata.extra["maintainers"] == ["a", "b"]
    assert recipe.metadata.extra["links"] == {"docs": "https://example.com"}
    assert recipe.version == VersionSection(
        source="github_releases",
        github_repo="o/r",
        tag_prefix="cli-",
        extra={"timeline_tag": "release"},
    )
    brew, archive = recipe.steps
    assert isinstance(brew, HomebrewStep)
    assert brew.formula == "tool"
    assert brew.extra == {"options": {"head": True, "args": ["--with-x", {"deep": [1, 2.5]}]}}
    assert brew.when == When(os=("darwin",), gpu=("nvidia",))
    assert isinstance(archive, GitHubArchiveStep)
    assert archive.extra == {"install_subpath": "sub"}
    assert archive.when is not None and archive.when.extra == {"distro": ["ubuntu"]}
    assert archive.dependencies == ("make",)
    assert recipe.verify is not None
    assert recipe.verify.extra == {"timeout": 5}
    assert recipe.verify.additional == (VerifyAdditional(command="tool --help", pattern="Usage"),)
    text = dump_recipe(recipe)
    assert parse_recipe(text) == recipe
    assert text.startswith("schema = 2\n")
    assert "[[resources]]" in text and "[[verify.additional]]" in text


def test_dict_form_round_trips() -> None:
    recipe = parse_recipe(UNKNOWN)
    assert recipe_from_dict(recipe_to_dict(recipe), "json") == recipe


def test_generated_metadata_fields() -> None:
    text = """\
[metadata]
name = "tool"
generated_by = "tsuku 0.1.0 (claude-sonnet-4-5)"
validated_at = "2025-11-22T03:00:00Z"
validation_platform = "linux/amd64"
validation_image = "tsuku/busybox-static@sha256:abc"
validated_version = "1.2.3"
llm_validation = "passed"

[metadata.asset_sha256]
"tool-1.2.3-linux-amd64.tar.gz" = "%s"
""" % ("ab" * 32)
    recipe = parse_recipe(text)
    assert recipe.metadata.asset_sha256 == {"tool-1.2.3-linux-amd64.tar.gz": "ab" * 32}
    assert recipe.metadata.validation_platform == "linux/amd64"
    assert parse_recipe(dump_recipe(recipe)) == recipe


def test_validated_at_accepts_a_toml_datetime() -> None:
    recipe = parse_recipe('[metadata]\nname = "t"\nvalidated_at = 2025-01-02T03:04:05Z\n')
    assert recipe.metadata.validated_at == "2025-01-02T03:04:05+00:00"
    assert parse_recipe(dump_recipe(recipe)) == recipe


def test_string_forms_of_when_lists() -> None:
    recipe = parse_recipe(
        '[metadata]\nname = "t"\n[[steps]]\naction = "x"\n'
        'when = { platform = "linux/arm64", libc = "musl" }\n'
    )
    assert recipe.steps[0].when == When(platform=("linux/arm64",), libc=("musl",))


# ---------------------------------------------------------------------------- errors

STERN = """\
[metadata]
name = "stern"

[[steps]]
action = "github_archive"
repo = "stern/stern"
asset_pattern = "stern_{version}_linux_{arch}.tar.gz"
strip_dirs = 0
binaries = ["stern"]
"""


def stern_with(old: str, new: str) -> str:
    assert old in STERN
    return STERN.replace(old, new)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            stern_with("strip_dirs = 0", 'strip_dirs = "one"'),
            'stern.toml: steps[0].strip_dirs: expected an integer, got "one"',
        ),
        (
            stern_with("strip_dirs = 0", "strip_dirs = -1"),
            "stern.toml: steps[0].strip_dirs: expected a non-negative integer, got -1",
        ),
        (
            stern_with("strip_dirs = 0", "strip_dirs = true"),
            "stern.toml: steps[0].strip_dirs: expected an integer, got true",
        ),
        (stern_with('name = "stern"', 'title = "stern"'), "stern.toml: metadata.name: required"),
        (
            stern_with('repo = "stern/stern"', 'repo = "stern"'),
            'stern.toml: steps[0].repo: expected "owner/repo", got "stern"',
        ),
        (
            stern_with('repo = "stern/stern"\n', ""),
            "stern.toml: steps[0].repo: required",
        ),
        (
            stern_with('binaries = ["stern"]', "binaries = []"),
            "stern.toml: steps[0].binaries: expected a non-empty array of paths or {src, dest} "
            "tables, got an array",
        ),
        (
            stern_with('binaries = ["stern"]', 'binaries = ["../stern"]'),
            "stern.toml: steps[0].binaries[0]: expected a relative path without '..', "
            'got "../stern"',
        ),
        (
            stern_with('binaries = ["stern"]', 'binaries = [{src = "stern"}]'),
            "stern.toml: steps[0].binaries[0].dest: required",
        ),
        (
            stern_with('binaries = ["stern"]', 'binaries = [{src = "a", dest = "b", mode = 1}]'),
            "stern.toml: steps[0].binaries[0].mode: unexpected key "
            "(a binary table has src and dest)",
        ),
        (
            stern_with("strip_dirs = 0", 'archive_format = "rar"'),
            "stern.toml: steps[0].archive_format: expected one of tar.gz, tgz, tar.xz, txz, "
            'tar.bz2, tbz, tbz2, tar.zst, tzst, tar, zip, tar.lz, tlz, got "rar"',
        ),
        (
            stern_with("strip_dirs = 0", 'install_mode = "copy"'),
            "stern.toml: steps[0].install_mode: expected one of binaries, directory, "
            'directory_wrapped, got "copy"',
        ),
        (
            stern_with("strip_dirs = 0", 'when = { libc = ["bionic"] }'),
            'stern.toml: steps[0].when.libc[0]: expected "glibc" or "musl", got "bionic"',
        ),
        (
            stern_with("strip_dirs = 0", "when = { arch = 64 }"),
            "stern.toml: steps[0].when.arch: expected a string or an array of strings, got 64",
        ),
        (
            stern_with("strip_dirs = 0", 'when = { os = ["linux"], platform = ["linux/amd64"] }'),
            "stern.toml: steps[0].when: a when clause cannot have both platform and os",
        ),
        (
            stern_with("strip_dirs = 0", 'when = { platform = ["linux"] }'),
            'stern.toml: steps[0].when.platform[0]: expected an "os/arch" pair '
            '(or "os/arch/libc"), got "linux"',
        ),
        (
            stern_with("strip_dirs = 0", 'checksum_asset = "sums.txt"\nchecksum_url = "https://x"'),
            "stern.toml: steps[0]: checksum_asset and checksum_url are mutually exclusive",
        ),
        (
            stern_with("{version}", "*").replace("strip_dirs = 0", 'checksum_asset = "sums.txt"'),
            "stern.toml: steps[0].checksum_asset: not allowed when asset_pattern has wildcards",
        ),
        (
            stern_with("stern_{version}", "../stern_{version}"),
            "stern.toml: steps[0].asset_pattern: expected an asset file name (no '/' or '\\'), "
            'got "../stern_{version}_linux_{arch}.tar.gz"',
        ),
        (
            stern_with("strip_dirs = 0", 'os_mapping = { linux = "x/y" }'),
            "stern.toml: steps[0].os_mapping.linux: expected a name without '/' or '\\', "
            'got "x/y"',
        ),
        (
            stern_with('action = "github_archive"', "action = 3"),
            "stern.toml: steps[0].action: expected a string, got 3",
        ),
        (
            STERN + "\n[verify]\npattern = 'a'\npatterns = ['b']\n",
            "stern.toml: verify: pattern and patterns are mutually exclusive",
        ),
        (
            STERN.replace("[metadata]", "steps = 1\n[metadata]").replace("[[steps]]", "[x]"),
            "stern.toml: steps: expected an array of tables ([[steps]]), got 1",
        ),
        (
            stern_with('name = "stern"', 'name = "stern"\nasset_sha256 = { a = "nothex" }'),
            "stern.toml: metadata.asset_sha256.a: expected a lowercase hex sha256 (64 characters), "
            'got "nothex"',
        ),
        (
            stern_with('name = "stern"', 'name = "stern"\nsupported_os = "linux"'),
            'stern.toml: metadata.supported_os: expected an array of strings, got "linux"',
        ),
    ],
)
def test_parse_errors_name_file_field_and_expectation(text: str, message: str) -> None:
    with pytest.raises(RecipeParseError) as info:
        parse_recipe(text, "stern.toml")
    assert info.value.message == message
    assert info.value.code == "recipe_parse_error"


def test_github_file_needs_a_binary() -> None:
    base = (
        '[metadata]\nname = "k3d"\n[[steps]]\naction = "github_file"\n'
        'repo = "a/b"\nasset_pattern = "k3d"\n'
    )
    with pytest.raises(
        RecipeParseError, match=r"k3d.toml: steps\[0\]: either binary or binaries is required"
    ):
        parse_recipe(base, "k3d.toml")
    with pytest.raises(
        RecipeParseError, match=r"steps\[0\].binaries\[0\]: expected a \{src, dest\} table"
    ):
        parse_recipe(base + 'binaries = ["k3d"]\n', "k3d.toml")


def test_invalid_toml_and_missing_metadata() -> None:
    with pytest.raises(RecipeParseError, match=r"^x.toml: invalid TOML: "):
        parse_recipe("[metadata\n", "x.toml")
    with pytest.raises(RecipeParseError, match=r"^x.toml: metadata: required$"):
        parse_recipe("[verify]\ncommand = 'x'\n", "x.toml")


def test_load_recipe_names_the_path(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(stern_with("strip_dirs = 0", 'strip_dirs = "one"'))
    with pytest.raises(RecipeParseError, match=f"^{path}: steps"):
        load_recipe(path)
    path.write_bytes(b"\xff\xfe")
    with pytest.raises(RecipeParseError, match="not UTF-8"):
        load_recipe(path)


# ------------------------------------------------------------------------ hypothesis

names = st.text(string.ascii_lowercase + string.digits + "-_", min_size=1, max_size=12)
text = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=30
)
words = st.lists(text, max_size=3).map(tuple)
scalars = st.one_of(
    text,
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
)
toml_values: st.SearchStrategy[Any] = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=8,
)


def fields_of(struct: type[msgspec.Struct]) -> set[str]:
    """Keys a Struct models; generated unknown keys must avoid them. ``extra`` itself
    is fair game: a TOML key named "extra" must survive too."""
    return set(struct.__struct_fields__) - {"extra", "params"}


def extras(reserved: set[str]) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(text.filter(lambda k: k not in reserved), toml_values, max_size=3)


repos = st.builds(lambda o, r: f"{o}/{r}", names, names)
rel_paths = st.lists(names, min_size=1, max_size=3).map("/".join)
asset_patterns = st.lists(
    st.sampled_from(["tool", "-", "_", "{version}", "{os}", "{arch}", ".tar.gz", "v", "*"]),
    min_size=1,
    max_size=6,
).map("".join)
binaries = st.lists(
    st.one_of(rel_paths.map(Binary), st.builds(Binary, rel_paths, rel_paths)),
    min_size=1,
    max_size=3,
).map(tuple)
mappings = st.none() | st.dictionaries(names, names, max_size=2)
opt = st.none

os_or_platform = st.one_of(
    st.fixed_dictionaries({"os": opt() | words}),
    st.fixed_dictionaries(
        {
            "platform": st.lists(st.sampled_from(["linux/amd64", "darwin/arm64"]), max_size=2).map(
                tuple
            )
        }
    ),
)
whens = st.none() | os_or_platform.flatmap(
    lambda where: st.builds(
        When,
        **{k: st.just(v) for k, v in where.items()},
        arch=opt() | st.lists(names, min_size=1, max_size=2).map(tuple),
        linux_family=opt() | names,
        libc=opt() | st.lists(st.sampled_from(["glibc", "musl"]), max_size=2).map(tuple),
        gpu=opt() | words,
        extra=extras(fields_of(When)),
    )
)
common = {
    "when": whens,
    "phase": opt() | text,
    "note": opt() | text,
    "description": opt() | text,
    "dependencies": opt() | words,
}
ARCHIVE_KEYS = set(RESERVED_STEP_KEYS) | fields_of(GitHubArchiveStep)
archive_steps = st.builds(
    GitHubArchiveStep,
    repo=repos,
    asset_pattern=asset_patterns.filter(lambda p: "*" not in p),
    archive_format=opt() | st.sampled_from(["tar.gz", "tgz", "zip", "TAR.XZ"]),
    strip_dirs=opt() | st.integers(0, 5),
    install_mode=opt() | st.sampled_from(["binaries", "directory", "Directory"]),
    binaries=binaries,
    os_mapping=mappings,
    arch_mapping=mappings,
    checksum_asset=opt() | names,
    extra=extras(ARCHIVE_KEYS),
    **common,
)
named_binaries = st.lists(st.builds(Binary, rel_paths, rel_paths), min_size=1, max_size=2).map(
    tuple
)
file_binaries = st.one_of(
    st.fixed_dictionaries({"binary": rel_paths, "binaries": opt() | binaries}),
    st.fixed_dictionaries({"binary": st.none(), "binaries": named_binaries}),
)
file_steps = file_binaries.flatmap(
    lambda b: st.builds(
        GitHubFileStep,
        repo=repos,
        asset_pattern=asset_patterns,
        binary=st.just(b["binary"]),
        binaries=st.just(b["binaries"]),
        os_mapping=mappings,
        arch_mapping=mappings,
        extra=extras(set(RESERVED_STEP_KEYS) | fields_of(GitHubFileStep)),
        **common,
    )
)
urls = names.map(lambda n: f"https://example.com/{n}/{{version}}")
download_steps = st.builds(
    DownloadStep,
    action=st.sampled_from(["download", "download_file"]),
    url=urls,
    dest=opt() | rel_paths,
    checksum=opt() | st.just("ab" * 32),
    checksum_url=opt() | urls,
    os_mapping=mappings,
    arch_mapping=mappings,
    extra=extras(set(RESERVED_STEP_KEYS) | fields_of(DownloadStep)),
    **common,
)
archive_url_steps = st.builds(
    DownloadArchiveStep,
    url=urls,
    archive_format=opt() | st.sampled_from(["tar.gz", "zip"]),
    strip_dirs=opt() | st.integers(0, 3),
    binaries=binaries,
    install_mode=opt() | st.sampled_from(["binaries", "directory"]),
    extra=extras(set(RESERVED_STEP_KEYS) | fields_of(DownloadArchiveStep)),
    **common,
)
work_steps = st.one_of(
    st.builds(ExtractStep, archive=rel_paths, format=opt() | st.just("tar.xz"), **common),
    st.builds(ChmodStep, files=st.lists(rel_paths, min_size=1).map(tuple), **common),
    st.builds(InstallBinariesStep, binaries=binaries, **common),
)
generic_steps = st.builds(
    GenericStep,
    action=names.filter(
        lambda a: (
            a
            not in (
                "github_archive",
                "github_file",
                "download",
                "download_file",
                "download_archive",
            )
            and a not in ("extract", "chmod", "install_binaries", "homebrew")
        )
    ),
    params=extras(set(RESERVED_STEP_KEYS)),
    **common,
)
recipes = st.builds(
    Recipe,
    metadata=st.builds(
        Metadata,
        name=names,
        description=opt() | text,
        homepage=opt() | text,
        curated=opt() | st.booleans(),
        tier=opt() | st.integers(0, 3),
        supported_os=opt() | words,
        supported_libc=opt() | st.lists(st.sampled_from(["glibc", "musl"]), max_size=2).map(tuple),
        unsupported_platforms=opt()
        | st.lists(st.sampled_from(["darwin/amd64", "linux/arm64/musl"]), max_size=2).map(tuple),
        satisfies=opt() | st.dictionaries(names, words, max_size=2),
        generated_by=opt() | text,
        validated_at=opt() | st.just("2025-01-01T00:00:00Z"),
        asset_sha256=opt() | st.dictionaries(text, st.just("0" * 64), max_size=2),
        extra=extras(fields_of(Metadata)),
    ),
    version=opt()
    | st.builds(
        VersionSection,
        source=opt() | names,
        github_repo=opt() | repos,
        tag_prefix=opt() | text,
        url=opt() | urls,
        version_path=opt() | names,
        extra=extras(fields_of(VersionSection)),
    ),
    steps=st.lists(
        st.one_of(
            archive_steps, file_steps, generic_steps, download_steps, archive_url_steps, work_steps
        ),
        max_size=3,
    ).map(tuple),
    verify=opt()
    | st.builds(
        Verify,
        command=opt() | text,
        pattern=opt() | text,
        exit_code=opt() | st.integers(0, 255),
        additional=opt()
        | st.lists(st.builds(VerifyAdditional, command=text, pattern=opt() | text), max_size=2).map(
            tuple
        ),
    ),
    extra=extras(fields_of(Recipe)),
)


# Among the slowest tests (issue 26): 300 generated recipes through the real TOML writer and
# reader (examples(300)).
@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(recipes)
def test_generated_recipes_round_trip(recipe: Recipe) -> None:
    text = dump_recipe(recipe)
    assert parse_recipe(text, "generated.toml") == recipe


@pytest.mark.parametrize(
    "text",
    [
        '[metadata]\nname = "jq"\nname = "evil"\n',
        '[metadata]\nname = "jq"\n[[steps]]\naction = "download"\naction = "run"\n',
    ],
)
def test_a_recipe_naming_a_key_twice_is_refused_with_its_line(text: str) -> None:
    # Issue 31: a recipe must mean one thing to every reader (TOML refuses a repeat).
    with pytest.raises(RecipeParseError, match=r"invalid TOML: Cannot overwrite a value \(at line"):
        parse_recipe(text)
