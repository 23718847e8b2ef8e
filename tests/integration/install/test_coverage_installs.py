"""``bench/registry_coverage.py``'s install half (``bench/_coverage_installs.py``): the
real installer, in-process, installs each recipe against a fake GitHub serving a
release synthesized for it, and counts per action; a recipe that needs any other host
fails offline, and one this project cannot install is counted, not attempted."""

from __future__ import annotations

from bench._coverage_installs import measure_installs
from tests.fakes.github import fixture_recipe_paths
from tsukud.recipe import (
    GitHubArchiveStep,
    GitHubFileStep,
    host_platform,
    load_recipe,
    parse_recipe,
)

ELSEWHERE = """
[metadata]
name = "elsewhere"
validated_version = "1.0.0"

[[steps]]
action = "download_archive"
url = "https://downloads.example.com/elsewhere-{version}-{os}-{arch}.tar.gz"
binaries = ["elsewhere"]

[verify]
command = "elsewhere --version"
"""

CARTON = """
[metadata]
name = "carton"
validated_version = "1.0.35"

[[steps]]
action = "cpan_install"
distribution = "Carton"
executables = ["carton"]
"""


def test_the_fixture_recipes_install_and_other_hosts_are_never_reached() -> None:
    recipes = [load_recipe(p) for p in fixture_recipe_paths()]
    archives = [r for r in recipes if isinstance(r.steps[0], GitHubArchiveStep)][:2]
    files = [r for r in recipes if isinstance(r.steps[0], GitHubFileStep)][:1]
    assert len(archives) == 2 and len(files) == 1
    chosen = [*archives, *files, parse_recipe(ELSEWHERE), parse_recipe(CARTON)]
    report = measure_installs(chosen, host_platform())
    assert dict(report.uses) == {
        "github_archive": 2,
        "github_file": 1,
        "download_archive": 1,
        "cpan_install": 1,
    }
    assert dict(report.installed) == {"github_archive": 2, "github_file": 1}
    # Neither CPAN's mirror (carton) nor elsewhere's host is reached: only a dead proxy.
    # (a dead proxy on loopback: unreachable at once, no retries)
    assert dict(report.failures) == {"network_unreachable": 2}
