"""The ecosystem actions' framework: recipe entries, registry readers, version choice,
toolchain lookup and the prefix's subprocess and executables."""

from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path

import pytest
import trio

from tsukud.errors import ExitCode, exit_code_for
from tsukud.install.checks import verify_env
from tsukud.install.ecosystem import pipx, toolchain
from tsukud.install.ecosystem.actions import ACTIONS, registry_urls
from tsukud.install.ecosystem.prefix import (
    EcosystemInstallFailed,
    Prefix,
    clean_env,
    record_executables,
    run,
)
from tsukud.install.ecosystem.versions import choose
from tsukud.recipe import (
    EcosystemStep,
    Platform,
    RecipeError,
    RecipeParseError,
    UnsupportedAction,
    UnsupportedFeature,
    VersionNotFound,
    dump_recipe,
    parse_recipe,
    require_supported,
    unsupported_actions,
)
from tsukud.recipe.model import RUNNABLE_ECOSYSTEM_ACTIONS
from tsukud.registries import crates, goproxy, npm, pypi, rubygems
from tsukud.registries.ecosystems import BY_ACTION

LINUX = Platform("linux", "amd64", "glibc")


def _recipe(action: str, key: str, package: str, executables: str = '["tool"]') -> str:
    return (
        f'[metadata]\nname = "tool"\n\n[[steps]]\naction = "{action}"\n'
        f'{key} = "{package}"\nexecutables = {executables}\n\n'
        '[verify]\ncommand = "tool --version"\npattern = "{version}"\n'
    )


CASES = [
    ("npm_install", "package", "@scope/tool"),
    ("pipx_install", "package", "black"),
    ("cargo_install", "crate", "ripgrep"),
    ("gem_install", "gem", "rubocop"),
    ("go_install", "module", "golang.org/x/tools/cmd/goimports"),
]


@pytest.mark.parametrize(("action", "key", "package"), CASES)
def test_each_action_parses_and_renders_in_the_registry_style(
    action: str, key: str, package: str
) -> None:
    text = _recipe(action, key, package)
    recipe = parse_recipe(text)
    (step,) = recipe.steps
    assert isinstance(step, EcosystemStep) and step.action == action
    assert step.package_name == package and step.executables == ("tool",)
    assert key == step.record.package_key
    assert dump_recipe(recipe) == text  # package before executables, as the registry writes


@pytest.mark.parametrize(
    ("action", "key", "package"),
    [
        ("npm_install", "package", "git+https://evil.example/x.git"),
        ("npm_install", "package", "../local"),
        ("npm_install", "package", "-g"),
        ("pipx_install", "package", "https://evil.example/x.whl"),
        ("pipx_install", "package", "black[d]==1.0"),
        ("cargo_install", "crate", "--git"),
        ("gem_install", "gem", "../x"),
        ("go_install", "module", "example.com/../x"),
        ("go_install", "module", "tool"),
    ],
)
def test_a_package_that_is_not_a_registry_name_is_refused(
    action: str, key: str, package: str
) -> None:
    with pytest.raises(RecipeParseError, match=f"steps\\[0\\].{key}: expected"):
        parse_recipe(_recipe(action, key, package))


def test_executables_are_command_names() -> None:
    with pytest.raises(RecipeParseError, match=r"executables\[0\]: expected a command name"):
        parse_recipe(_recipe("npm_install", "package", "tool", '["../bin/x"]'))
    bare = parse_recipe(_recipe("npm_install", "package", "tool").replace('"tool"]', "]"))
    with pytest.raises(RecipeError, match="needs executables"):
        require_supported(bare, LINUX)


def test_support_rules() -> None:
    npm_recipe = parse_recipe(_recipe("npm_install", "package", "tool"))
    assert [s.action for _, s in require_supported(npm_recipe, LINUX)] == ["npm_install"]
    assert unsupported_actions(npm_recipe) == []
    mixed = parse_recipe(
        _recipe("npm_install", "package", "tool") + '\n[[steps]]\naction = "chmod"\nfiles = ["x"]\n'
    )
    with pytest.raises(UnsupportedFeature, match="cannot be combined"):
        require_supported(mixed, LINUX)
    pinned_elsewhere = parse_recipe(
        _recipe("pipx_install", "package", "tool") + '\n[version]\nsource = "npm"\n'
    )
    with pytest.raises(UnsupportedFeature, match="its versions come from pypi"):
        require_supported(pinned_elsewhere, LINUX)
    for action, key, package in CASES:
        recipe = parse_recipe(_recipe(action, key, package))
        if action in RUNNABLE_ECOSYSTEM_ACTIONS:
            assert require_supported(recipe, LINUX)
        else:
            with pytest.raises(UnsupportedAction, match=f"action {action} is not supported"):
                require_supported(recipe, LINUX)
            assert unsupported_actions(recipe) == [action]


