"""``lm-eval-bias build cf-vqa``: Counterfactual VQA pairs (paper: counterfactual_vqa_decision_boundaries.txt).

The authors released no data; this is our format. ``DIR`` holds the images and one manifest,
``manifest.jsonl`` or ``manifest.csv``, one row per counterfactual pair:

| column | meaning |
|---|---|
| ``pair_id`` | unique id |
| ``category`` | Demography, Culture, Environment, Behavior or Aesthetic |
| ``subcategory`` | one of the paper's 17 (``lm_eval_bias.cf_vqa_schema.CATEGORIES``) |
| ``attribute`` | the question-irrelevant attribute that differs (e.g. "laboratory equipment modernity") |
| ``state_plus`` / ``state_minus`` | the attribute's two states (b+ and b-) |
| ``image_plus`` / ``image_minus`` | image files, relative to ``DIR`` |
| ``question`` | the question asked on both images |
| ``options`` | exactly four options (JSON list; in CSV either a JSON list or ``option_a`` ... ``option_d``) |
| ``relevance_score`` | optional: human rating of how relevant the attribute is to the question |
| ``human_consistency`` | optional: share of humans answering both images the same, in [0, 1] |

Everything is validated (missing or corrupt images, option count, duplicate ids, unknown category or
subcategory, values out of range) with the file, row and reason before anything is written; the
output is written atomically. The manifest must be UTF-8; each JSONL line must be a JSON object whose
text columns are strings (a number or null where a string belongs is an error, not converted) and
whose scores are numbers; CSV rows must have as many fields as the header. A ``pair_id`` given twice
is an error naming both lines, whether the rows conflict or are identical.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from datasets_builder.hub import DatasetCard, check_image, write_hub_dataset
from datasets_builder.readers import KeyedRows, Loc, SourceError, describe, expect_str, read_bytes, read_csv, read_jsonl
from lm_eval_bias.cf_vqa_schema import CATEGORIES, SUBCATEGORY_TO_CATEGORY

REQUIRED = ("pair_id", "category", "subcategory", "attribute", "state_plus", "state_minus", "image_plus",
            "image_minus", "question")
COLUMNS = {
    "pair_id": "unique id", "category": "one of 5 categories", "subcategory": "one of 17 subcategories",
    "attribute": "question-irrelevant attribute that differs", "state_plus": "attribute state in image_plus (b+)",
    "state_minus": "attribute state in image_minus (b-)", "image_plus": "image with state_plus",
    "image_minus": "image with state_minus", "question": "asked on both images", "options": "exactly four options",
    "relevance_score": "human relevance rating (optional, null if absent)",
    "human_consistency": "share of humans answering both images alike (optional, null if absent)",
}


def _manifest(source: Path) -> tuple[Path, list[tuple[Loc, dict[str, Any]]]]:
    candidates = [source / "manifest.jsonl", source / "manifest.csv"]
    found = [p for p in candidates if p.is_file()]
    if len(found) != 1:
        raise SourceError(source, "expected exactly one manifest.jsonl or manifest.csv")
    path = found[0]
    return path, read_jsonl(path) if path.suffix == ".jsonl" else read_csv(path)[1]


def _options(row: dict[str, Any], where: str) -> list[str]:
    options = row.get("options")
    if isinstance(options, str) and options.strip():
        try:
            options = json.loads(options)
        except json.JSONDecodeError:
            raise SourceError(where, "options must be a JSON list of four strings") from None
    if options is None:
        options = [row.get(f"option_{c}") for c in "abcd"]
    if not isinstance(options, list) or len(options) != 4 or not all(isinstance(o, str) and o.strip() for o in options):
        raise SourceError(where, f"needs exactly four non-empty options, got {options!r}")
    if len({o.strip().lower() for o in options}) != 4:
        raise SourceError(where, "options must be distinct")
    return [o.strip() for o in options]


def _optional_float(row: dict[str, Any], key: str, where: str, low: float, high: float) -> float | None:
    value = row.get(key)
    if value in (None, ""):
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise SourceError(where, f"{key} must be a number, got {describe(value)}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise SourceError(where, f"{key} must be a number, got {value!r}") from None
    if not low <= number <= high:
        raise SourceError(where, f"{key} {number} outside [{low}, {high}]")
    return number


@dataclass(frozen=True)
class CfVqaBuildSummary:
    output: Path
    n_pairs: int
    per_category: dict[str, int]


def collect_pairs(source: str | os.PathLike, *, max_image_pixels: int = 40_000_000, min_side: int = 16,
                  max_side: int = 8192) -> list[dict[str, Any]]:
    """Validate the manifest and images; rows ready to write (raises :class:`SourceError`)."""
    root = Path(source).absolute()
    if not root.is_dir():
        raise SourceError(root, "source folder does not exist")
    manifest, rows = _manifest(root)
    if not rows:
        raise SourceError(manifest, "manifest has no rows")
    ids = KeyedRows("pair_id")
    out = []
    for where, row in rows:
        for key in REQUIRED:
            expect_str(row.get(key), where, key, optional=True)
        missing = [k for k in REQUIRED if not (row.get(k) or "").strip()]
        if missing:
            raise SourceError(where, f"missing {', '.join(missing)}")
        pair_id = row["pair_id"].strip()
        ids.add(pair_id, where, {k: v for k, v in row.items() if k != "pair_id"})
        if row["category"] not in CATEGORIES:
            raise SourceError(where, f"unknown category {row['category']!r}; expected one of {list(CATEGORIES)}")
        if SUBCATEGORY_TO_CATEGORY.get(row["subcategory"]) != row["category"]:
            raise SourceError(where, f"subcategory {row['subcategory']!r} is not one of {list(CATEGORIES[row['category']])}")
        if row["state_plus"] == row["state_minus"]:
            raise SourceError(where, "state_plus and state_minus must differ")
        images = {}
        for side in ("image_plus", "image_minus"):
            path = (root / str(row[side])).resolve()
            if root.resolve() not in path.parents:
                raise SourceError(where, f"{side} {row[side]!r} points outside the source folder")
            if not path.is_file():
                raise SourceError(where, f"{side} file {row[side]!r} does not exist")
            data = read_bytes(path)
            check_image(path, data, max_image_pixels, min_side, max_side)
            images[side] = {"bytes": data, "path": str(row[side])}
        if images["image_plus"]["bytes"] == images["image_minus"]["bytes"]:
            raise SourceError(where, "image_plus and image_minus are the same file content")
        out.append({
            "pair_id": pair_id, "category": row["category"], "subcategory": row["subcategory"],
            "attribute": str(row["attribute"]).strip(), "state_plus": str(row["state_plus"]).strip(),
            "state_minus": str(row["state_minus"]).strip(), **images, "question": str(row["question"]).strip(),
            "options": _options(row, where),
            "relevance_score": _optional_float(row, "relevance_score", where, 0.0, 10.0),
            "human_consistency": _optional_float(row, "human_consistency", where, 0.0, 1.0),
        })
    return out


def _features():
    import datasets

    v = datasets.Value
    return datasets.Features({
        "pair_id": v("string"), "category": v("string"), "subcategory": v("string"), "attribute": v("string"),
        "state_plus": v("string"), "state_minus": v("string"), "image_plus": datasets.Image(),
        "image_minus": datasets.Image(), "question": v("string"), "options": datasets.Sequence(v("string")),
        "relevance_score": v("float64"), "human_consistency": v("float64"),
    })


def build_cf_vqa(source: str | os.PathLike, output: str | os.PathLike, *, overwrite: bool = False,
                 license: str = "other") -> CfVqaBuildSummary:
    """Validate ``source`` and write the ``cf_vqa`` dataset (one row per pair, both images)."""
    rows = collect_pairs(source)
    per_category: dict[str, int] = {}
    for r in rows:
        per_category[r["category"]] = per_category.get(r["category"], 0) + 1
    digest = hashlib.sha256("\n".join(sorted(r["pair_id"] for r in rows)).encode()).hexdigest()
    card = DatasetCard(
        name="cf_vqa",
        pretty_name="Counterfactual VQA pairs",
        description=("Image pairs that differ in one question-irrelevant attribute (b+ / b-), each with one question and "
                     "four options, for the Counterfactual VQA consistency audit. Schema defined by lm-eval-bias."),
        license=license, columns=COLUMNS,
        provenance={"source folder": Path(source).name, "pairs": len(rows), "pairs per category": json.dumps(per_category),
                    "pair id digest": digest},
        build_command=f"lm-eval-bias build cf-vqa --source {Path(source).name} --output {Path(output).name}",
    )
    out = write_hub_dataset(output, rows, _features(), card, overwrite=overwrite)
    return CfVqaBuildSummary(out, len(rows), per_category)
