"""The loop's modules talk through public interfaces, and no benchmark switch sits in the runtime."""

from __future__ import annotations

from pathlib import Path

import weakprompt.runtime

RUNTIME = Path(weakprompt.runtime.__file__).resolve().parent


def test_no_module_of_the_runtime_reaches_into_another_modules_private_members() -> None:
    """Private access would need a pyright ignore: there is none (the loop's parts use public members)."""
    offenders = [
        f"{path.relative_to(RUNTIME)}:{number}"
        for path in sorted(RUNTIME.rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "reportPrivateUsage" in line
    ]
    assert offenders == []


def test_where_a_run_does_its_store_work_has_no_switch() -> None:
    """The benchmark once set ``_store_work.mode``; the placement now follows the store and the loop alone."""
    from weakprompt.runtime import _store_work

    assert not hasattr(_store_work, "mode")
