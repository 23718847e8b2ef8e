"""tsukud: the tsuku daemon.

Kept import-free on purpose: ``tsukuctl`` imports the stdlib-only modules of this
package (``tsukud.paths``, ``tsukud.errors``) on its start-up path, which is run from
the shell's command-not-found hook and must not pay for trio or msgspec.
"""

__version__ = "0.1.0"
