"""``registries/cpan_checksums.py``: a CPAN author directory's CHECKSUMS read as data.

The text comes from a mirror and is Perl: everything beyond Data::Dumper's hash literal
is refused with a hint, and nothing is ever evaluated. The fake mirror's writer
(``tsukud/testing/cpan.py`` ``checksums_file``) shares no code with the parser."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tsukud.errors import CATALOGUE, ExitCode
from tsukud.registries import cpan_checksums
from tsukud.registries.cpan_checksums import (
    MAX_BYTES,
    MAX_ENTRIES,
    CpanChecksumsInvalid,
    FileSums,
    parse_checksums,
    strip_armour,
)
from tsukud.testing.cpan import checksums_file

SHA = "f239031b672604dafe456909ba3121f0c002e135bbc394fafd072397ecfadc99"
HEAD = "# CHECKSUMS file written on Fri Jul 24 15:59:10 2020 GMT by CPAN::Checksums (v2.12)\n"
SIGNATURE = (
    "-----BEGIN PGP SIGNATURE-----\n\n"
    "iEYEARECAAYFAl8bBi4ACgkQ\n=ab/+\n"
    "-----END PGP SIGNATURE-----\n"
)

# As PAUSE serves one: valid Perl too (the heredoc skips the armour's header).
PAUSE = (
    "0&&<<''; # this PGP-signed message is also valid perl\n"
    "-----BEGIN PGP SIGNED MESSAGE-----\n"
    "Hash: SHA1\n"
    "\n" + HEAD + "$cksum = {\n"
    "  'Acme-Study-Perl-0.0.1.tar.gz' => {\n"
    "    'md5' => 'd474ea9bf1861d696f05fbfc9e845f77',\n"
    "    'md5-ungz' => '9614de46e57904130b6f75c0fe8fdd22',\n"
    "    'mtime' => '2020-07-24',\n"
    f"    'sha256' => '{SHA}',\n"
    f"    'sha256-ungz' => '{SHA.upper()}',\n"
    "    'size' => 211\n"
    "  },\n"
    "  'sub' => {\n"
    "    'isdir' => 1\n"
    "  },\n"
    "  'Big-1.0.tar.gz' => {\n"
    f"    'sha256' => '{SHA.upper()}',\n"
    "    'size' => '12345678901'\n"  # Data::Dumper quotes numbers past nine digits
    "  },\n"
    "};\n"
    "__END__\n" + SIGNATURE
)


def _literal(inner: str) -> bytes:
    """An unsigned CHECKSUMS whose hash is ``inner``."""
    return f"{HEAD}$cksum = {{\n{inner}\n}};\n".encode()


def _refused(data: bytes) -> CpanChecksumsInvalid:
    with pytest.raises(CpanChecksumsInvalid) as err:
        parse_checksums(data)
    e = err.value
    assert e.code == "cpan_checksums_invalid" and e.exit_code == ExitCode.INSTALL_FAILED
    assert e.message.startswith("the mirror's CHECKSUMS is refused: ")
    assert "never run" in e.hint and "nothing was installed" in e.hint
    return e


def test_pauses_signed_checksums_read_as_each_files_sha256_and_size() -> None:
    assert parse_checksums(PAUSE.encode()) == {
        "Acme-Study-Perl-0.0.1.tar.gz": FileSums(sha256=SHA, size=211),
        "sub": FileSums(),  # a directory: nothing to vouch for
        "Big-1.0.tar.gz": FileSums(sha256=SHA, size=12_345_678_901),
    }
    # CRLF line ends, and the same text unsigned (CPAN::Checksums without a key).
    assert parse_checksums(PAUSE.replace("\n", "\r\n").encode()) == parse_checksums(PAUSE.encode())
    unsigned = PAUSE.split("\n\n", 1)[1].split("__END__")[0]
    assert parse_checksums(unsigned.encode()) == parse_checksums(PAUSE.encode())


def test_the_fake_mirrors_checksums_read_back_as_written() -> None:
    files = {"A-1.0.tar.gz": b"a", "B-2.tgz": b"bb" * 1000}
    for signed in (True, False):
        sums = parse_checksums(checksums_file(files, signed=signed))
        assert sums == {
            n: FileSums(sha256=hashlib.sha256(d).hexdigest(), size=len(d)) for n, d in files.items()
        }


def test_strings_read_as_perl_reads_them() -> None:
    sums = parse_checksums(
        _literal(
            r"""'it\'s \\ \n' => { 'size' => 1 },"""
            "\n"
            r""""q\"\$\@\\\t" => { "size" => 2, },"""
            "\n"
            r"""'a#b' => {}, # a comment, then a trailing comma"""
        )
    )
    assert sums == {
        "it's \\ \\n": FileSums(size=1),
        'q"$@\\\t': FileSums(size=2),
        "a#b": FileSums(),
    }


