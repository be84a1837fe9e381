"""Stage 6: ``manifest.jsonl`` in the work folder, exactly the source layout ``lm-eval-bias build cf-vqa``
reads (the work folder is the build's ``--source``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lm_eval_bias.cf_vqa.construction.store import (
    STAGES,
    StageError,
    described_pairs,
    generated_pairs,
    read_stage,
    validated_pairs,
    write_jsonl_atomic,
    write_text_atomic,
)


def write_manifest(workdir: Path, *, image_set: str, require_validation: bool = True,
                   min_reflection: float | None = None, max_discrepancy: float | None = None) -> dict[str, Any]:
    """``manifest.jsonl`` in the work folder (the build's ``--source``): one row per pair that was
    described, kept by the human validation (unless ``require_validation`` is False), generated in
    ``image_set``, and within the optional pair-quality thresholds; the reasons for every left-out
    pair are counted in ``manifest_report.json``."""
    pairs = described_pairs(workdir)
    images = generated_pairs(workdir, image_set)
    ratings = validated_pairs(workdir)
    if ratings is None and require_validation:
        raise StageError(f"{workdir}: no ratings imported; import the completed sheets (import-ratings) or pass "
                         "--no-validation to build a manifest of unvalidated pairs")
    thresholds = min_reflection is not None or max_discrepancy is not None
    quality: dict[str, dict[str, Any]] = {}
    if thresholds:
        stem, key = STAGES["quality"]
        quality = {v["pair_id"]: v for v in read_stage(workdir, stem, key).values()
                   if v.get("status") == "ok" and v["image_set"] == image_set}
    left_out: dict[str, int] = {}
    rows = []
    for pair_id in sorted(pairs):
        pair, rating = pairs[pair_id], (ratings or {}).get(pair_id)
        reason = None
        if require_validation and (rating is None or rating["kept"] is None):
            reason = "not rated"
        elif require_validation and not rating["kept"]:
            reason = "dropped by the human validation (mean rating >= 3)"
        elif pair_id not in images:
            reason = f"no images in set {image_set!r}"
        elif thresholds:
            q = quality.get(pair_id)
            if q is None:
                reason = "no pair-quality result"
            elif min_reflection is not None and q["attribute_reflection"] < min_reflection:
                reason = "attribute reflection below --min-reflection"
            elif max_discrepancy is not None and q["common_content_discrepancy"] > max_discrepancy:
                reason = "common content discrepancy above --max-discrepancy"
        if reason:
            left_out[reason] = left_out.get(reason, 0) + 1
            continue
        rows.append({
            "pair_id": pair_id, "category": pair["category"], "subcategory": pair["subcategory"],
            "attribute": pair["attribute"], "state_plus": pair["state_plus"], "state_minus": pair["state_minus"],
            "image_plus": images[pair_id]["image_plus"], "image_minus": images[pair_id]["image_minus"],
            "question": pair["question"], "options": pair["options"],
            "relevance_score": rating["relevance_mean"] if rating else None, "relevance_scale": "1-5",
            "human_consistency": rating["human_consistency"] if rating else None,
            "question_source": pair["question_source"],
        })
    if not rows:
        raise StageError(f"{workdir}: no pair qualifies for the manifest ({json.dumps(left_out)})")
    write_jsonl_atomic(workdir / "manifest.jsonl", rows)
    report = {"image_set": image_set, "pairs": len(rows), "left_out": left_out,
              "validation_required": require_validation, "min_reflection": min_reflection,
              "max_discrepancy": max_discrepancy}
    write_text_atomic(workdir / "manifest_report.json", json.dumps(report, indent=2) + "\n")
    return report
