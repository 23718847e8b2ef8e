"""A pip_exec lock read as exactly its hashed ``==`` pins: whatever else pip would honour
in a requirements file (another index, a path, a range, a marker, an unhashed pin) is
refused, so the requirements file pip gets says nothing the lock's pins do not."""

from __future__ import annotations

import pytest

from tsukud.registries.pypi import BadLock, LockedRequirement, lock_text, parse_lock

A = "a" * 64
B = "B" * 64


def test_pins_with_continuations_comments_and_several_hashes_are_read() -> None:
    text = (
        "# generated\n"
        f"black==26.1a1 \\\n    --hash=sha256:{A} \\\n    --hash=sha256:{B}\n\n"
        f"typing_extensions==4.15.0 --hash=sha256:{A}  # via black\n"
    )
    entries = parse_lock(text)
    assert entries == (
        LockedRequirement("black", "26.1a1", (A, B.lower())),
        LockedRequirement("typing_extensions", "4.15.0", (A,)),
    )
    assert lock_text(entries) == (
        f"black==26.1a1 --hash=sha256:{A} --hash=sha256:{B.lower()}\n"
        f"typing_extensions==4.15.0 --hash=sha256:{A}\n"
    )
    assert parse_lock(lock_text(entries)) == entries


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (f"--extra-index-url http://evil.test/simple\nx==1 --hash=sha256:{A}\n", "name==version"),
        (f"--index-url=http://evil.test/simple\nx==1 --hash=sha256:{A}\n", "name==version"),
        (f"-e git+https://evil.test/x.git\nx==1 --hash=sha256:{A}\n", "name==version"),
        (f"x @ https://evil.test/x.whl --hash=sha256:{A}\n", "name==version"),
        (f"./x.whl --hash=sha256:{A}\n", "name==version"),
        (f"x>=1 --hash=sha256:{A}\n", "name==version"),
        ("x==1\n", "--hash"),
        (f"x==1 --hash=md5:{'a' * 32}\n", "--hash"),
        (f'x==1 ; python_version < "3.11" --hash=sha256:{A}\n', "--hash"),
        (f"x==1 --hash=sha256:{A}\nX==2 --hash=sha256:{A}\n", "pinned twice"),
        ("# nothing\n\n", "pins no package"),
    ],
)
def test_anything_but_hashed_pins_is_refused(text: str, why: str) -> None:
    with pytest.raises(BadLock) as err:
        parse_lock(text)
    assert why in str(err.value)
