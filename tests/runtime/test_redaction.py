"""The redaction module: safe descriptions of hostile exceptions, and what the default hook scrubs."""

from __future__ import annotations

import logging
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from weakprompt.runtime import default_redact, redaction
from weakprompt.runtime.redaction import (
    MAX_ERROR_TEXT,
    REDACTED,
    clip,
    describe_exception,
    escape_surrogates,
    redacted,
    safe_repr,
    type_name,
)


class RaisingStr(Exception):
    def __str__(self) -> str:
        raise RuntimeError("str exploded")


class NonStrStr(Exception):
    def __str__(self) -> str:
        return 42  # type: ignore[return-value]  # noqa: PLE0307


class RecursiveStr(Exception):
    def __str__(self) -> str:
        return str(self)


class SubclassStr(Exception):
    class Text(str):
        def __str__(self) -> str:
            raise RuntimeError("never asked")

    def __str__(self) -> str:
        return self.Text("plain enough")


class LyingMeta(type):
    @property
    def __name__(cls) -> str:  # type: ignore[override]
        raise RuntimeError("no name")


class Nameless(Exception, metaclass=LyingMeta):
    pass


# -- describing exceptions never fails ----------------------------------------------------------


@pytest.mark.parametrize("exc", [RaisingStr(), NonStrStr(), RecursiveStr()], ids=type_name)
def test_an_exception_whose_str_fails_is_described_by_its_type(exc: Exception) -> None:
    assert describe_exception(exc) == f"{type(exc).__name__}: <unprintable>"


def test_a_str_subclass_message_becomes_plain_text() -> None:
    text = describe_exception(SubclassStr())
    assert text == "SubclassStr: plain enough" and type(text) is str


def test_a_type_whose_name_cannot_be_read_is_called_object() -> None:
    assert type_name(Nameless()) == "object"
    assert describe_exception(Nameless("x")) == "object: x"


def test_safe_repr_survives_a_raising_repr_and_cuts_long_text() -> None:
    class BadRepr:
        def __repr__(self) -> str:
            raise RuntimeError("repr exploded")

    assert safe_repr(BadRepr()) == "<unprintable BadRepr>"
    assert len(safe_repr("x" * 1000, 50)) == 50


def test_clip_marks_the_cut_and_leaves_short_text_alone() -> None:
    assert clip("short", 10) == "short"
    assert clip("y" * 100, 30) == "y" * 15 + "... (truncated)"


# -- the default hook ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("key sk-abcdefghijklmnop1234 leaked", f"key {REDACTED} leaked"),
        ("sk-ant-api03-AbCdEf_GhIjKlMnOpQr-stu", REDACTED),
        ("sk-proj-0123456789abcdefABCDEF", REDACTED),
        ("Authorization: Bearer abc.def-ghi", f"Authorization: {REDACTED}"),
        ("proxy-authorization: Basic dXNlcjpwYXNz\nnext line", f"proxy-authorization: {REDACTED}\nnext line"),
        (
            "{'Authorization': 'Basic dXNlcjpwYXNz', 'Host': 'x'}",
            f"{{'Authorization': '{REDACTED}', 'Host': 'x'}}",
        ),
        ("header bearer eyJhbGciOi.J9.xyz== sent", f"header bearer {REDACTED} sent"),
        ('{"x-api-key": "abc123", "n": 1}', f'{{"x-api-key": "{REDACTED}", "n": 1}}'),
        ("api_key=abc123&user=me", f"api_key={REDACTED}&user=me"),
        ("password=hunter2 then", f"password={REDACTED} then"),
        ("PASSWD: 'x y z'", f"PASSWD: '{REDACTED}'"),
        ("token=abc;secret=def", f"token={REDACTED};secret={REDACTED}"),
        ("client_secret = s3cr3t", f"client_secret = {REDACTED}"),
        ("OPENAI_API_KEY=abc DB_PASSWORD: 'pw'", f"OPENAI_API_KEY={REDACTED} DB_PASSWORD: '{REDACTED}'"),
        ("auth-token=abc", f"auth-token={REDACTED}"),
        ("postgresql://app:pa55@db.local:5432/x", f"postgresql://app:{REDACTED}@db.local:5432/x"),
        ("https://:only-pass@host/", f"https://:{REDACTED}@host/"),
        ("redis://u:p@ss@host", f"redis://u:{REDACTED}@host"),
    ],
)
def test_default_redaction_replaces_the_obvious_secrets(text: str, expected: str) -> None:
    assert default_redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "ValueError: bad value",
        "task-abcdefghijklmnopqrstuvwx is a job id",
        "sk-short",
        "authorization failed for this user",
        "used 12 tokens; token budget left: none",
        "see https://example.com/path?q=1 and http://host:8080/x",
        "secret_lookup failed",
        "max_tokens: must be positive",
        "tokens_used: 5",
    ],
)
def test_default_redaction_leaves_ordinary_text_alone(text: str) -> None:
    assert default_redact(text) == text


def test_default_redaction_of_an_exception_keeps_its_old_shape_and_scrubs() -> None:
    assert default_redact(ValueError("x")) == "ValueError: x"
    assert default_redact(ValueError()) == "ValueError"
    assert default_redact(RaisingStr()) == "RaisingStr: <unprintable>"
    assert default_redact(ValueError("Bearer abcdef")) == f"ValueError: Bearer {REDACTED}"
    long = default_redact(ValueError("y" * 5000))
    assert len(long) == MAX_ERROR_TEXT and long.endswith("(truncated)")


