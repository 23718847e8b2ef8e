"""Ecosystem actions: tools installed by a language's own package manager (one per
record of ``registries/ecosystems.py``) into the tool's own directory under
``$TSUKU_HOME/tools``.

* ``toolchain.py``: find the package manager on PATH, or say which one is missing and
  how to get it (``ToolchainMissing``, exit 34);
* ``prefix.py``: the tool's directory, a subprocess with a clean environment, and the
  named executables checked and recorded for ``bin/``;
* ``versions.py``: versions from each registry's API, through the shared HTTP layer;
* ``actions.py``: the registry of actions (name → toolchain, runner, drafter,
  validation's fetch, version source, registry URL setting), derived from the records;
* one runner module per package manager (the record's ``runner``): ``install``,
  create's ``draft`` and validation's ``fetch`` (``drafting.py`` and ``staging.py``
  are what those two answer).
"""
