"""System package managers as tsuku knows them: which Linux family each serves, the
command that installs packages with it and the query that says a package is there.

Pure: the tables and the words of each command. ``install/system_packages.py`` runs
them, only after a person read the exact command and said yes (docs/install.md).

tsuku's ``apt_install`` and its siblings each carry an implicit constraint (the step
runs only on its family, whatever ``when`` says) and describe the command a person
would type: ``sudo apt-get install -y <packages>`` and so on. The same words are what
is shown here and what runs, so what a person approved is what happens.
"""

from __future__ import annotations

import re

import msgspec


class SystemManager(msgspec.Struct, frozen=True, kw_only=True):
    """One Linux package manager: its action, the family it serves, ``when``'s name for
    it (``package_manager``), the install command (before the packages) and the query
    that exits 0 when one package is installed."""

    action: str
    family: str
    name: str
    install: tuple[str, ...]
    query: tuple[str, ...]


# tsuku's actions and commands (internal/actions: apt_actions.go, dnf_actions.go,
# linux_pm_actions.go ``Describe``), with the query each family's tools answer.
SYSTEM_MANAGERS: dict[str, SystemManager] = {
    m.action: m
    for m in (
        SystemManager(
            action="apt_install",
            family="debian",
            name="apt",
            install=("apt-get", "install", "-y"),
            query=("dpkg-query", "-W", "-f=${Status}"),
        ),
        SystemManager(
            action="apk_install",
            family="alpine",
            name="apk",
            install=("apk", "add"),
            query=("apk", "info", "-e"),
        ),
        SystemManager(
            action="dnf_install",
            family="rhel",
            name="dnf",
            install=("dnf", "install", "-y"),
            query=("rpm", "-q"),
        ),
        SystemManager(
            action="pacman_install",
            family="arch",
            name="pacman",
            install=("pacman", "-S", "--noconfirm"),
            query=("pacman", "-Q"),
        ),
        SystemManager(
            action="zypper_install",
            family="suse",
            name="zypper",
            install=("zypper", "install", "-y"),
            query=("rpm", "-q"),
        ),
    )
}
SYSTEM_PACKAGE_ACTIONS = tuple(SYSTEM_MANAGERS)
# ``when.package_manager`` → the family whose manager it is (tsuku's names).
FAMILY_OF_MANAGER = {m.name: m.family for m in SYSTEM_MANAGERS.values()}

# A package name as the five managers spell them (``libssl-dev``, ``gcc-c++``,
# ``python3.11``, ``perl:any``). It becomes an argument of a command run as root, so
# anything that could read as an option (``-o``, ``--allow-unauthenticated``), a path
# or a shell word is refused when the recipe is read.
_PACKAGE = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+_:@~=-]*")
# A command looked up on PATH: a name, never a path or an option.
_COMMAND = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._+-]*")


def valid_package(name: str) -> bool:
    return _PACKAGE.fullmatch(name) is not None


def valid_command(name: str) -> bool:
    return _COMMAND.fullmatch(name) is not None


def install_argv(action: str, packages: tuple[str, ...], *, as_root: bool) -> tuple[str, ...]:
    """The exact command that installs ``packages``: tsuku's words, with ``sudo`` in
    front unless the daemon already runs as root (where ``sudo`` may not exist)."""
    manager = SYSTEM_MANAGERS[action]
    return (*(() if as_root else ("sudo",)), *manager.install, *packages)


def query_argv(action: str, package: str) -> tuple[str, ...]:
    """The read-only query that says whether ``package`` is installed."""
    return (*SYSTEM_MANAGERS[action].query, package)


def installed_from_query(action: str, exit_code: int, output: str) -> bool:
    """What the query's answer means: ``dpkg-query`` also knows removed packages
    (``deinstall ok config-files``), so for apt only ``install ok installed`` counts."""
    if exit_code != 0:
        return False
    if action == "apt_install":
        return output.strip() == "install ok installed"
    return True


def shell_words(argv: tuple[str, ...]) -> str:
    """``argv`` as a person would type it (every word here is plain, see
    :func:`valid_package`; a word with anything else is quoted)."""
    import shlex

    return " ".join(shlex.quote(word) for word in argv)


# ------------------------------------------------------------------ require_command


def version_from_output(output: str, pattern: str) -> str | None:
    """tsuku's ``FindStringSubmatch``: the first group of the first match."""
    found = re.search(pattern, output)
    if found is None or not found.groups():
        return None
    return found.group(1)


def _numbers(version: str) -> list[int]:
    out: list[int] = []
    for part in version.split("."):
        digits = re.match(r"\d+", part)
        out.append(int(digits.group()) if digits else 0)
    return out


def meets_minimum(found: str, minimum: str) -> bool:
    """Dotted numbers compared part by part (``1.10`` > ``1.9``), missing parts as 0."""
    a, b = _numbers(found), _numbers(minimum)
    width = max(len(a), len(b))
    return a + [0] * (width - len(a)) >= b + [0] * (width - len(b))


# ------------------------------------------------------------------ linux family


# /etc/os-release ``ID`` (then each ``ID_LIKE``) → tsuku's family names.
_FAMILY_OF_ID = {
    "debian": "debian",
    "ubuntu": "debian",
    "linuxmint": "debian",
    "pop": "debian",
    "elementary": "debian",
    "zorin": "debian",
    "raspbian": "debian",
    "kali": "debian",
    "fedora": "rhel",
    "rhel": "rhel",
    "centos": "rhel",
    "rocky": "rhel",
    "almalinux": "rhel",
    "ol": "rhel",
    "amzn": "rhel",
    "arch": "arch",
    "manjaro": "arch",
    "endeavouros": "arch",
    "alpine": "alpine",
    "opensuse": "suse",
    "opensuse-leap": "suse",
    "opensuse-tumbleweed": "suse",
    "sles": "suse",
    "suse": "suse",
}


def family_from_os_release(text: str) -> str | None:
    """The Linux family an ``os-release`` file names: its ``ID``, else the first
    ``ID_LIKE`` entry that is a known distribution; ``None`` when none is."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, eq, value = line.partition("=")
        if eq:
            fields[key.strip()] = value.strip().strip("\"'").lower()
    for candidate in [fields.get("ID", ""), *fields.get("ID_LIKE", "").split()]:
        family = _FAMILY_OF_ID.get(candidate)
        if family is not None:
            return family
    return None
