"""Record real provider answers once, replay them with no network.

Tests and the demo run whole create sessions without API keys: ``RecordingProvider``
wraps a real provider and stores each (request, response) pair under the sha256 of the
normalised request; ``ReplayProvider`` serves them back. A request that was never
recorded is a :class:`ReplayMiss` naming its hash and the closest recording with the
first line that differs, because "no recording" alone is useless when a prompt changed
by one word.

The key covers everything that changes the model's answer (the whole
:class:`Request`); response-only volatile fields (request id, duration) are stored
but never hashed. Callers whose prompts embed volatile text (timestamps, temp paths)
pass ``normalise`` to mask it, identically when recording and replaying.
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import msgspec
import trio

from tsukud.llm.provider import Provider, ReplayMiss
from tsukud.llm.types import Request, Response
from tsukud.secrets import Redactor

Normaliser = Callable[[dict[str, Any]], dict[str, Any]]


class Recording(msgspec.Struct):
    """One file: every response recorded for one request, served in order."""

    key: str
    provider: str
    model: str
    request: dict[str, Any]
    responses: list[Response]


def normalised_request(request: Request, normalise: Normaliser | None = None) -> bytes:
    """Stable JSON of the request: sorted keys, fixed layout, optional caller masking."""
    data = msgspec.to_builtins(request, order="sorted")
    assert isinstance(data, dict)
    if normalise is not None:
        data = normalise(data)
    return msgspec.json.encode(data, order="sorted")


def request_key(request: Request, normalise: Normaliser | None = None) -> str:
    return hashlib.sha256(normalised_request(request, normalise)).hexdigest()


def _lines(data: Any) -> list[str]:
    return (
        msgspec.json.format(msgspec.json.encode(data, order="sorted"), indent=1)
        .decode()
        .splitlines()
    )


class RecordingProvider:
    """Passes calls through to ``inner`` and writes ``<dir>/<key>.json`` for each.

    Within one recorder, repeated identical requests append to the same file (replayed
    in order); a new recorder overwrites what an earlier run left. Anything shaped like
    an API key, and the ``secrets`` given, are redacted before writing.
    """

    def __init__(
        self,
        inner: Provider,
        directory: str | Path,
        *,
        secrets: Iterable[str] = (),
        normalise: Normaliser | None = None,
    ) -> None:
        self._inner = inner
        self._dir = Path(directory)
        self._redactor = Redactor(secrets)
        self._normalise = normalise
        self._written: dict[str, Recording] = {}

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def model(self) -> str:
        return self._inner.model

    def __repr__(self) -> str:
        return f"RecordingProvider({self._inner!r}, directory={str(self._dir)!r})"

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def complete(self, request: Request) -> Response:
        response = await self._inner.complete(request)
        key = request_key(request, self._normalise)
        recording = self._written.get(key)
        if recording is None:
            recording = Recording(
                key=key,
                provider=self._inner.name,
                model=request.model or self._inner.model,
                request=msgspec.json.decode(normalised_request(request, self._normalise)),
                responses=[],
            )
            self._written[key] = recording
        recording.responses.append(response)
        # Redacted as a structure, not as JSON text: a scrubbed span must not swallow
        # the quotes and commas around it.
        clean = self._redactor.value(msgspec.to_builtins(recording))
        text = msgspec.json.format(msgspec.json.encode(clean), indent=2).decode()
        await trio.Path(self._dir).mkdir(parents=True, exist_ok=True)
        await trio.Path(self._dir / f"{key}.json").write_text(text + "\n", encoding="utf-8")
        return response


class ReplayProvider:
    """Serves recordings from ``directory``; never touches the network, so never
    spends: the LLM service records its turns as replayed (``replayed``), outside the
    budget."""

    replayed = True

    def __init__(
        self,
        directory: str | Path,
        *,
        name: str = "replay",
        model: str = "replay",
        normalise: Normaliser | None = None,
    ) -> None:
        self._dir = Path(directory)
        self._name = name
        self._model = model
        self._normalise = normalise
        self._served: dict[str, int] = {}

    @property
    def name(self) -> str:
        return self._name

    @property
    def model(self) -> str:
        return self._model

    def __repr__(self) -> str:
        return f"ReplayProvider(directory={str(self._dir)!r})"

    async def aclose(self) -> None:
        return None

    async def complete(self, request: Request) -> Response:
        key = request_key(request, self._normalise)
        path = trio.Path(self._dir / f"{key}.json")
        if not await path.exists():
            raise await self._miss(request, key)
        recording = msgspec.json.decode(await path.read_bytes(), type=Recording)
        index = self._served.get(key, 0)
        self._served[key] = index + 1
        return recording.responses[min(index, len(recording.responses) - 1)]

    async def _miss(self, request: Request, key: str) -> ReplayMiss:
        wanted = _lines(msgspec.json.decode(normalised_request(request, self._normalise)))
        best: tuple[float, str, list[str]] | None = None
        directory = trio.Path(self._dir)
        files = sorted(await directory.glob("*.json")) if await directory.is_dir() else []
        for file in files:
            try:
                recording = msgspec.json.decode(await file.read_bytes(), type=Recording)
            except (msgspec.DecodeError, msgspec.ValidationError):
                continue
            lines = _lines(recording.request)
            ratio = difflib.SequenceMatcher(None, lines, wanted, autojunk=False).ratio()
            if best is None or ratio > best[0]:
                best = (ratio, recording.key, lines)
        message = f"no recording for request {key} in {self._dir}"
        if best is None:
            return ReplayMiss(
                message + " (no recordings there)", key=key, closest=None, provider=self._name
            )
        ratio, closest, lines = best
        message += f"; closest recording is {closest} (similarity {ratio:.2f})"
        difference = _first_difference(lines, wanted)
        if difference:
            message += f"; first difference: {difference}"
        return ReplayMiss(message, key=key, closest=closest, provider=self._name)


def recorded_providers(directory: str) -> list[str]:
    """The providers whose answers ``directory`` holds (the order they are first met
    in, by file name), or :class:`~tsukud.errors.UsageError` when it holds none: a
    replay serves them alone, so no failover mixes another provider's recordings in."""
    from tsukud.errors import UsageError

    hint = "Name a directory TSUKU_LLM_RECORD_DIR wrote (docs/eval.md)."
    path = Path(directory)
    if not path.is_absolute():
        raise UsageError(f"a recording must be an absolute path (got {directory!r})", hint=hint)
    found: list[str] = []
    try:
        files = sorted(path.glob("*.json")) if path.is_dir() else []
        for file in files:
            try:
                recording = msgspec.json.decode(file.read_bytes(), type=Recording)
            except (msgspec.DecodeError, msgspec.ValidationError):
                continue
            if recording.provider not in found:
                found.append(recording.provider)
    except (OSError, ValueError) as exc:  # unreadable; ValueError: a NUL in the path
        raise UsageError(f"cannot read the recording {directory}: {exc}", hint=hint) from None
    if not found:
        raise UsageError(f"{directory} holds no recorded LLM exchanges", hint=hint)
    return found


def _first_difference(recorded: list[str], wanted: list[str]) -> str | None:
    for index, (old, new) in enumerate(zip(recorded, wanted, strict=False)):
        if old != new:
            return (
                f"line {index + 1}: recorded {old.strip()[:120]!r}, requested {new.strip()[:120]!r}"
            )
    if len(recorded) != len(wanted):
        return f"recorded request has {len(recorded)} lines, this one {len(wanted)}"
    return None
