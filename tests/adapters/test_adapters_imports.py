"""Importing weakprompt and its adapters never loads a provider SDK or llama.cpp."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("openai", "anthropic", "llama_cpp", "httpx2", "httpx", "google.genai")

PROBE = f"""
import json, sys
import weakprompt
import weakprompt.adapters
import weakprompt.adapters.openai, weakprompt.adapters.anthropic, weakprompt.adapters.local
import weakprompt.adapters.openai_responses, weakprompt.adapters.gemini
import weakprompt.adapters.testing, weakprompt.adapters.error_mapping
print(json.dumps([name for name in {HEAVY!r} if name in sys.modules]))
"""


def test_no_sdk_or_llama_cpp_is_imported() -> None:
    result = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    assert json.loads(result.stdout) == []


def test_the_probe_would_notice_an_sdk_import() -> None:
    probe = PROBE.replace("import weakprompt\n", "import weakprompt, openai\n", 1)
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert "openai" in json.loads(result.stdout)
