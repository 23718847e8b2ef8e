"""The direction of dependencies, read from the source (docs/architecture.md, "Layering").

Every ``tsukud`` and ``tsukuctl`` module is parsed, and every import it makes, at module
level or inside a function, counts; imports under ``if TYPE_CHECKING:`` do not (they
never run). Imports by name at run time (``tsukud.rpc.registry`` loading the methods
modules, ``tsukuctl.cli`` loading the command modules) are not seen: they point away from
the modules that list them, so they cannot close a cycle the static edges do not.

The rules:

* no import cycle between packages (each ``tsukud`` subpackage and top-level module is
  one node, ``tsukuctl`` another) nor between files;
* ``tsukud.sandbox`` imports neither ``tsukud.create`` nor ``tsukud.install``: it
  validates recipes, it does not know how they are made or installed;
* ``tsukud.validation`` and ``tsukud.generation`` (the generate, validate, repair
  loop) import none of the features that write recipes (``create``, ``instructions``)
  nor anything above them: both use them, so they know neither;
* only ``flows``, the composition root (``services``, ``daemon``) and ``rpc`` import
  ``tsukud.batch``: the batch queue drives create, nothing below it knows of batches;
* no ``tsukud/rpc/*_methods.py`` imports another methods module: what two features share
  lives in the features, not in each other's RPC surface;
* nothing in ``tsukud`` imports ``tsukuctl``, and no ``from_daemon`` factory remains;
* ``tsukuctl`` imports only the standard library, itself and ``tsukud.paths``,
  ``tsukud.errors``, ``tsukud.launch``, ``tsukud.terminal``, ``tsukud.caller_env``,
  ``tsukud.provider_specs`` and ``tsukud.wirejson`` (which import only the
  standard library and each other): it runs from the shell's command-not-found hook,
  where every millisecond of start-up shows.

Violations being removed by work in flight are listed in ``KNOWN_VIOLATIONS``; the test
also fails when a listed violation no longer exists, so the list only ever shrinks.
"""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("tsukud", "tsukuctl")
CLIENT_MAY_IMPORT = frozenset(
    {
        "tsukud",
        "tsukud.paths",
        "tsukud.errors",
        "tsukud.launch",
        "tsukud.terminal",
        "tsukud.caller_env",
        "tsukud.provider_specs",
        "tsukud.wirejson",
    }
)

# What may import the batch package (a feature above create): the run flow, the
# composition root and the RPC methods.
BATCH_USERS = frozenset({"batch", "flows", "services", "daemon", "rpc"})

# What validation and the generation loop must not import: the features that write
# the recipes they prove, and every layer above them.
SHARED_BY_WRITERS = frozenset({"validation", "generation"})
ABOVE_VALIDATION = frozenset(
    {"create", "instructions", "discover", "batch", "eval", "flows", "services", "daemon", "rpc"}
)

# A violation's key leaves out line numbers, so edits elsewhere in a file do not
# disturb the list: (rule, file or cycle, what is imported).
Key = tuple[str, str, str]

KNOWN_VIOLATIONS: dict[Key, str] = {}

# Not violations in spirit, kept in view the same way (each must still exist).
DELIBERATE_EXCEPTIONS: dict[Key, str] = {
    # `tsukuctl demo` serves the fake GitHub of tsukud.testing in-process; the import sits
    # in that command's handler, so no other command pays for it.
    (
        "client imports beyond the stdlib",
        "tsukuctl/demo_commands.py",
        "tsukud.testing.demo_world",
    ): "demo",
    # `tsukuctl config` reads and edits config.toml without a daemon, by the daemon's own
    # rules (one source of truth for keys and values); imported in the handlers only.
    (
        "client imports beyond the stdlib",
        "tsukuctl/config_commands.py",
        "tsukud.config",
    ): "config without a daemon",
    (
        "client imports beyond the stdlib",
        "tsukuctl/config_commands.py",
        "tsukud.fsutil",
    ): "config edit writes the checked file atomically",
}


