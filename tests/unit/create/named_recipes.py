"""Recipes for the cases issue 13 names, written the way tsuku's registry writes them:
aws-nuke's versioned, platform-named binary renamed on install, nix-portable's
arch-only bare executables verified through ``{install_dir}``, kustomize's monorepo
tags (in tsuku's form and in the registry's prefix-without-github_repo form), and a
tool whose Linux and macOS builds differ in more than the asset name.
"""

from __future__ import annotations

AWS_NUKE = """
[metadata]
name = "aws-nuke"
[[steps]]
action = "github_archive"
repo = "ekristen/aws-nuke"
asset_pattern = "aws-nuke-v{version}-{os}-{arch}.tar.gz"
binaries = [{ src = "aws-nuke-v{version}-{os}-{arch}", dest = "bin/aws-nuke" }]
[verify]
command = "aws-nuke version"
pattern = "{version}"
"""

NIX_PORTABLE = """
[metadata]
name = "nix-portable"
supported_os = ["linux"]
[[steps]]
action = "github_file"
repo = "DavHau/nix-portable"
asset_pattern = "nix-portable-{arch}"
arch_mapping = { amd64 = "x86_64", arm64 = "aarch64" }
binary = "nix-portable"
[verify]
command = "{install_dir}/bin/nix-portable --version"
pattern = "{version}"
"""

KUSTOMIZE = """
[metadata]
name = "kustomize"
[version]
source = "github_releases"
github_repo = "kubernetes-sigs/kustomize"
tag_prefix = "kustomize/v"
[[steps]]
action = "github_archive"
repo = "kubernetes-sigs/kustomize"
asset_pattern = "kustomize_v{version}_{os}_{arch}.tar.gz"
binaries = ["kustomize"]
[verify]
command = "kustomize version"
pattern = "v{version}"
"""

# The registry's own spelling: a tag_prefix without github_repo, which the installer
# ignores (normalisation turns kustomize/v5.4.2 into 5.4.2).
KUSTOMIZE_REFERENCE = KUSTOMIZE.replace(
    'source = "github_releases"\ngithub_repo = "kubernetes-sigs/kustomize"\n'
    'tag_prefix = "kustomize/v"',
    'tag_prefix = "kustomize/"',
)
assert KUSTOMIZE_REFERENCE != KUSTOMIZE
KUSTOMIZE_TAGS = ("kustomize/v5.4.2", "api/v0.17.3", "kustomize/v5.4.1", "kyaml/v0.17.2",
                  "kustomize/v5.3.0")  # fmt: skip

# Linux names say x86_64/aarch64 and darwin names amd64/arm64, the archive keeps the
# platform in its directory, and the darwin build is a zip with no directory.
SPLIT = """
[metadata]
name = "splitter"
[[steps]]
action = "github_archive"
when = { os = ["linux"] }
repo = "acme/splitter"
asset_pattern = "splitter-{version}-{os}-{arch}.tar.gz"
arch_mapping = { amd64 = "x86_64", arm64 = "aarch64" }
strip_dirs = 0
binaries = [{ src = "splitter-{os}-{arch}/splitter", dest = "bin/splitter" }]
[[steps]]
action = "github_archive"
when = { os = ["darwin"] }
repo = "acme/splitter"
asset_pattern = "splitter_{version}_macOS_{arch}.zip"
binaries = ["splitter"]
[verify]
command = "splitter --version"
pattern = "{version}"
"""

# Naming changed between releases (charm 0.12.4 → 0.12.6): version-ranged steps, the
# newest naming first. Darwin builds exist only from 0.12.5 on.
CHARM = """
[metadata]
name = "charm"

[version]
source = "github_releases"
github_repo = "charmbracelet/charm"

[[steps]]
action = "github_archive"
when = { version = ">=0.12.5" }
repo = "charmbracelet/charm"
asset_pattern = "charm_{version}_{os}_{arch}.tar.gz"
os_mapping = { linux = "Linux", darwin = "Darwin" }
arch_mapping = { amd64 = "x86_64" }
binaries = ["charm"]

[[steps]]
action = "github_archive"
when = { os = ["linux"], version = "<0.12.5" }
repo = "charmbracelet/charm"
asset_pattern = "charm_{version}_{os}_{arch}.tar.gz"
arch_mapping = { amd64 = "x86_64" }
binaries = ["charm"]

[verify]
command = "charm --version"
"""

CASES = {
    "aws-nuke": AWS_NUKE,
    "nix-portable": NIX_PORTABLE,
    "kustomize": KUSTOMIZE,
    "kustomize-reference": KUSTOMIZE_REFERENCE,
    "split": SPLIT,
}
