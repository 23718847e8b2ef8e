"""Proving a recipe works before anyone installs it: what create and the instructions
builder both use.

The host side downloads, unpacks and assembles with the installer's own helpers; the
container side runs the verify command with every isolation knob on
(:mod:`tsukud.sandbox`). Nothing here knows how a recipe was written: create and the
instructions builder import this package, never the other way round.

- ``validator``: render, download, assemble, verify in the container; each outcome a
  ``Verdict``; the other platforms proven as far as this machine can.
- ``bottles``: a ``homebrew`` recipe's bottles poured with their dependencies.
- ``ecosystem``: an ecosystem's package fetched on the host (its runner's ``fetch``)
  with its scripts off, built and verified in the container.
- ``verify_command``: the one-plain-command rule for a verify command.
- ``findings``: the shape every check (static or not) reports a problem in.
- ``sanitize``: validation output cleaned for a model, and what a failure means.
- ``summary``: a result's validation summary, the ``validation.*`` events' payloads.
- ``errors``: ``validation_failed`` and ``validation_unavailable``.
"""