def test_dash_escaped_lines_of_the_signed_body_are_unescaped() -> None:
    body = f"{HEAD}$cksum = {{\n- -'x' => {{ 'size' => 3 }}\n}};\n"
    signed = "-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA256\n\n" + body + SIGNATURE
    assert strip_armour(signed) == body.replace("- -", "-")
    with pytest.raises(CpanChecksumsInvalid):  # '-x' is not a key: refused, not skipped
        parse_checksums(signed.encode())


SMUGGLED = "system('touch /tmp/pwned')"


@pytest.mark.parametrize(
    ("what", "data", "says"),
    [
        ("a do block", f"$cksum = do {{ {SMUGGLED}; {{}} }};".encode(), "'do' is not plain"),
        ("an anonymous sub", _literal(f"'a' => sub {{ {SMUGGLED} }}"), "'sub' is not plain"),
        ("backticks", _literal("'a' => `id`"), "'`' is not plain"),
        ("a call", _literal(f"'a' => {SMUGGLED}"), "'system' is not plain"),
        ("a bareword key", _literal("size => 1"), "'size' is not plain"),
        ("q{} quoting", _literal("'a' => q{x}"), "'q' is not plain"),
        ("a heredoc", _literal("'a' => <<EOF\nx\nEOF"), "'<' is not plain"),
        ("a scalar interpolated", _literal('"$x" => {}'), "$ in a double-quoted string"),
        ("an array interpolated", _literal("'a' => { 'md5' => \"@x\" }"), "@ in a double"),
        ("code in a string", _literal("'a' => \"${\\ `id` }\""), "$ in a double-quoted"),
        ("an unknown escape", _literal("'a' => \"\\x{41}\""), "the escape \\x"),
        ("a variable as a value", _literal("'a' => $ENV{HOME}"), "'$ENV' where a value belongs"),
        ("a second statement", _literal("'a' => {}") + SMUGGLED.encode() + b";", "'system' is not"),
        ("another variable", b"$other = {};\n", "'$other' where '$cksum'"),
        ("a statement after", _literal("") + b"$cksum = {};\n", "a second statement"),
        ("two assignments", b"$cksum = $x = {};", "'$x' where '{'"),
        ("an unclosed hash", b"$cksum = { 'a' => { 'size' => 1 },\n", "unbalanced"),
        ("a brace too many", _literal("'a' => {} }"), "'}' where ';'"),
        ("no semicolon", f"{HEAD}$cksum = {{}}\n".encode(), "unbalanced"),
        ("nested too deep", _literal("'a' => { 'b' => { 'c' => 1 } }"), "nested deeper"),
        ("a comma for =>", _literal("'a', {}"), "',' where '=>'"),
        ("a list", _literal("'a' => ['x']"), "'[' is not plain"),
        ("a hex number", _literal("'a' => { 'size' => 0x10 }"), "'0x10' is not plain"),
        ("an underscored number", _literal("'a' => { 'size' => 1_000 }"), "'1_000' is not plain"),
        ("a key given twice", _literal(f"'a' => {{ 'sha256' => '{SHA}' }}, 'a' => {{}}"), "twice"),
        ("a field given twice", _literal("'a' => { 'size' => 1, 'size' => 2 }"), "twice"),
        ("a scalar entry", _literal("'a' => 'b'"), "not a hash of fields"),
        ("a short sha256", _literal("'a' => { 'sha256' => 'abc' }"), "not 64 hex digits"),
        ("a size not a number", _literal("'a' => { 'size' => '1e9' }"), "not a whole number"),
        ("a negative size", _literal("'a' => { 'size' => -1 }"), "not a whole number"),
        ("text after __END__", _literal("") + b"__END__\nmore\n", "after __END__"),
        ("nothing", b"# only a comment\n", "no $cksum"),
        ("not UTF-8", _literal("'\xe9' => {}").decode().encode("latin-1"), "not UTF-8"),
        ("a NUL byte", _literal("'a\0' => {}"), "control character"),
        ("an escape sequence", _literal("'\x1b[2J' => {}"), "control character"),
        ("too large", b" " * (MAX_BYTES + 1), "more than"),
    ],
)
def test_anything_but_cpans_hash_literal_is_refused_with_a_hint(
    what: str, data: bytes, says: str
) -> None:
    e = _refused(data)
    assert says in e.message, (what, e.message)