def test_a_secret_at_the_cut_is_scrubbed_before_the_cut() -> None:
    secret = "sk-" + "A" * 40
    text = default_redact(ValueError("y" * (MAX_ERROR_TEXT - 30) + secret))
    assert "AAAA" not in text


@given(st.text(alphabet="sk-:/@Bearer \n'\"=aA1", max_size=400))
def test_default_redaction_never_fails_and_is_stable(text: str) -> None:
    once = default_redact(text)
    assert isinstance(once, str)
    assert default_redact(once) == once


def test_default_redaction_stays_fast_on_long_hostile_text() -> None:
    # Regex shapes that would backtrack quadratically are avoided: this finishes at once.
    for text in ("a" * 200_000, "sk-" * 70_000, "://a:" * 40_000, "password=" * 20_000, "a-" * 100_000):
        assert isinstance(default_redact(text), str)


# -- the default hook on long text: only lines that may hold a secret go through the rules ----------

# Fragments that start, end, or almost make a match of some rule, in several cases and lookalikes.
_FRAGMENTS = st.sampled_from(
    [
        "Authorization",
        "proxy-AUTHORIZATION",
        "aUTHORİZATİON",
        "bearer ",
        "Bearer\t",
        "api_key",
        "API-KEY",
        "apikey",
        "\u212aey",
        "token",
        "TOKEN",
        "secret",
        "\u017fecret",
        "password",
        "passwd",
        "PASSWORD",
        "sk-",
        "SK-",
        "abcdefghijklmnop",
        "://",
        "u:p@h",
        "@",
        ":",
        "=",
        " ",
        "\t",
        "\n",
        "\r\n",
        "'",
        '"',
        "x_",
        "-",
        "é",
        "İ",
        "\u0131",
        "1",
        "/",
    ]
)


@pytest.fixture
def tiny_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pieces of a few characters, so that short texts cross every boundary of the fast path."""
    monkeypatch.setattr(redaction, "_PIECE", 16)
    monkeypatch.setattr(redaction, "_SMALL", 0)


@pytest.mark.usefixtures("tiny_pieces")
@given(st.lists(_FRAGMENTS, max_size=60).map("".join))
def test_default_redaction_of_long_text_equals_the_rules_over_the_whole_text(text: str) -> None:
    assert redaction._scrub(text) == redaction._scrub_all(text)


@pytest.mark.usefixtures("tiny_pieces")
@given(st.lists(_FRAGMENTS, max_size=12).map("".join), st.integers(40, 120))
def test_one_long_line_is_checked_piece_by_piece_with_the_same_result(text: str, width: int) -> None:
    line = "v" * width + text.replace("\n", " ") + "w" * width
    for whole in (line, "head\n" + line + "\ntail", line + "\n" + "x" * 100):
        assert redaction._scrub(whole) == redaction._scrub_all(whole)


def test_default_redaction_returns_long_text_without_secrets_as_it_is() -> None:
    text = "2024-05-01 INFO path=/api/items tokens=4 user=bob\n" * 200
    assert default_redact(text) is text
    leaked = text + "curl -H 'Authorization: Bearer abc'\nhttps://u:pw@h/x\n" + text
    scrubbed = f"curl -H 'Authorization: {REDACTED}\nhttps://u:{REDACTED}@h/x\n"
    assert default_redact(leaked) == text + scrubbed + text


def test_the_ascii_lookalikes_are_every_character_a_rule_takes_for_an_ascii_letter() -> None:
    every = "".join(chr(c) for c in range(0x80, 0x110000) if not 0xD800 <= c <= 0xDFFF)
    lookalikes = dict(redaction._ASCII_LOOKALIKES)
    for letter in "abcdefghijklmnopqrstuvwxyz":
        for char in re.findall(letter, every, re.IGNORECASE):
            assert lookalikes.get(char) == letter, f"{char!r} (U+{ord(char):04X}) matches {letter!r}"
    # After them, lower() keeps every length, so positions in the lower-cased copy are positions in the text.
    assert all(len(redaction._folded(char)) == 1 for char in every)


def test_a_piece_whose_length_changes_when_lower_cased_has_every_line_checked(
    tiny_pieces: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(redaction, "_ASCII_LOOKALIKES", ())  # "İ".lower() is two characters
    text = "İ token=abc\nplain\nİ and Authorization: x\n" * 3
    assert redaction._scrub(text) == redaction._scrub_all(text)


# -- applying a hook safely ----------------------------------------------------------------------


def test_a_raising_hook_withholds_the_text(caplog: pytest.LogCaptureFixture) -> None:
    def broken(text: str) -> str:
        raise RuntimeError("hook bug " + text)

    with caplog.at_level(logging.ERROR):
        out = redacted("secret text", broken)
    assert out == "(text withheld: the redaction hook raised RuntimeError)"
    assert "redaction hook" in caplog.text


def test_a_hook_returning_no_text_withholds_the_text() -> None:
    assert (
        redacted("secret", lambda text: None)
        == "(text withheld: the redaction hook returned NoneType, not text)"
    )  # type: ignore[arg-type,return-value]


def test_lone_surrogates_are_escaped_after_the_hook() -> None:
    assert redacted("a\udc80b", lambda text: text) == "a\\udc80b"
    assert escape_surrogates("plain é") == "plain é"