def test_the_action_registry_matches_the_recipe_model() -> None:
    assert set(ACTIONS) == set(BY_ACTION)
    assert {a for a, e in ACTIONS.items() if e.runner is not None} == RUNNABLE_ECOSYSTEM_ACTIONS
    for name, entry in ACTIONS.items():
        assert entry.version_source == BY_ACTION[name].version_source
    urls = registry_urls(lambda key: f"https://{key}")
    assert urls["npm"] == "https://discover.npm_url"
    assert urls["pypi"] == "https://discover.pypi_url"


# ------------------------------------------------------------------ registry readers


def test_npm_packument() -> None:
    doc = {
        "name": "@fake/tool",
        "dist-tags": {"latest": "1.0.0"},
        "versions": {
            "1.0.0": {"bin": "cli.js"},
            "2.0.0-rc.1": {"bin": {"tool": "a.js", "tool-extra": "b.js", "../x": "c.js"}},
        },
    }
    assert npm.latest(doc) == "1.0.0"  # the tag, not the highest version
    assert npm.versions(doc) == ["1.0.0", "2.0.0-rc.1"]
    assert npm.executables(npm.manifest(doc, "1.0.0"), "@fake/tool") == ["tool"]
    assert npm.executables(npm.manifest(doc, "2.0.0-rc.1"), "@fake/tool") == [
        "tool",
        "tool-extra",
    ]
    assert npm.packument_url("http://r/", "@fake/tool") == "http://r/@fake%2ftool"
    assert npm.latest("garbage") is None and npm.versions(None) == []


def test_pypi_project_and_entry_points() -> None:
    doc = {
        "info": {"name": "Hello_Py", "version": "1.1"},
        "releases": {"1.0": [{"yanked": True}], "1.1": [{"yanked": False}], "0.9": []},
        "urls": [
            {"packagetype": "sdist", "url": "u", "filename": "f.tar.gz"},
            {"packagetype": "bdist_wheel", "url": "w", "filename": "f-1.1-py3-none-any.whl"},
        ],
    }
    assert pypi.latest(doc) == "1.1"
    assert pypi.versions(doc) == ["1.1"]
    assert [w["url"] for w in pypi.wheels(doc)] == ["w"]
    assert pypi.project_url("http://p/", "Hello_Py") == "http://p/pypi/hello-py/json"
    assert pypi.simple_url("http://p") == "http://p/simple/"
    text = (
        "[console_scripts]\nHello = hello.cli:main\nhello-admin = hello.admin:main [extra]\n"
        "[gui_scripts]\nhello-gui = hello.gui:main\n[other]\nx = y:z\n"
    )
    assert pypi.console_scripts(text) == ["Hello", "hello-admin", "hello-gui"]
    assert pypi.console_scripts("not ini [") == []


def test_crates_rubygems_goproxy() -> None:
    crate = {
        "crate": {"max_stable_version": "1.2.0", "max_version": "2.0.0-beta"},
        "versions": [
            {"num": "2.0.0-beta", "yanked": False, "bin_names": None},
            {"num": "1.2.0", "yanked": False, "bin_names": ["rg"]},
            {"num": "1.1.0", "yanked": True},
        ],
    }
    assert crates.latest(crate) == "1.2.0"
    assert crates.versions(crate) == ["2.0.0-beta", "1.2.0"]
    assert crates.bin_names(crate, "1.2.0") == ["rg"]
    assert crates.bin_names(crate, "2.0.0-beta") is None
    gems = [
        {"number": "2.0.0.pre", "prerelease": True},
        {"number": "1.5.0", "prerelease": False, "platform": "java"},
        {"number": "1.5.0", "prerelease": False, "platform": "ruby"},
    ]
    assert rubygems.latest(gems) == "1.5.0"
    assert rubygems.versions(gems) == ["2.0.0.pre", "1.5.0"]
    assert goproxy.escape("github.com/BurntSushi/toml") == "github.com/!burnt!sushi/toml"
    assert goproxy.list_url("http://g/", "example.com/Fake/x") == (
        "http://g/example.com/!fake/x/@v/list"
    )
    assert goproxy.versions("v1.0.0\n\nv1.1.0\n") == ["v1.0.0", "v1.1.0"]
    assert goproxy.info_version({"Version": "v1.1.0"}) == "v1.1.0"


def test_choose_the_version_to_pin() -> None:
    assert choose((["1.0.0", "1.1.0"], "1.0.0"), None, "npm package x").version == "1.0.0"
    go = choose((["v1.0.0", "v1.2.0", "v1.3.0-rc1"], None), None, "go x")
    assert (go.version, go.tag) == ("1.2.0", "v1.2.0")
    assert choose((["v1.0.0"], None), "1.0.0", "go x").tag == "v1.0.0"
    with pytest.raises(VersionNotFound) as info:
        choose((["1.0.0", "1.1.0"], "1.1.0"), "1.0.9", "npm package x")
    assert "1.1.0" in (info.value.hint or "")


# ------------------------------------------------------------------ toolchain, prefix


