"""Regular-expression search over the lines of an output, with a hard time limit.

Patterns come from a model, and Python's ``re`` can take exponential time
on some of them. ``re`` cannot be interrupted from another thread (the
search holds the interpreter lock), so the scan runs in a short-lived child
interpreter that is killed when the time is up. Where no child process can
be started, the scan runs in-process and checks the clock between lines:
that bounds the total time for ordinary patterns but cannot stop a single
runaway match, which the child process can.
"""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
from collections.abc import Sequence

import attrs

from ....clock import SYSTEM_CLOCK, Clock

__all__ = [
    "MAX_PATTERN_CHARS",
    "LineHit",
    "PatternError",
    "SearchFailed",
    "SearchOutcome",
    "SearchTimeout",
    "compile_pattern",
    "search_lines",
]

logger = logging.getLogger(__name__)

MAX_PATTERN_CHARS = 1000


class PatternError(ValueError):
    """The pattern is not a usable regular expression; the message says why and where."""


class SearchTimeout(Exception):
    """The search did not finish within its time limit."""


class SearchFailed(Exception):
    """The search process broke down for a reason other than time."""


@attrs.frozen
class LineHit:
    """The first match on one line: 0-based line index, character offsets within the line."""

    line: int
    start: int
    end: int


@attrs.frozen
class SearchOutcome:
    """The first ``max_hits`` matching lines, and how many lines matched in all."""

    hits: tuple[LineHit, ...]
    total: int


def compile_pattern(pattern: str) -> re.Pattern[str]:
    """Compile ``pattern`` or raise :class:`PatternError` saying what is wrong with it."""
    if not pattern:
        raise PatternError("the pattern is empty; give a regular expression to search for")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise PatternError(f"the pattern is {len(pattern)} characters long; the limit is {MAX_PATTERN_CHARS}")
    try:
        return re.compile(pattern)
    except re.error as exc:
        where = f" at position {exc.pos}" if exc.pos is not None else ""
        raise PatternError(f"the pattern is not a valid regular expression: {exc.msg}{where}") from exc
    except (OverflowError, RecursionError) as exc:  # huge repeat counts, absurd nesting
        raise PatternError(f"the pattern cannot be compiled: {exc}") from exc


# The child gets the pattern and limit as one JSON line, then the lines joined by "\n",
# and answers with one JSON object. It must split exactly as the parent does.
_CHILD = """
import json, re, sys
head, _, body = sys.stdin.buffer.read().partition(b"\\n")
spec = json.loads(head)
search = re.compile(spec["pattern"]).search
limit = spec["max_hits"]
hits = []
total = 0
for index, line in enumerate(body.decode("utf-8").split("\\n") if spec["count"] else ()):
    found = search(line)
    if found is not None:
        total += 1
        if len(hits) < limit:
            hits.append((index, found.start(), found.end()))
sys.stdout.write(json.dumps({"hits": hits, "total": total}))
"""


def _parse_child(output: bytes) -> SearchOutcome:
    answer = json.loads(output)
    hits = tuple(LineHit(int(line), int(start), int(end)) for line, start, end in answer["hits"])
    return SearchOutcome(hits=hits, total=int(answer["total"]))


def _in_child(pattern: str, lines: Sequence[str], max_hits: int, timeout: float) -> SearchOutcome:
    header = json.dumps({"pattern": pattern, "max_hits": max_hits, "count": len(lines)})
    payload = header.encode("utf-8") + b"\n" + "\n".join(lines).encode("utf-8")
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-S", "-c", _CHILD],
            input=payload,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise SearchTimeout(f"the search ran longer than {timeout:g} s and was stopped") from exc
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", errors="replace").strip().splitlines()
        raise SearchFailed(f"the search process failed: {detail[-1] if detail else done.returncode}")
    return _parse_child(done.stdout)


def _in_process(
    compiled: re.Pattern[str], lines: Sequence[str], max_hits: int, timeout: float, clock: Clock
) -> SearchOutcome:
    stop_at = clock.monotonic() + timeout
    hits: list[LineHit] = []
    total = 0
    for index, line in enumerate(lines):
        if clock.monotonic() > stop_at:
            raise SearchTimeout(
                f"the search ran longer than {timeout:g} s and was stopped at line {index + 1}"
            )
        found = compiled.search(line)
        if found is not None:
            total += 1
            if len(hits) < max_hits:
                hits.append(LineHit(index, found.start(), found.end()))
    return SearchOutcome(hits=tuple(hits), total=total)


def search_lines(
    pattern: str,
    lines: Sequence[str],
    *,
    max_hits: int,
    timeout: float,
    isolate: bool = True,
    clock: Clock = SYSTEM_CLOCK,
) -> SearchOutcome:
    """Find the lines where ``pattern`` matches (``re.search``), first match per line.

    Raises :class:`PatternError` for a bad pattern, :class:`SearchTimeout`
    when ``timeout`` seconds pass first, and :class:`SearchFailed` when the
    child process breaks. ``isolate=False`` skips the child process.
    """
    compiled = compile_pattern(pattern)
    if isolate and sys.executable:
        try:
            return _in_child(pattern, lines, max_hits, timeout)
        except OSError as exc:  # no way to start a process here: search in-process instead
            logger.warning("regex search falls back to in-process scanning: %s", exc)
    return _in_process(compiled, lines, max_hits, timeout, clock)