@dataclass(frozen=True)
class Import:
    file: str  # relative to the repository, e.g. "tsukud/daemon.py"
    line: int
    module: str  # the importing module, e.g. "tsukud.daemon"
    target: str  # the imported module, resolved to a file when it is one of ours


@dataclass(frozen=True)
class Violation:
    key: Key
    message: str  # names the rule and the file:line

    def __str__(self) -> str:
        return self.message


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_modules() -> dict[str, Path]:
    return {module_name(p): p for pkg in PACKAGES for p in sorted((REPO / pkg).rglob("*.py"))}


def is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def import_nodes(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement in ``node``, skipping ``if TYPE_CHECKING:`` bodies."""
    if isinstance(node, ast.Import | ast.ImportFrom):
        yield node
        return
    children = (
        node.orelse
        if isinstance(node, ast.If) and is_type_checking(node.test)
        else ast.iter_child_nodes(node)
    )
    for child in children:
        yield from import_nodes(child)


def resolve(base: str, name: str, modules: dict[str, Path]) -> str:
    """``from base import name``: the submodule when ``name`` is one, else ``base``."""
    return f"{base}.{name}" if f"{base}.{name}" in modules else base


def imports_of(path: Path, modules: dict[str, Path], source: str | None = None) -> Iterator[Import]:
    """The imports of the module at ``path`` (its text is ``source`` when given)."""
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    rel = str(path.relative_to(REPO))
    tree = ast.parse(path.read_text() if source is None else source, rel)
    for node in import_nodes(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(rel, node.lineno, module, alias.name)
            continue
        base = node.module or ""
        if node.level:  # relative: up from this module's package
            parts = package.split(".")
            base = ".".join([*parts[: len(parts) - node.level + 1], base]).strip(".")
        for alias in node.names:
            target = resolve(base, alias.name, modules)
            if target != base and base in modules:
                # ``from pkg import sub`` reads ``sub`` from the package: its
                # ``__init__`` runs first, so the importer depends on it too (the
                # cycle policy/budget <-> policy/__init__ hid behind this form).
                yield Import(rel, node.lineno, module, base)
            yield Import(rel, node.lineno, module, target)


def all_imports() -> list[Import]:
    modules = project_modules()
    return [i for path in modules.values() for i in imports_of(path, modules)]


def ours(target: str) -> bool:
    return target.split(".")[0] in PACKAGES


def node_of(module: str) -> str:
    """A package-graph node: ``tsukuctl``, or tsukud's subpackage or top-level module."""
    parts = module.split(".")
    if parts[0] == "tsukuctl":
        return "tsukuctl"
    return parts[1] if len(parts) > 1 else "tsukud/__init__"


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one member (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(found)


def cycle_violations(
    imports: list[Import], rule: str, node: Callable[[str], str]
) -> list[Violation]:
    """Cycles in the graph whose node for a module ``node`` picks."""
    edges: dict[str, set[str]] = defaultdict(set)
    first: dict[tuple[str, str], Import] = {}
    for i in imports:
        if ours(i.target):
            src, dst = node(i.module), node(i.target)
            if src != dst:
                edges[src].add(dst)
                first.setdefault((src, dst), i)
    out = []
    for component in cycles(edges):
        ties = [first[(a, b)] for a in component for b in component if (a, b) in first]
        where = "; ".join(f"{t.file}:{t.line} imports {t.target}" for t in ties[:3])
        subject = " <-> ".join(component)
        out.append(Violation((rule, subject, ""), f"{rule} {subject}: {where}"))
    return out


def rule_violations(imports: list[Import]) -> list[Violation]:
    """The per-import rules: sandbox, methods modules, tsukud → tsukuctl, the client."""
    stdlib = sys.stdlib_module_names
    out = []
    for i in imports:
        src, dst = node_of(i.module), node_of(i.target) if ours(i.target) else None

        def broken(rule: str, i: Import = i) -> Violation:
            return Violation((rule, i.file, i.target), f"{i.file}:{i.line}: {rule}: {i.target}")

        if src == "sandbox" and dst in ("create", "install"):
            out.append(broken(f"sandbox imports {dst}"))
        if src in SHARED_BY_WRITERS and dst in ABOVE_VALIDATION:
            out.append(broken(f"{src} imports {dst}"))
        if dst == "batch" and src not in BATCH_USERS:
            out.append(broken(f"{src} imports batch"))
        if (
            i.module.startswith("tsukud.rpc.")
            and i.module.endswith("_methods")
            and i.target.startswith("tsukud.rpc.")
            and i.target.split(".")[2].endswith("_methods")
            and i.target != i.module
        ):
            out.append(broken("a methods module imports another"))
        if i.module.startswith("tsukud") and dst == "tsukuctl":
            out.append(broken("tsukud imports tsukuctl"))
        client_floor = i.module.startswith("tsukuctl") or i.module in CLIENT_MAY_IMPORT
        allowed = (
            i.target.split(".")[0] in stdlib
            or i.target in CLIENT_MAY_IMPORT
            or (i.module.startswith("tsukuctl") and i.target.startswith("tsukuctl"))
        )
        if client_floor and not allowed:
            out.append(broken("client imports beyond the stdlib"))
    return out


def from_daemon_violations() -> list[Violation]:
    out = []
    for path in sorted((REPO / "tsukud").rglob("*.py")):
        rel = str(path.relative_to(REPO))
        text = path.read_text().splitlines()
        lines = [n for n, line in enumerate(text, 1) if "from_daemon" in line]
        if lines:
            message = f"{rel}:{lines[0]}: from_daemon (also lines {lines[1:]})"
            out.append(Violation(("from_daemon", rel, ""), message))
    return out


@functools.cache
def violations() -> tuple[Violation, ...]:
    """Read once per process: the two tests below share it (the walk parses every
    module, most of a second of CPU)."""
    imports = all_imports()
    found = [
        *rule_violations(imports),
        *from_daemon_violations(),
        *cycle_violations(imports, "package cycle", node_of),
        *cycle_violations(imports, "file cycle", lambda module: module),
    ]
    return tuple(dict.fromkeys(found))


def test_the_import_rules_hold() -> None:
    listed = KNOWN_VIOLATIONS.keys() | DELIBERATE_EXCEPTIONS.keys()
    new = [str(v) for v in violations() if v.key not in listed]
    assert not new, "import rules broken (see this test's docstring):\n" + "\n".join(new)


def test_every_listed_violation_still_exists() -> None:
    found = {v.key for v in violations()}
    gone = [key for key in [*KNOWN_VIOLATIONS, *DELIBERATE_EXCEPTIONS] if key not in found]
    assert not gone, (
        "no longer broken, so remove from KNOWN_VIOLATIONS (or DELIBERATE_EXCEPTIONS) in"
        " tests/unit/test_layering.py:\n" + "\n".join(map(str, gone))
    )


# Not used by the client, and slow enough to show in ``tsukuctl status``'s wall time
# (``sqlite3``, ``tomllib`` and ``hashlib`` are standard but cost milliseconds to load;
# ``paths`` imports ``hashlib`` only for a home too long for a socket path).
CLIENT_HEAVY = (
    "trio",
    "msgspec",
    "structlog",
    "anthropic",
    "httpx2",
    "sqlite3",
    "typing",
    "tomllib",
    "hashlib",
)


def test_the_client_loads_no_heavy_module() -> None:
    """What the static rule cannot see: what importing the client and every command
    module pulls in, transitively."""
    from tsukuctl.cli import COMMAND_MODULES

    code = (
        "import sys; before = set(sys.modules); import tsukuctl.cli, tsukuctl.client; "
        f"[__import__(m) for m in {list(COMMAND_MODULES)!r}]; "
        "new = set(sys.modules) - before; "
        f"print(sorted(m for m in new if m.split('.')[0] in {CLIENT_HEAVY!r}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_status_run_loads_no_heavy_module(tmp_path: Path) -> None:
    """``tsukuctl --no-start status`` run through (parser, socket path, connect, the
    error and its hint) with no daemon: what the run imports, not only the modules."""
    code = (
        "import sys; before = set(sys.modules); from tsukuctl import cli; "
        "rc = cli.main(['--no-start', 'status']); "
        "new = set(sys.modules) - before; "
        f"print(rc, sorted(m for m in new if m.split('.')[0] in {CLIENT_HEAVY!r}))"
    )
    env = {"PATH": "/usr/bin:/bin", "TSUKU_HOME": str(tmp_path / "home")}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO
    )
    assert out.stdout.strip() == "20 []", out.stderr
    assert "no tsukud answers" in out.stderr


def test_the_walk_sees_function_level_imports_and_skips_type_checking() -> None:
    """The walker itself, on a module written for it."""
    tree = ast.parse(
        "import os\n"
        "TYPE_CHECKING = False\n"
        "if TYPE_CHECKING:\n"
        "    import tsukud.daemon\n"
        "else:\n"
        "    import json\n"
        "def f():\n"
        "    from tsukud import errors\n"
        "    class C:\n"
        "        def g(self):\n"
        "            import tsukud.config\n"
    )
    seen = [
        (n.lineno, [a.name for a in n.names], getattr(n, "module", None))
        for n in import_nodes(tree)
    ]
    assert seen == [
        (1, ["os"], None),
        (6, ["json"], None),
        (8, ["errors"], "tsukud"),
        (11, ["tsukud.config"], None),
    ]


def test_from_imports_resolve_to_submodules_and_relative_imports_to_the_package() -> None:
    modules = project_modules()
    source = (
        "from tsukud import errors, __version__\n"
        "from tsukud.errors import UsageError\n"
        "from . import protocol\n"
        "from .. import paths\n"
        "from ..events.store import EventStore\n"
    )
    path = REPO / "tsukud" / "rpc" / "server.py"
    assert [(i.line, i.module, i.target) for i in imports_of(path, modules, source)] == [
        (1, "tsukud.rpc.server", "tsukud"),
        (1, "tsukud.rpc.server", "tsukud.errors"),
        (1, "tsukud.rpc.server", "tsukud"),
        (2, "tsukud.rpc.server", "tsukud.errors"),
        (3, "tsukud.rpc.server", "tsukud.rpc"),
        (3, "tsukud.rpc.server", "tsukud.rpc.protocol"),
        (4, "tsukud.rpc.server", "tsukud"),
        (4, "tsukud.rpc.server", "tsukud.paths"),
        (5, "tsukud.rpc.server", "tsukud.events.store"),
    ]


def test_only_the_layers_above_import_batch() -> None:
    """The rule itself, on an import it must refuse and one it must let through."""
    modules = project_modules()
    path = REPO / "tsukud" / "create" / "service.py"
    refused = list(imports_of(path, modules, "from tsukud.batch.queue import Queue\n"))
    assert [v.key[0] for v in rule_violations(refused)] == ["create imports batch"]
    path = REPO / "tsukud" / "flows" / "batch_run.py"
    allowed = list(imports_of(path, modules, "from tsukud.batch.service import Lease\n"))
    assert rule_violations(allowed) == []


def test_validation_imports_neither_feature_that_uses_it() -> None:
    """The rule itself: validation may use the installer, not create or instructions."""
    modules = project_modules()
    path = REPO / "tsukud" / "validation" / "validator.py"
    source = "from tsukud.create.assets import fenced\nfrom tsukud.instructions import answer\n"
    refused = list(imports_of(path, modules, source))
    # (``from tsukud.instructions import answer`` imports the package and the module)
    assert sorted({v.key[0] for v in rule_violations(refused)}) == [
        "validation imports create",
        "validation imports instructions",
    ]
    allowed = list(imports_of(path, modules, "from tsukud.install.extract import extract\n"))
    assert rule_violations(allowed) == []
    path = REPO / "tsukud" / "generation" / "loop.py"
    refused = list(imports_of(path, modules, "from tsukud.create.repair import fix_layout\n"))
    assert [v.key[0] for v in rule_violations(refused)] == ["generation imports create"]


def test_cycles_are_found_in_a_small_graph() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"f"}, "f": {"e"}}
    assert cycles(edges) == [["a", "b", "c"], ["e", "f"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
