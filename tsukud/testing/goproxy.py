"""A fake Go module proxy on loopback (``GOPROXY=<url>``), serving real modules built
here per the module zip format, which the real ``go install <module>@<version>``
downloads and builds.

The proxy protocol: ``/<module>/@v/list``, ``/<module>/@v/<version>.info``, ``.mod``,
``.zip`` and ``/<module>/@latest``, module paths case-encoded (``!`` + lower case; go
sends the ``!`` as ``%21``). ``go install`` probes every prefix of the path it is given
(``example.com/@v/v1.0.0.info``, ...): those are not modules here and get a 404, as
they do from proxy.golang.org. Checksums are not served (``GOSUMDB=off`` for a proxy
other than Go's own: ``install/ecosystem/golang.py``).

    with FakeGoProxy() as proxy:
        proxy.publish(go_module("example.com/fake/hellogo", "v1.2.0", "hellogo 1.2.0"))
        env = proxy.env()   # TSUKU_GOPROXY_URL
"""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass
from urllib.parse import unquote

from tsukud.registries.goproxy import escape
from tsukud.testing.http import FakeHTTPServer, RecordedRequest, Reply

# An old go line: no toolchain switch is ever asked for.
GO_LINE = "1.16"


@dataclass(frozen=True)
class GoModule:
    path: str
    version: str
    mod: str  # go.mod
    zip: bytes  # every file under <path>@<version>/

    @property
    def info(self) -> dict[str, str]:
        return {"Version": self.version, "Time": "2024-01-01T00:00:00Z"}


def go_module(
    path: str, version: str, text: str | None, *, mains: dict[str, str] | None = None
) -> GoModule:
    """A module without dependencies whose root is a main package printing ``text``
    and its arguments (``None``: a library package); ``mains`` adds main packages in
    directories below the root (``{"cmd/tool": text}``) printing theirs."""
    mod = f"module {path}\n\ngo {GO_LINE}\n"
    files = {"go.mod": mod}
    if text is None:
        name = path.rsplit("/", 1)[-1].replace("-", "_")
        files["lib.go"] = f"package {name}\n\n// Version of the library.\nconst Version = 1\n"
    else:
        files["main.go"] = _main_go(text)
    for directory, main_text in (mains or {}).items():
        files[f"{directory}/main.go"] = _main_go(main_text)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, body in sorted(files.items()):
            info = zipfile.ZipInfo(f"{path}@{version}/{name}", date_time=(2024, 1, 1, 0, 0, 0))
            zf.writestr(info, body)
    return GoModule(path, version, mod, buf.getvalue())


def _main_go(text: str) -> str:
    return (
        "package main\n\n"
        'import (\n\t"fmt"\n\t"os"\n\t"strings"\n)\n\n'
        "func main() {\n"
        f'\tfmt.Println({json.dumps(text)} + " " + strings.Join(os.Args[1:], " "))\n'
        "}\n"
    )


class FakeGoProxy(FakeHTTPServer):
    def __init__(self) -> None:
        super().__init__(fallback=self._route, role="goproxy")
        self.modules: dict[str, list[GoModule]] = {}  # escaped path -> versions

    def env(self) -> dict[str, str]:
        return {"TSUKU_GOPROXY_URL": self.url}

    def publish(self, module: GoModule) -> None:
        self.modules.setdefault(escape(module.path), []).append(module)

    def paths(self) -> list[str]:
        return [unquote(r.route) for r in self.requests]

    def _route(self, request: RecordedRequest) -> Reply:
        path = unquote(request.route).lstrip("/")
        if path.endswith("/@latest"):
            mods = self.modules.get(path.removesuffix("/@latest"))
            return Reply(json=mods[-1].info) if mods else _not_found(path)
        if "/@v/" not in path:
            return _not_found(path)
        module, rest = path.split("/@v/", 1)
        mods = self.modules.get(module)
        if not mods:
            return _not_found(path)
        if rest == "list":
            return _text("".join(m.version + "\n" for m in mods))
        version, _, ext = rest.rpartition(".")
        found = next((m for m in mods if escape(m.version) == version), None)
        if found is None:
            return _not_found(path)
        if ext == "info":
            return Reply(json=found.info)
        if ext == "mod":
            return _text(found.mod)
        if ext == "zip":
            return Reply(body=found.zip, headers={"content-type": "application/zip"})
        return _not_found(path)


def _text(body: str) -> Reply:
    return Reply(body=body.encode(), headers={"content-type": "text/plain; charset=utf-8"})


def _not_found(path: str) -> Reply:
    return Reply(404, body=f"not found: {path}".encode(), headers={"content-type": "text/plain"})
