"""The redaction module: safe descriptions of hostile exceptions, and what the default hook scrubs."""

from __future__ import annotations

import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st

from weakprompt.runtime import default_redact
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
