"""The llama-cpp-python boundary: model files, the model cache, load progress."""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

import pytest

from weakprompt.adapters import _llama


class ClosableLlama:
    def __init__(self) -> None:
        self.closed = 0
        self.metadata: Any = None

    def close(self) -> None:
        self.closed += 1


def test_model_facts_without_metadata() -> None:
    model = _llama.LlamaModel(ClosableLlama(), path=Path("m.gguf"))
    assert model.path == Path("m.gguf")
    assert model.chat_template is None
    assert model.tokenize("") == []


def test_a_plain_module_is_searched_next_to_its_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "single_file_model.py").write_text("")
    (tmp_path / "weights.gguf").write_bytes(b"")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _llama.default_model_path("single_file_model") == tmp_path / "weights.gguf"


def test_cached_models_are_closed_at_exit_and_forgotten() -> None:
    llama = ClosableLlama()
    key = _llama.ModelKey("/nowhere.gguf", 256, None, None)
    _llama._cache[key] = _llama.LlamaModel(llama)
    try:
        _llama._close_cached_models()
        assert llama.closed == 1
        assert key not in _llama._cache
    finally:
        _llama._cache.pop(key, None)


def test_clear_model_cache_forgets_models() -> None:
    key = _llama.ModelKey("/elsewhere.gguf", 256, None, None)
    _llama._cache[key] = _llama.LlamaModel(ClosableLlama())
    _llama.clear_model_cache()
    assert key not in _llama._cache


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_spinner_runs_only_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    with _llama._progress("loading test.gguf (1 MB)", enabled=True):
        pass
    with _llama._progress("loading quietly", enabled=False):
        pass
    assert "loading test.gguf" in terminal.getvalue()
    assert "quietly" not in terminal.getvalue()
