"""Shards of a task's docs for large runs: ``--metadata '{"shard": "i/n"}'`` (0 <= i < n).

Docs are dealt round-robin by *unit* in doc order — a 2AFC pair (its AB and BA docs), a Counterfactual
VQA pair (both images, all option orders), a salary unit (occupation x biography x template) — so a
unit is never split across shards. Each shard is a normal lm-eval run; merging is reading the logged
samples of all shards together (:func:`lm_eval_bias.samples.load_records` on the folder that holds
them, then :func:`lm_eval_bias.samples.summarize`), which gives the same metrics as one unsharded run.
"""

from __future__ import annotations

from typing import Any, Callable


def parse_shard(spec: str | None) -> tuple[int, int] | None:
    """``"i/n"`` -> (i, n); None or "" -> None (no sharding)."""
    if spec in (None, ""):
        return None
    try:
        index, count = (int(x) for x in str(spec).split("/"))
    except ValueError:
        raise ValueError(f'shard must look like "i/n" (e.g. "0/4"), got {spec!r}') from None
    if count < 1 or not 0 <= index < count:
        raise ValueError(f"shard {spec!r}: need 0 <= i < n")
    return index, count


def select_shard(docs: list[dict[str, Any]], spec: str | None, unit: Callable[[dict[str, Any]], Any]) -> list[dict[str, Any]]:
    """The docs of shard ``spec``: units (in order of first appearance) dealt round-robin."""
    shard = parse_shard(spec)
    if shard is None:
        return docs
    index, count = shard
    order: dict[Any, int] = {}
    for doc in docs:
        order.setdefault(unit(doc), len(order))
    return [doc for doc in docs if order[unit(doc)] % count == index]
