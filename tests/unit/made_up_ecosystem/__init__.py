"""A made-up ecosystem (Quokka's pouches), added the way a real one is: a record in
``tsukud/registries/ecosystems.py``, its reader (``reader.py``, what a
``registries/<name>.py`` holds) and its runner (``runner.py``, what an
``install/ecosystem/<tool>.py`` holds). ``child.py`` loads the product with the record
written into ``ecosystems.py`` (in memory only) and nothing else changed, and reports
what tsuku then does with a recipe of its action (tests/unit/test_ecosystem_record.py).
"""

from __future__ import annotations

# What adding the ecosystem writes into ecosystems.py: the reader beside the others'
# imports, and the record in ECOSYSTEMS.
IMPORT = "from tests.unit.made_up_ecosystem import reader as quokka\n"
RECORD = """\
    Ecosystem(
        builder="quokka",
        prefix="quokka",
        label="Quokka",
        action="quokka_install",
        package_key="pouch",
        version_source="quokka_pouches",
        placeholder="<pouch>",
        name_kind="a pouch name",
        valid_name=quokka.valid_name,
        registry=_url("quokka", "https://pouches.quokka.invalid"),
        toolchain=Toolchain(
            program="quokka",
            ecosystem="Quokka pouches",
            debian_package="quokka",
            upstream="install Quokka from https://quokka.invalid/get",
        ),
        reader="tests.unit.made_up_ecosystem.reader",
        probe=quokka.probe,
        versions=VersionsDocument(quokka.pouch_url, quokka.versions, quokka.latest),
        runner="tests.unit.made_up_ecosystem.runner",
        plan_action="quokka_exec",
        plan_resolved=("lock_data", "quokka_version"),
        install_command="quokka add {name}",
        thresholds=(10, 2),
        priority=8,
        downloads_counted="downloads in all",
    ),
"""