@pytest.mark.parametrize(
    ("what", "text", "says"),
    [
        ("Perl before the armour", f"{SMUGGLED};\n" + PAUSE.split("\n", 1)[1], "before the signed"),
        ("Perl after the signature", PAUSE + f"{SMUGGLED};\n", "after the signature"),
        ("Perl in the preamble", PAUSE.replace("0&&<<'';", f"0&&<<''; {SMUGGLED};"), "before the"),
        ("a second signed message", PAUSE + PAUSE.split("\n", 1)[1], "after the signature"),
        ("a lost signature", PAUSE.split("__END__")[0], "without its signature"),
        ("text in the signature", PAUSE.replace("=ab/+", f"{SMUGGLED};"), "inside the signature"),
        ("a bad armour header", PAUSE.replace("Hash: SHA1", "$cksum = {};"), "armour header"),
        ("an unescaped dash line", PAUSE.replace("$cksum", "-$cksum"), "unescaped dash"),
        ("an armour mid-line", "x -----BEGIN PGP SIGNED MESSAGE-----\n", "does not start a line"),
    ],
)
def test_only_the_signed_body_is_read_and_nothing_may_stand_outside_it(
    what: str, text: str, says: str
) -> None:
    e = _refused(text.encode())
    assert says in e.message, (what, e.message)


def test_a_refusal_names_the_line_it_stands_on() -> None:
    e = _refused(_literal("'a' => {},\n'b' => `id`"))
    assert e.message.endswith("(line 4)")


def test_more_files_than_an_author_directory_has_are_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert MAX_ENTRIES == 100_000  # the largest author directories list a few thousand
    monkeypatch.setattr(cpan_checksums, "MAX_ENTRIES", 1000)  # the same rule, read faster
    entries = ",".join(f"'f{i}' => {{}}" for i in range(1000))
    assert len(parse_checksums(_literal(entries))) == 1000
    assert "more entries" in _refused(_literal(entries + ",'one more' => {}")).message
    fields = ",".join(f"'f{i}' => 1" for i in range(65))
    assert "more entries" in _refused(_literal(f"'a' => {{ {fields} }}")).message


def test_the_code_is_in_the_catalogue_with_a_hint() -> None:
    assert CATALOGUE["cpan_checksums_invalid"].hint


# Pieces of Perl a hostile mirror would splice into a CHECKSUMS.
_PIECES = st.sampled_from(
    ["{", "}", "=>", ",", ";", "'", '"', "$", "@", "\\", "`", "do", "sub", "#", "\n", "-", "0x1"]
)


@given(st.integers(0, len(PAUSE)), st.lists(st.one_of(_PIECES, st.text(max_size=6)), max_size=6))
def test_any_splice_into_pauses_text_reads_as_data_or_is_refused(
    at: int, pieces: list[str]
) -> None:
    """Whatever is spliced in, the parser answers data or its one typed refusal: no
    other exception, and every sha256 it answers is 64 lowercase hex digits."""
    text = PAUSE[:at] + "".join(pieces) + PAUSE[at:]
    try:
        sums = parse_checksums(text.encode("utf-8", "surrogatepass"))
    except CpanChecksumsInvalid as e:
        assert e.hint
        return
    for entry in sums.values():
        assert entry.sha256 is None or (len(entry.sha256) == 64 and entry.sha256.islower())
