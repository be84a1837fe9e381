"""The answer-extraction mode of a run (``--metadata '{"answer_extraction": "lenient"}'``).

``strict`` (default) is the papers' parsing rule; ``lenient`` also accepts answers stated in a
sentence (see :mod:`lm_eval_bias.core.parsing`). The mode is stamped on every doc when the task loads
(lm-eval hands ``--metadata`` to ``custom_dataset``), so ``process_results`` parses accordingly and
every logged record carries ``extraction``: strict and lenient records are never merged
(:mod:`lm_eval_bias.samples` refuses to).
"""

from __future__ import annotations

from typing import Any

from lm_eval_bias.core.parsing import extraction_mode


def tag_docs(docs: list[dict[str, Any]], answer_extraction: str | None) -> list[dict[str, Any]]:
    """``docs`` with ``extraction`` set to the validated mode (ValueError names the choices)."""
    mode = extraction_mode(answer_extraction)
    for doc in docs:
        doc["extraction"] = mode
    return docs


def is_lenient(doc: dict[str, Any]) -> bool:
    return doc.get("extraction") == "lenient"


def mode_of(doc: dict[str, Any]) -> str:
    return doc.get("extraction") or "strict"
