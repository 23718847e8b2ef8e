"""Validating a recipe written from a Homebrew formula, like any recipe: in the container.

The bottle and its runtime dependencies' bottles are poured the way the installer pours
them (``install/homebrew/pour.py`` looks each bottle up, ``validation/validator.py``
downloads it with the registry's token, checks it against the manifest digest, unpacks
it and relocates it with the installer's ``relocate_keg``), each into a throw-away tree
of the validation run. Relocation writes container paths: the tool is seen at
``/tsuku/tool``, each dependency at ``/tsuku/deps/<name>``, so the ``$ORIGIN``-relative
RPATHs and the system loader resolve inside the container exactly as they will under
``$TSUKU_HOME/tools``. The recipe's verify command then runs in the locked-down
container with those trees mounted read-only.

Dependencies are read from their recipes (local, then the registry), as an install
reads them: a dependency without a recipe or a cycle is refused with the installer's
own error, since the recipe could not be installed either.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import msgspec

from tsukud.errors import SandboxError, TsukuError
from tsukud.install.homebrew.client import HomebrewClient
from tsukud.install.homebrew.deps import dependency_graph, install_order
from tsukud.install.homebrew.pour import find_bottles
from tsukud.progress import Emit, Progress
from tsukud.recipe import Recipe, ResolvedVersion, UnsupportedPlatform, parse_recipe
from tsukud.recipe.homebrew import formula_of
from tsukud.recipe.release import Release
from tsukud.validation.errors import ValidationFailed
from tsukud.validation.summary import (
    ValidationSummary,
    validation_summary,
    validation_unavailable,
    verdict_event,
)
from tsukud.validation.validator import (
    CONTAINER_DIR,
    Pour,
    Prepared,
    ValidatedAsset,
    ValidationRun,
    Validator,
    Verdict,
    container_platform,
)

DEPS_DIR = "/tsuku/deps"
SKIPPED = "--skip-validation: the bottle was NOT poured or run in a container"

Load = Callable[[str], Awaitable[Recipe]]


class BottleValidation:
    """One create run's validation of a ``homebrew`` recipe (``skip``: the user's
    ``--skip-validation``)."""

    def __init__(
        self,
        *,
        validator: Callable[[], Validator],
        client: HomebrewClient,
        load: Load,
        emit: Emit,
        progress: Progress,
        session: str,
        clean: Callable[[str], str],
        skip: bool = False,
    ) -> None:
        self._validator = validator
        self.client = client
        self.load = load
        self.emit = emit
        self.progress = progress
        self.session = session
        self.clean = clean
        self.skip = skip

    async def __call__(self, text: str, resolved: ResolvedVersion) -> ValidationSummary:
        """The recipe ``text`` at ``resolved`` poured and verified; a failed verify is
        :class:`ValidationFailed` naming the command and what it printed."""
        if self.skip:
            await self.emit("validation.skipped", {"reason": SKIPPED})
            return ValidationSummary(
                status="skipped", platform=container_platform().key, message=SKIPPED
            )
        recipe = parse_recipe(text)
        validator = self._validator()
        try:
            await validator.check_ready()
        except SandboxError as exc:
            reason = self.clean(exc.message)
            await self.emit("validation.skipped", {"reason": reason})
            raise validation_unavailable(reason, exc.code) from None
        where = validator.platform.key
        await self.progress(
            {
                "stage": "validating",
                "message": f"pouring the bottles of {recipe.metadata.name} and running its "
                f"verify command on {where} in a container",
                "attempt": 1,
            }
        )
        await self.emit(
            "validation.started", {"attempt": 1, "platform": where, "image": validator.image}
        )
        try:
            async with validator.session(self.session, self.progress) as vrun:
                verdict = await self._pour_and_verify(vrun, recipe, resolved)
        except TsukuError as exc:  # a missing dependency, a tampered bottle: the install's error
            failed = Verdict(
                status="failed",
                stage="pour",
                platform=where,
                image=validator.image,
                version=resolved.version,
                message=exc.message,
                category=exc.code,
            )
            await self.emit("validation.failed", verdict_event(failed, 1, self.clean))
            raise
        await self.emit(f"validation.{verdict.status}", verdict_event(verdict, 1, self.clean))
        if verdict.status == "skipped" and verdict.stage == "runtime":  # it went away
            raise validation_unavailable(self.clean(verdict.message), None)
        if verdict.failed:
            raise refused(recipe, verdict, self.clean)
        return validation_summary(verdict, 1, self.clean)

    async def _pour_and_verify(
        self, vrun: ValidationRun, recipe: Recipe, resolved: ResolvedVersion
    ) -> Verdict:
        name = recipe.metadata.name
        graph = await dependency_graph(recipe, self.load)
        placed: dict[str, str] = {}  # dependency → its container directory
        formulas: dict[str, str] = {}  # dependency → the formula its recipe installs
        mounts = []
        poured: list[ValidatedAsset] = []  # the dependencies' bottles
        for dep in install_order(name, graph):
            dep_recipe = await self.load(dep)
            formula = formula_of(dep_recipe)
            if formula is None:
                return Verdict(
                    status="failed",
                    stage="pour",
                    platform=vrun.platform.key,
                    image=vrun.validator.image,
                    version=resolved.version,
                    message=f"{name} needs {dep}, whose recipe installs no Homebrew bottle; "
                    "validation pours bottles only",
                )
            await self.progress({"stage": "validating", "message": f"pouring {dep}"})
            below = install_order(dep, graph)
            own = {d: placed[d] for d in below}
            at = f"{DEPS_DIR}/{dep}"
            resolved_dep = await self.client.resolve(formula, None)
            own_formulas = {d: formulas[d] for d in below}
            prepared = await self._pour(vrun, dep_recipe, resolved_dep, at, own, own_formulas)
            if prepared.failure is not None:  # the tool cannot install without it
                f = prepared.failure
                return Verdict(
                    status="failed",
                    stage=f.stage,
                    platform=f.platform,
                    image=f.image,
                    version=resolved.version,
                    message=f"dependency {dep}: {f.message}",
                    category=f.category,
                    assets=f.assets,
                )
            assert prepared.root is not None
            placed[dep] = at
            formulas[dep] = formula
            mounts.append((prepared.root, at))
            poured.extend(prepared.assets)
        prepared = await self._pour(vrun, recipe, resolved, CONTAINER_DIR, placed, formulas)
        if prepared.failure is not None:
            return prepared.failure
        prepared.mounts = tuple(mounts)
        verdict = await prepared.verify(recipe.verify)
        return msgspec.structs.replace(verdict, assets=(*verdict.assets, *poured))

    async def _pour(
        self,
        vrun: ValidationRun,
        recipe: Recipe,
        resolved: ResolvedVersion,
        at: str,
        deps: dict[str, str],
        formulas: dict[str, str],
    ) -> Prepared:
        """One recipe's bottles poured into a tree of the run, relocated for ``at``
        against its dependencies at ``deps`` installing ``formulas``."""
        platform = vrun.platform
        try:
            bottles = await find_bottles(self.client, recipe, resolved, platform)
        except UnsupportedPlatform as exc:
            prepared = Prepared(
                vrun, root=None, version=resolved.version, tag=resolved.tag, platform=platform
            )
            prepared.failure = prepared.verdict("skipped", "render", message=exc.message)
            return prepared
        pour = Pour(
            version=resolved.version, bottles=bottles, placed_at=at, deps=deps, formulas=formulas
        )
        return await vrun.prepare(recipe, Release(tag=resolved.tag, assets=()), pour=pour)


def refused(recipe: Recipe, verdict: Verdict, clean: Callable[[str], str]) -> ValidationFailed:
    """The typed error for a recipe whose bottle did not pass: what ran, what it said."""
    name = recipe.metadata.name
    if verdict.command is not None:
        said = clean(verdict.output.strip()) or "(nothing)"
        what = (
            f"`{verdict.command}` in the container exited with {verdict.exit_code} and "
            f"printed:\n{said}\n{clean(verdict.message)}"
        )
    else:
        what = f"{verdict.stage}: {clean(verdict.message)}"
    return ValidationFailed(
        f"the recipe for {name} did not validate: {what}",
        hint=verdict.hint
        or "Nothing was written. Check the formula's bottle and its --version output, "
        "or write the recipe by hand (--skip-validation writes it without this proof).",
    )
