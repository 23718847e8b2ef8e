"""Release fixtures: now in the package (``tsukud.testing.releases``), since the
offline demo serves them too. Re-exported for the tests."""

from tsukud.testing.releases import (
    MTIME,
    FakeAsset,
    FakeRelease,
    FakeRepo,
    archive,
    checksums_asset,
    compress,
    generic_asset,
    raw_tar,
    recipe_assets,
    recipe_repo,
    recorded_repo,
    script,
    tar_gz,
)

__all__ = [
    "MTIME",
    "FakeAsset",
    "FakeRelease",
    "FakeRepo",
    "archive",
    "checksums_asset",
    "compress",
    "generic_asset",
    "raw_tar",
    "recipe_assets",
    "recipe_repo",
    "recorded_repo",
    "script",
    "tar_gz",
]
