"""A generated recipe installs only what was validated: its version and its pinned files.

``create`` (and the instructions builder) validate a recipe in the container at one
release and write what they proved into it: ``metadata.validated_version`` and, in
``asset_sha256``, the sha256 of every file validated there. Such a recipe is *generated
and pinned*: no person wrote it, and the only release anyone ran is that one. So it
installs at that version and no other, and only files whose checksum it pins; another
release (a newer one, a pre-release asked for by name) is refused before anything is
downloaded, with the command that validates and pins it. Nothing of an unvalidated
release reaches the host, its verify command included.

A recipe without ``validated_version`` (the registry's, written and reviewed by people,
or one created with ``--skip-validation``, which the person chose) keeps tsuku's usual
trust: any release it resolves, checked against GitHub's digest and its checksums.
"""

from __future__ import annotations

from tsukud.install.errors import VersionNotValidated
from tsukud.recipe import EcosystemStep, Recipe, RecipeError, normalize_version, version_source
from tsukud.recipe.homebrew import formula_of


def validated_version(recipe: Recipe) -> str | None:
    """The one version a generated recipe may install, or None for a recipe people wrote."""
    return recipe.metadata.validated_version or None


def is_validated(recipe: Recipe, version: str) -> bool:
    """May ``recipe`` install ``version``? Always for a recipe people wrote."""
    validated = validated_version(recipe)
    return validated is None or normalize_version(validated) == normalize_version(version)


def create_source(recipe: Recipe) -> str:
    """The ``create --from`` source ``recipe`` was most likely generated from."""
    from tsukud.source import BadSource, EcosystemPackage, HomebrewFormula, parse_github

    for step in recipe.steps:
        if isinstance(step, EcosystemStep):
            return str(EcosystemPackage(step.record.prefix, step.package_name))
    formula = formula_of(recipe)
    if formula is not None:
        return str(HomebrewFormula(formula))
    try:
        return str(parse_github(version_source(recipe).repo or ""))
    except (RecipeError, BadSource):
        return "<its source>"


def revalidate_command(recipe: Recipe, version: str) -> str:
    """The command that validates ``version`` in the container and pins it."""
    name = recipe.metadata.name
    return f"tsukuctl create {name} --from {create_source(recipe)} --version {version} --force"


def require_validated(recipe: Recipe, version: str) -> None:
    """Refuse ``version`` of a generated recipe validated at another one (before any
    download: nothing of it reaches the host)."""
    if is_validated(recipe, version):
        return
    name, validated = recipe.metadata.name, validated_version(recipe)
    raise VersionNotValidated(
        f"{name} {version} was never validated: its recipe was generated, validated and "
        f"pinned at {validated}, and tsuku installs a generated recipe only at the version "
        "it validated",
        hint=f"Install the validated version (`tsukuctl install {name}@{validated}`), or "
        f"validate {version} in the container and pin it first: "
        f"`{revalidate_command(recipe, version)}`. Nothing was downloaded.",
        tool=name,
        version=version,
        validated_version=validated,
    )


def require_pinned_asset(recipe: Recipe, version: str, asset_name: str) -> str | None:
    """The sha256 the recipe pins for ``asset_name``, or None for a recipe people wrote.

    A generated recipe that pins files (``asset_sha256``) installs none it does not
    pin: a file for another platform than the ones validated was never run."""
    pins = recipe.metadata.asset_sha256
    if validated_version(recipe) is None or pins is None:
        return None
    require_validated(recipe, version)
    pinned = pins.get(asset_name)
    if pinned is None:
        name = recipe.metadata.name
        raise VersionNotValidated(
            f"{name}: {asset_name} was never validated: the recipe pins "
            f"{', '.join(sorted(pins)) or 'no files'} (validated on "
            f"{recipe.metadata.validation_platform or 'another platform'})",
            hint="A generated recipe installs only the files validated in the container; "
            "validate it for this platform first "
            f"(`{revalidate_command(recipe, version)}`). Nothing was installed.",
            tool=name,
            version=version,
            asset=asset_name,
        )
    return pinned