def test_a_missing_toolchain_names_the_program_and_how_to_get_it(tmp_path: Path) -> None:
    with pytest.raises(toolchain.ToolchainMissing) as info:
        toolchain.find(BY_ACTION["npm_install"].toolchain, {"PATH": str(tmp_path)})
    exc = info.value
    assert exc.code == "toolchain_missing"
    assert exit_code_for(exc.code) == ExitCode.TOOLCHAIN_MISSING == 34
    assert "npm is not on PATH" in exc.message
    assert "apt-get install npm" in (exc.hint or "") and "nodejs.org" in (exc.hint or "")
    fake = tmp_path / "npm"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    assert toolchain.find(BY_ACTION["npm_install"].toolchain, {"PATH": str(tmp_path)}) == fake


def test_python_without_venv_is_a_missing_toolchain(tmp_path: Path) -> None:
    broken = tmp_path / "python3"
    broken.write_text("#!/bin/sh\necho 'No module named ensurepip' >&2\nexit 1\n")
    broken.chmod(0o755)

    async def main() -> None:
        with pytest.raises(toolchain.ToolchainMissing, match="cannot install PyPI") as info:
            await toolchain.check_works(pipx.TOOLCHAIN, broken, {"PATH": "/usr/bin:/bin"})
        assert "python3-venv" in (info.value.hint or "")

    trio.run(main)


def _prefix(tmp_path: Path) -> Prefix:
    prefix = Prefix("tool", tmp_path / "tools" / "tool-1.0.0", tmp_path / "scratch")
    prefix.prepare()
    return prefix


def test_the_package_manager_sees_a_clean_environment(tmp_path: Path) -> None:
    prefix = _prefix(tmp_path)
    daemon_env = {
        "PATH": "/usr/bin:/bin",
        "ANTHROPIC_API_KEY": "sk-ant-secret",
        "GITHUB_TOKEN": "ghp_secret",
        "NPM_CONFIG_REGISTRY": "http://elsewhere",
        "PIP_INDEX_URL": "http://elsewhere",
        "HOME": "/root",
    }
    env = clean_env(prefix, Path("/opt/node/bin/npm"), daemon_env, {"X": "1"})
    assert env["PATH"].split(":") == ["/opt/node/bin", "/usr/bin", "/bin"]
    assert env["HOME"] == str(prefix.home) and env["X"] == "1"
    assert set(env) == {"PATH", "HOME", "TMPDIR", "LANG", "NO_COLOR", "X"}
    # The certificates the daemon trusts (a TLS-inspecting proxy's CA) reach it too,
    # through the same filter as a verify command's environment.
    trusted = {"SSL_CERT_FILE": "/etc/corp-ca.pem", "NODE_EXTRA_CA_CERTS": "/etc/corp-ca.pem"}
    env = clean_env(prefix, Path("/opt/node/bin/npm"), verify_env({**daemon_env, **trusted}))
    assert {k: env[k] for k in trusted} == trusted and "GITHUB_TOKEN" not in env

    async def main() -> None:
        out = await run(["/bin/sh", "-c", "env; pwd"], prefix=prefix, env=env, what="env")
        assert "secret" not in out and "elsewhere" not in out
        assert out.splitlines()[-1] == str(prefix.root)
        with pytest.raises(EcosystemInstallFailed) as info:
            await run(
                ["/bin/sh", "-c", "echo downloading; echo 'E404 not found' >&2; exit 3"],
                prefix=prefix,
                env=env,
                what="npm install",
            )
        assert info.value.message.startswith("tool: npm install failed (exit 3):")
        assert "E404 not found" in info.value.message
        assert exit_code_for(info.value.code) == ExitCode.INSTALL_FAILED

    trio.run(main)


def test_executables_are_recorded_or_the_install_fails(tmp_path: Path) -> None:
    prefix = _prefix(tmp_path)
    bin_dir = prefix.root / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "tool").write_text("#!/bin/sh\necho tool\n")
    (bin_dir / "tool").chmod(0o755)
    (bin_dir / "data").write_text("not executable")
    os.symlink("/bin/sh", bin_dir / "escape")
    recorded = record_executables(prefix, ["tool"], "venv/bin")
    assert recorded["tool"]["path"] == "venv/bin/tool"
    assert len(recorded["tool"]["sha256"]) == 64
    for missing in ("data", "escape", "absent"):
        with pytest.raises(EcosystemInstallFailed, match=f"no executable {missing} in venv/bin/"):
            record_executables(prefix, ["tool", missing], "venv/bin")


def test_entry_points_from_a_real_wheel() -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as whl:
        whl.writestr("hello-1.0.dist-info/entry_points.txt", "[console_scripts]\nhello = h:m\n")
    with zipfile.ZipFile(buf) as whl:
        text = whl.read("hello-1.0.dist-info/entry_points.txt").decode()
    assert pypi.console_scripts(text) == ["hello"]


def test_ecosystem_steps_are_one_family() -> None:
    # one Struct for every record's action, its record found by the action; a step of
    # an action no record declares cannot be made
    for action in BY_ACTION:
        step = EcosystemStep(action=action, package_name="tool")
        assert step.record is BY_ACTION[action]
    with pytest.raises(ValueError, match="no ecosystem's action"):
        EcosystemStep(action="github_archive", package_name="tool")
