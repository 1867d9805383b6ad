"""Extraction on the real local model (SmolLM2-135M through llama.cpp).

The tiny model rarely writes the nonce'd wrapper, so either outcome is
legitimate here: a wrapped answer, or the labelled truncate fallback whose
reason quotes the model's reply. What must hold is the plumbing: the real
adapter is called through the metered path, its real token usage is
counted and charged, and a result always comes back.
"""

from __future__ import annotations

import pytest

from extraction_support import log_lines, source
from weakprompt.budget import Budget, BudgetTracker
from weakprompt.runtime.results.extraction import ExtractionConfig, Extractor

pytestmark = pytest.mark.real_model


def test_full_chunked_extraction_on_the_local_model() -> None:
    from weakprompt.adapters.local import LocalAdapter

    model = LocalAdapter(progress=False, max_tokens=96)
    tracker = BudgetTracker(Budget(max_model_calls=5))
    extractor = Extractor(model, config=ExtractionConfig(max_output_tokens=96))
    data = log_lines(12, needle_at=7)

    result = extractor.extract(
        source(data),
        "Report the value of secret in the ERROR line.",
        mode="full-chunked",
        budget_tracker=tracker,
    )

    assert result.model_calls == 1
    assert result.usage.input_tokens > 100 and result.usage.output_tokens > 0
    assert tracker.usage == result.usage
    assert extractor.stats(source(data)).tokens == model.token_counter.count(data.decode())  # type: ignore[union-attr]
    if result.strategy_used == "full-chunked":
        assert result.fallback_reason is None and result.text.strip()
    else:
        assert result.strategy_used == "truncate"
        assert result.fallback_reason is not None and "wrapper (a reply beginning" in result.fallback_reason
        assert "NEEDLE secret=4711" in result.text  # the small output is shown whole
