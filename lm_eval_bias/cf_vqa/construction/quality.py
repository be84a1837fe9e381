"""Stage 5: pair quality, the paper's Table 1 for the user's pairs (App. C): Attribute Reflection and
Common Content Discrepancy per pair and image set (:mod:`lm_eval_bias.cf_vqa.pair_quality`), and per
generator with pair-bootstrap intervals and paired differences between generators."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from lm_eval_bias.cf_vqa.construction.store import (
    STAGES,
    AppendLog,
    StageError,
    csv_text,
    described_pairs,
    generated_pairs,
    image_sets,
    part_suffix,
    read_stage,
    shard_items,
    todo,
    write_text_atomic,
)


def run_quality(workdir: Path, make_embedder: Callable[[], Any], *, sets: list[str] | None, shard: str | None,
                temperature: float, beta: float, retry_failed: bool = False) -> dict[str, int]:
    """Attribute Reflection and Common Content Discrepancy (App. C) of every generated pair of every
    image set: ``quality.jsonl`` (one line per set x pair). ``make_embedder()`` (a
    :class:`~lm_eval_bias.cf_vqa.pair_quality.ClipPairEmbedder`) is called only when items are pending."""
    from PIL import Image

    stem, key = STAGES["quality"]
    pairs = described_pairs(workdir)
    names = sets or image_sets(workdir)
    if not names:
        raise StageError(f"{workdir}: no image sets yet; run the images stage first")
    items = []
    for name in names:
        generated = generated_pairs(workdir, name)
        if not generated:
            raise StageError(f"{workdir}: image set {name!r} has no generated pairs")
        items += [{"item_id": f"{name}/{k}", "image_set": name, **v} for k, v in generated.items() if k in pairs]
    done = read_stage(workdir, stem, key)
    pending = todo(shard_items(items, key, shard), key, done, retry_failed)
    counts = {"done_before": len(done), "ok": 0, "failed": 0}
    if not pending:
        return counts
    embedder = make_embedder()
    with AppendLog(workdir / f"{stem}{part_suffix(shard)}.jsonl") as out:
        for item in pending:
            pair = pairs[item["pair_id"]]
            record = {"item_id": item["item_id"], "pair_id": item["pair_id"], "image_set": item["image_set"],
                      "generator": item["generator"], "category": pair["category"], "clip": embedder.settings,
                      "temperature": temperature, "beta": beta}
            try:
                with Image.open(workdir / item["image_plus"]) as a, Image.open(workdir / item["image_minus"]) as b:
                    metrics = embedder.pair_metrics(a, b, pair["description_plus"], pair["description_minus"],
                                                    temperature=temperature, beta=beta)
            except (OSError, ValueError) as exc:
                out.append({**record, "status": "failed", "reason": " ".join(f"{type(exc).__name__}: {exc}".split())})
                counts["failed"] += 1
                continue
            out.append({**record, "status": "ok", "reason": None, **metrics})
            counts["ok"] += 1
    return counts


def quality_table(workdir: Path, n_boot: int = 2000, seed: int = 0) -> list[dict[str, Any]]:
    """Table 1 for the user's pairs: per image set (generator), the mean Attribute Reflection and Common
    Content Discrepancy over pairs with 95 % pair-bootstrap intervals (``quality_summary.csv``); for
    every two image sets, the paired difference (second minus first) over the pairs both scored, with
    its pair-bootstrap interval (``quality_comparison.csv``); both in ``quality_summary.json``."""
    from lm_eval_bias.cf_vqa.pair_quality import summarize_over_pairs

    stem, key = STAGES["quality"]
    by_set: dict[str, list[dict[str, Any]]] = {}
    for item in read_stage(workdir, stem, key).values():
        if item.get("status") == "ok":
            by_set.setdefault(item["image_set"], []).append(item)
    if not by_set:
        raise StageError(f"{workdir}: no pair-quality results yet; run the quality stage first")
    rows = []
    for name in sorted(by_set):
        items = sorted(by_set[name], key=lambda r: r["pair_id"])
        ar = summarize_over_pairs([r["attribute_reflection"] for r in items], n_boot, seed)
        ccd = summarize_over_pairs([r["common_content_discrepancy"] for r in items], n_boot, seed)
        rows.append({"image_set": name, "generator": items[0]["generator"], "n_pairs": ar.n_pairs,
                     "attribute_reflection": ar.mean, "attribute_reflection_ci_low": ar.ci_low,
                     "attribute_reflection_ci_high": ar.ci_high, "common_content_discrepancy": ccd.mean,
                     "common_content_discrepancy_ci_low": ccd.ci_low, "common_content_discrepancy_ci_high": ccd.ci_high})
    comparisons = []
    names = sorted(by_set)
    for i, first in enumerate(names):
        for second in names[i + 1:]:
            a = {r["pair_id"]: r for r in by_set[first]}
            b = {r["pair_id"]: r for r in by_set[second]}
            common = sorted(set(a) & set(b))
            row: dict[str, Any] = {"image_set": second, "minus_image_set": first, "n_common_pairs": len(common)}
            for metric in ("attribute_reflection", "common_content_discrepancy"):
                diff = summarize_over_pairs([b[k][metric] - a[k][metric] for k in common], n_boot, seed)
                row.update({f"{metric}_difference": diff.mean, f"{metric}_difference_ci_low": diff.ci_low,
                            f"{metric}_difference_ci_high": diff.ci_high})
            comparisons.append(row)
    write_text_atomic(workdir / "quality_summary.csv", csv_text(tuple(rows[0]), rows))
    write_text_atomic(workdir / "quality_summary.json",
                      json.dumps({"by_image_set": rows, "paired_differences": comparisons}, indent=2) + "\n")
    if comparisons:
        write_text_atomic(workdir / "quality_comparison.csv", csv_text(tuple(comparisons[0]), comparisons))
    return rows
