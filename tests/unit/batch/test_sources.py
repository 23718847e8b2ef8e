"""``batch add`` input: bad lines reported with their numbers, good ones kept, each
(tool, source) once, JSON lines with a priority, sources checked by create's parsers."""

from __future__ import annotations

from tsukud.batch.sources import job_id, parse


def test_good_lines_are_kept_and_bad_ones_reported_with_their_numbers() -> None:
    text = "\n".join(
        [
            "# a comment",
            "stern github:stern/stern",
            "",
            "prettier npm:prettier",
            "just-one-word",
            "htop homebrew:htop",
            "site http://example.com/tool",  # not a source create knows
            "Bad/Name github:a/b",  # not a tool name
            "rg crates:ripgrep extra",  # three words
            '{"tool": "black", "source": "pypi:black", "priority": 7}',
            '{"tool": "x", "source": "npm:x", "priority": "high"}',
            '{"tool": "y", "source": "npm:y", "colour": 1}',
            "{not json",
            "gh github:only-owner",
        ]
    )
    parsed = parse(text)
    assert [(j.tool, j.source, j.priority) for j in parsed.jobs] == [
        ("stern", "github:stern/stern", 0),
        ("prettier", "npm:prettier", 0),
        ("htop", "homebrew:htop", 0),
        ("black", "pypi:black", 7),
    ]
    assert [b.line for b in parsed.bad] == [5, 7, 8, 9, 11, 12, 13, 14]
    errors = {b.line: b.error for b in parsed.bad}
    assert "unknown source 'http://example.com/tool'" in errors[7]
    assert "not a valid tool name" in errors[8]
    assert "TOOL SOURCE" in errors[9]
    assert '"priority" must be an integer' in errors[11]
    assert "unknown key(s) colour" in errors[12]
    assert "not a JSON object" in errors[13]
    assert "expected github:owner/repo" in errors[14]
    assert parsed.duplicates == []


def test_the_same_source_spelt_twice_is_one_job() -> None:
    text = (
        "stern github:stern/stern\n"
        "stern github:Stern/Stern\n"  # GitHub names are case-insensitive
        "stern stern/stern\n"  # a bare owner/repo is GitHub's
        '{"tool": "stern", "source": "github:stern/stern", "priority": 3}\n'
        "STERN npm:stern\n"  # another source of the same tool is another job
    )
    parsed = parse(text)
    assert [(j.tool, j.source) for j in parsed.jobs] == [
        ("stern", "github:stern/stern"),
        ("stern", "npm:stern"),
    ]
    assert parsed.duplicates == [2, 3, 4]
    assert parsed.jobs[0].id == job_id("stern", "github:stern/stern")
    assert job_id("stern", "github:stern/stern") != job_id("stern", "npm:stern")


def test_a_bad_line_shows_no_escape_sequences_and_no_secret() -> None:
    token = "ghp_" + "a1B2" * 9
    parsed = parse(f"evil\x1b[2J github:a/b c\nleak {token}\n")
    shown = " ".join(b.text + b.error for b in parsed.bad)
    assert "\x1b" not in shown and token not in shown
    assert [b.line for b in parsed.bad] == [1, 2]


def test_a_long_list_in_parts_keeps_its_line_numbers() -> None:
    """``tsukuctl batch add`` sends a long file in parts (each request under the frame
    limit); the daemon numbers each part's lines from where the part starts."""
    from tsukuctl.batch_commands import parts

    text = "".join(f"t{i} npm:t{i}\n" for i in range(5000)) + "bad\n" + "last npm:last"
    cut = parts(text, size=10_000)
    assert len(cut) > 5 and "".join(p for _, p in cut) == text
    jobs, bad = [], []
    for first, part in cut:
        parsed = parse(part, first)
        jobs += parsed.jobs
        bad += parsed.bad
    assert len(jobs) == 5001 and [b.line for b in bad] == [5001]
    assert parts("") == [(1, "")]
