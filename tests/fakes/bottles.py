"""Real Homebrew-style bottles, compiled with gcc for the test: ``libgreet`` (a shared
library) and ``hello`` (an executable linked against it), built as brew builds them,
with placeholder RPATHs and interpreter, plus placeholder text files and a binary data
file holding a placeholder (which relocation must leave byte-identical)."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tsukud.testing.homebrew import Member, bottle_tarball

LIB_VERSION = "1.0"
GREETING = "greetings from libgreet"
BLOB = b"\x00\x01binary@@HOMEBREW_PREFIX@@/share\x00\xff" * 4
# What relocating hello's bottle reports: its script rewritten, its RPATH and
# interpreter rewritten, and two files that keep the prefix (the C string in HELLO_C,
# the data in BLOB), which cannot be rewritten without corrupting them.
HELLO_RELOCATION = {
    "text_files": 1,
    "elf_files": 1,
    "macho_files": 0,
    "left_alone": [
        {"file": "bin/hello", "placeholders": ["@@HOMEBREW_PREFIX@@"]},
        {"file": "share/hello/blob.bin", "placeholders": ["@@HOMEBREW_PREFIX@@"]},
    ],
}

LIB_C = f"""
const char *greet(void) {{ return "{GREETING}"; }}
"""
HELLO_C = """
#include <stdio.h>
#include <string.h>
const char *greet(void);
static const char *where = "@@HOMEBREW_PREFIX@@/etc/hello";
int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--version") == 0) { printf("hello %s\\n", VERSION); return 0; }
    printf("%s (%s) [%zu]\\n", greet(), VERSION, strlen(where));
    return 0;
}
"""


@dataclass(frozen=True)
class Built:
    libgreet: bytes  # lib/libgreet.so.1
    hello: dict[str, bytes]  # version → bin/hello


def have_gcc() -> bool:
    return shutil.which("gcc") is not None


def _gcc(*args: str) -> None:
    subprocess.run(["gcc", *args], check=True, capture_output=True, text=True)


def build(work: Path, versions: tuple[str, ...] = ("2.0", "1.5")) -> Built:
    """Compile the library and one ``hello`` per version in ``work``."""
    work.mkdir(parents=True, exist_ok=True)
    (work / "greet.c").write_text(LIB_C)
    (work / "hello.c").write_text(HELLO_C)
    lib = work / "libgreet.so.1"
    _gcc("-shared", "-fPIC", "-Wl,-soname,libgreet.so.1", "-o", str(lib), str(work / "greet.c"))
    os.symlink("libgreet.so.1", work / "libgreet.so")
    hello: dict[str, bytes] = {}
    for version in versions:
        out = work / f"hello-{version}"
        _gcc(
            f'-DVERSION="{version}"',
            "-o",
            str(out),
            str(work / "hello.c"),
            f"-L{work}",
            "-lgreet",
            "-Wl,--disable-new-dtags",
            "-Wl,-rpath,@@HOMEBREW_PREFIX@@/opt/libgreet/lib:@@HOMEBREW_PREFIX@@/lib",
            "-Wl,--dynamic-linker=@@HOMEBREW_PREFIX@@/lib/ld.so",
        )
        hello[version] = out.read_bytes()
    return Built(libgreet=lib.read_bytes(), hello=hello)


def libgreet_bottle(built: Built, version: str = LIB_VERSION, formula: str = "libgreet") -> bytes:
    """``formula``: the name the bottle is poured as (``libgreet@1``, as ``openssl@3``)."""
    return bottle_tarball(
        formula,
        version,
        {
            "lib/libgreet.so.1": Member(built.libgreet, mode=0o555),
            "lib/libgreet.so": Member(link="libgreet.so.1"),
            "lib/pkgconfig/greet.pc": (
                f"prefix=@@HOMEBREW_CELLAR@@/{formula}/{version}\n".encode()
                + b"libdir=${prefix}/lib\nName: greet\nLibs: -L${libdir} -lgreet\n"
            ),
        },
    )


def hello_bottle(
    built: Built, version: str, pkg: str | None = None, extra: dict[str, bytes] | None = None
) -> bytes:
    """``extra``: more files in the keg (path → contents)."""
    return bottle_tarball(
        "hello",
        pkg or version,
        {
            "bin/hello": Member(built.hello[version], mode=0o555),
            "bin/hello-config": Member(
                b"#!/bin/sh\necho @@HOMEBREW_PREFIX@@/share/hello\n", mode=0o555
            ),
            "share/hello/blob.bin": BLOB,
            ".brew/hello.rb": b"class Hello < Formula\nend\n",
            **(extra or {}),
        },
    )


def hola_bottle(built: Built) -> bytes:
    """A second tool linked against libgreet (the same executable, another name)."""
    return bottle_tarball("hola", "1.0", {"bin/hola": Member(built.hello["2.0"], mode=0o555)})


def hola_recipe() -> str:
    """No verify: the executable is hello's and says so."""
    return hello_recipe(name="hola", verify=False)


def libgreet_recipe() -> str:
    return """[metadata]
name = "libgreet"
description = "a greeting library"
type = "library"

[version]
source = "homebrew"
formula = "libgreet"

[[steps]]
action = "homebrew"
formula = "libgreet"
"""


def hello_recipe(*, deps: str = '["libgreet"]', name: str = "hello", verify: bool = True) -> str:
    check = f'\n[verify]\ncommand = "{name} --version"\npattern = "hello {{version}}"\n'
    return f"""[metadata]
name = "{name}"
description = "says hello through libgreet"
runtime_dependencies = {deps}

[[steps]]
action = "homebrew"
formula = "{name}"

[[steps]]
action = "install_binaries"
binaries = ["bin/{name}"]
""" + (check if verify else "")
