"""A fake RubyGems server on loopback, serving real gems built by ``gem build``, which
the real ``gem install --clear-sources --source <url>/`` installs.

What ``gem`` fetches depends on its version: RubyGems 3.3 sends ``HEAD /`` and, on a
200, reads the compact index (``/info/<name>``), then the quick spec
(``/quick/Marshal.4.8/<name>-<version>.gemspec.rz``) and the ``.gem``; 3.6+ probes
``/versions`` instead of ``/``. All of these are served, plus the JSON API the version
resolver, the recipe builder and discovery read (``/api/v1/gems/<name>.json``,
``/api/v1/versions/<name>.json``). The quick spec is Ruby Marshal data, so it is made
by ``ruby`` from the built gem, like the gem itself: building needs Ruby, as
installing does.

    with FakeRubyGems() as gems:
        gems.publish(build_gem(tmp_path, "hello-gem", "1.2.0", {"hello": "hello 1.2.0"}))
        env = gems.env()   # TSUKU_RUBYGEMS_URL
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from tsukud.testing.http import FakeHTTPServer, RecordedRequest, Reply

# Ruby: the spec of a built .gem, Marshal-dumped and deflated (a quick spec).
_QUICK_SPEC = (
    "require 'rubygems/package'; print Gem.deflate(Marshal.dump(Gem::Package.new(ARGV[0]).spec))"
)


@dataclass(frozen=True)
class Gem:
    name: str
    version: str
    data: bytes  # the .gem
    quick_spec: bytes  # quick/Marshal.4.8/<name>-<version>.gemspec.rz
    executables: tuple[str, ...]

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @property
    def file_name(self) -> str:
        return f"{self.name}-{self.version}.gem"


def build_gem(
    work: Path,
    name: str,
    version: str,
    executables: dict[str, str],
    *,
    extconf: str | None = None,
) -> Gem:
    """``gem build`` of a gem without dependencies whose executables (in ``exe/``)
    print the text given for each and their arguments; built under ``work``.
    ``extconf``: the Ruby of a native extension's ``ext/<name>/extconf.rb``, which
    ``gem install`` runs (it must leave a ``Makefile``)."""
    src = work / f"gem-src-{name}-{version}"
    (src / "exe").mkdir(parents=True)
    extension = ""
    if extconf is not None:
        (src / "ext" / name).mkdir(parents=True)
        (src / "ext" / name / "extconf.rb").write_text(extconf)
        extension = f"  s.extensions = [{json.dumps(f'ext/{name}/extconf.rb')}]\n"
    for exe, text in executables.items():
        (src / "exe" / exe).write_text(
            f"#!/usr/bin/env ruby\nputs ([{json.dumps(text)}] + ARGV).join(' ')\n"
        )
        (src / "exe" / exe).chmod(0o755)
    paths = [f"exe/{e}" for e in executables]
    if extconf is not None:
        paths.append(f"ext/{name}/extconf.rb")
    files = ", ".join(json.dumps(p) for p in paths)
    exes = ", ".join(json.dumps(e) for e in executables)
    (src / f"{name}.gemspec").write_text(
        "Gem::Specification.new do |s|\n"
        f"  s.name = {json.dumps(name)}\n"
        f"  s.version = {json.dumps(version)}\n"
        f'  s.summary = "{name}: a command-line tool for tests"\n'
        '  s.authors = ["tsuku tests"]\n'
        '  s.license = "MIT"\n'
        f"  s.files = [{files}]\n"
        '  s.bindir = "exe"\n'
        f"  s.executables = [{exes}]\n"
        f"{extension}"
        "end\n"
    )
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(src), "LANG": "C.UTF-8"}
    subprocess.run(
        ["gem", "build", f"{name}.gemspec"], cwd=src, env=env, check=True, capture_output=True
    )
    path = src / f"{name}-{version}.gem"
    quick = subprocess.run(
        ["ruby", "-e", _QUICK_SPEC, str(path)], env=env, check=True, capture_output=True
    ).stdout
    return Gem(name, version, path.read_bytes(), quick, tuple(executables))


class FakeRubyGems(FakeHTTPServer):
    def __init__(self) -> None:
        super().__init__(fallback=self._route, role="rubygems")
        self.gems: dict[str, list[Gem]] = {}
        self.source_code: dict[str, str] = {}
        self.downloads: dict[str, int] = {}

    def env(self) -> dict[str, str]:
        return {"TSUKU_RUBYGEMS_URL": self.url}

    def publish(self, gem: Gem, *, source_code_uri: str | None = None, downloads: int = 0) -> None:
        self.gems.setdefault(gem.name, []).append(gem)
        if source_code_uri:
            self.source_code[gem.name] = source_code_uri
        self.downloads[gem.name] = max(self.downloads.get(gem.name, 0), downloads)

    def paths(self) -> list[str]:
        return [f"{r.method} {r.route}" for r in self.requests]

    # ---- documents ---------------------------------------------------------------------

    def _newest_first(self, name: str) -> list[Gem]:
        return sorted(self.gems.get(name, []), key=lambda g: _key(g.version), reverse=True)

    def gem_doc(self, name: str) -> dict[str, Any] | None:
        gems = self._newest_first(name)
        stable = [g for g in gems if not _prerelease(g.version)]
        if not stable:
            return None
        latest = stable[0]
        return {
            "name": name,
            "version": latest.version,
            "platform": "ruby",
            "downloads": self.downloads.get(name, 0),
            "info": f"{name}: a command-line tool for tests",
            "sha": latest.sha256,
            "gem_uri": f"{self.url}/gems/{latest.file_name}",
            "source_code_uri": self.source_code.get(name),
            "homepage_uri": None,
            "dependencies": {"runtime": [], "development": []},
            "yanked": False,
        }

    def versions_doc(self, name: str) -> list[dict[str, Any]] | None:
        gems = self._newest_first(name)
        if not gems:
            return None
        return [
            {
                "number": g.version,
                "platform": "ruby",
                "prerelease": _prerelease(g.version),
                "sha": g.sha256,
                "created_at": "2024-01-01T00:00:00.000Z",
            }
            for g in gems
        ]

    def info_file(self, name: str) -> str | None:
        gems = self.gems.get(name)
        if not gems:
            return None
        return "---\n" + "".join(f"{g.version} |checksum:{g.sha256}\n" for g in gems)

    def versions_file(self) -> str:
        lines: list[str] = []
        for name in sorted(self.gems):
            info = self.info_file(name) or ""
            digest = hashlib.md5(info.encode()).hexdigest()  # noqa: S324 - the index's own
            lines.append(f"{name} {','.join(g.version for g in self.gems[name])} {digest}\n")
        return "created_at: 2024-01-01T00:00:00Z\n---\n" + "".join(lines)

    def _file(self, file_name: str, quick: bool) -> bytes | None:
        for gems in self.gems.values():
            for g in gems:
                if quick and file_name == f"{g.name}-{g.version}.gemspec.rz":
                    return g.quick_spec
                if not quick and file_name == g.file_name:
                    return g.data
        return None

    # ---- serving -----------------------------------------------------------------------

    def _route(self, request: RecordedRequest) -> Reply:
        path = unquote(request.route)
        if path == "/":
            return _text("")
        if path == "/versions":
            return _text(self.versions_file())
        if path.startswith("/info/"):
            info = self.info_file(path.removeprefix("/info/"))
            return _text(info) if info is not None else _not_found()
        if path.startswith("/api/v1/gems/") and path.endswith(".json"):
            doc = self.gem_doc(path[len("/api/v1/gems/") : -len(".json")])
            return Reply(json=doc) if doc else _not_found()
        if path.startswith("/api/v1/versions/") and path.endswith(".json"):
            versions = self.versions_doc(path[len("/api/v1/versions/") : -len(".json")])
            return Reply(json=versions) if versions is not None else _not_found()
        quick = path.startswith("/quick/Marshal.4.8/")
        if quick or path.startswith("/gems/"):
            data = self._file(path.rsplit("/", 1)[-1], quick)
            if data is not None:
                return Reply(body=data, headers={"content-type": "application/octet-stream"})
        return _not_found()


def _text(body: str) -> Reply:
    return Reply(body=body.encode(), headers={"content-type": "text/plain; charset=utf-8"})


def _not_found() -> Reply:
    return Reply(
        404, body=b"This rubygem could not be found.", headers={"content-type": "text/plain"}
    )


def _prerelease(version: str) -> bool:
    return any(c.isalpha() for c in version)


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else -1 for p in version.split("."))
