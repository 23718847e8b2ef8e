"""Real packages built in memory, for the fake registries: an npm tarball with a ``bin``
script and a wheel with console scripts, which the real ``npm`` and ``pip`` install.

Each builder returns the exact bytes a fake serves and the digests its metadata must
carry (npm's SRI ``integrity`` and ``shasum``, PyPI's sha256), so the client's own
integrity checks pass only on those bytes.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import tarfile
import zipfile
from dataclasses import dataclass
from typing import Any

from tsukud.registries import pypi


@dataclass(frozen=True)
class NpmTarball:
    name: str
    version: str
    data: bytes
    manifest: dict[str, Any]  # package.json, as the packument repeats it

    @property
    def integrity(self) -> str:
        return "sha512-" + base64.b64encode(hashlib.sha512(self.data).digest()).decode()

    @property
    def shasum(self) -> str:
        return hashlib.sha1(self.data).hexdigest()  # noqa: S324 - npm's legacy field

    @property
    def file_name(self) -> str:
        return f"{self.name.rsplit('/', 1)[-1]}-{self.version}.tgz"


def _tar_gz(members: dict[str, tuple[bytes, int]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for path, (data, mode) in members.items():
            info = tarfile.TarInfo(path)
            info.size = len(data)
            info.mode = mode
            info.mtime = 1_700_000_000
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def npm_tarball(
    name: str,
    version: str,
    commands: dict[str, str],
    *,
    bin_as_string: bool = False,
    scripts: dict[str, str] | None = None,
    files: dict[str, str] | None = None,
) -> NpmTarball:
    """A package whose ``bin`` maps each command to a node script printing
    ``"<command> <version>"`` and its arguments (``bin_as_string``: npm's one-command
    string form, the command then named after the package without its scope);
    ``scripts`` are its package.json's lifecycle scripts (``postinstall``...), ``files``
    more files in the package (path relative to it: text)."""
    members: dict[str, tuple[bytes, int]] = {
        f"package/{path}": (text.encode(), 0o644) for path, text in (files or {}).items()
    }
    bins: dict[str, str] = {}
    for command in commands:
        path = f"bin/{command}.js"
        script = (
            "#!/usr/bin/env node\n"
            f"const text = {json.dumps(commands[command])};\n"
            "console.log(text + ' ' + process.argv.slice(2).join(' '));\n"
        )
        members[f"package/{path}"] = (script.encode(), 0o755)
        bins[command] = path
    manifest: dict[str, Any] = {
        "name": name,
        "version": version,
        "description": f"{name}: a command-line tool for tests",
        "license": "MIT",
        "bin": next(iter(bins.values())) if bin_as_string else bins,
    }
    if scripts:
        manifest["scripts"] = dict(scripts)
    members["package/package.json"] = (json.dumps(manifest, indent=2).encode(), 0o644)
    return NpmTarball(name, version, _tar_gz(members), manifest)


@dataclass(frozen=True)
class Wheel:
    project: str
    version: str
    file_name: str
    data: bytes
    scripts: tuple[str, ...]

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def wheel(project: str, version: str, scripts: dict[str, str]) -> Wheel:
    """A pure-Python ``py3-none-any`` wheel: module ``<dist>_cli`` with one function per
    console script, each printing the text given for it and its arguments."""
    dist = pypi.normalize(project).replace("-", "_")
    module = f"{dist}_cli"
    info = f"{dist}-{version}.dist-info"
    funcs = "".join(
        f"def {_func(s)}():\n    print({text!r} + ' ' + ' '.join(sys.argv[1:]))\n\n\n"
        for s, text in scripts.items()
    )
    entry_points = "[console_scripts]\n" + "".join(f"{s} = {module}:{_func(s)}\n" for s in scripts)
    files: dict[str, bytes] = {
        f"{module}/__init__.py": f"import sys\n\n\n{funcs}".encode(),
        f"{info}/METADATA": (
            f"Metadata-Version: 2.1\nName: {project}\nVersion: {version}\n"
            f"Summary: {project}: a command-line tool for tests\n"
        ).encode(),
        f"{info}/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: tsuku-tests\nRoot-Is-Purelib: true\n"
            b"Tag: py3-none-any\n"
        ),
        f"{info}/entry_points.txt": entry_points.encode(),
        f"{info}/top_level.txt": f"{module}\n".encode(),
    }
    record = "".join(f"{p},{_record_hash(d)},{len(d)}\n" for p, d in files.items())
    files[f"{info}/RECORD"] = (record + f"{info}/RECORD,,\n").encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for path, data in files.items():
            zf.writestr(zipfile.ZipInfo(path, date_time=(2024, 1, 1, 0, 0, 0)), data)
    name = f"{dist}-{version}-py3-none-any.whl"
    return Wheel(project, version, name, buf.getvalue(), tuple(scripts))


def _func(script: str) -> str:
    return "main_" + "".join(c if c.isalnum() else "_" for c in script)


@dataclass(frozen=True)
class Sdist:
    project: str
    version: str
    file_name: str
    data: bytes

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


def sdist(project: str, version: str, scripts: dict[str, str], *, prelude: str = "") -> Sdist:
    """A source package with an in-tree build backend (PEP 517 ``backend-path``) that
    builds the wheel :func:`wheel` makes; ``prelude`` is Python the backend runs when
    it is imported (a malicious package's code). Its pyproject.toml lists the console
    scripts statically (``[project.scripts]``)."""
    built = wheel(project, version, scripts)
    dist = pypi.normalize(project).replace("-", "_")
    top = f"{dist}-{version}"
    entries = "".join(f'"{s}" = "{dist}_cli:{_func(s)}"\n' for s in scripts)
    pyproject = (
        '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n\n'
        f'[project]\nname = "{project}"\nversion = "{version}"\n\n[project.scripts]\n{entries}'
    )
    backend = (
        f"{prelude}\n"
        "import base64\nimport os\n\n"
        f"_WHEEL = base64.b64decode({base64.b64encode(built.data).decode()!r})\n"
        f"_NAME = {built.file_name!r}\n\n\n"
        "def get_requires_for_build_wheel(config_settings=None):\n    return []\n\n\n"
        "def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):\n"
        "    with open(os.path.join(wheel_directory, _NAME), 'wb') as f:\n"
        "        f.write(_WHEEL)\n"
        "    return _NAME\n"
    )
    pkg_info = f"Metadata-Version: 2.1\nName: {project}\nVersion: {version}\n"
    members = {
        f"{top}/pyproject.toml": (pyproject.encode(), 0o644),
        f"{top}/backend.py": (backend.encode(), 0o644),
        f"{top}/PKG-INFO": (pkg_info.encode(), 0o644),
    }
    return Sdist(project, version, f"{top}.tar.gz", _tar_gz(members))
