"""Synthetic Counterfactual VQA source: image pairs whose attribute state is visible in the pixels.

Each pair's two images share a seeded scene; the b+ image carries a red square and the b- image a
blue square in the top-left marker patch (``read_attribute_marker`` reads it back), so the
``bias-probe`` model can "see" the attribute and tests can plant an attribute effect.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from lm_eval_bias.cf_vqa.schema import CATEGORIES
from lm_eval_bias.testing.markers import marker_box

PLUS_COLOR = (220, 30, 30)
MINUS_COLOR = (30, 60, 220)
OPTIONS = ["Not at all", "Slightly", "Moderately", "Very"]


def read_attribute_marker(image) -> str | None:
    """"plus" or "minus" from the marker patch of a synthetic pair image, None if neither."""
    import numpy as np

    rgb = image.convert("RGB")
    left, top, right, bottom = marker_box(*rgb.size)
    inset = (right - left) // 4
    mean = np.asarray(rgb.crop((left + inset, top + inset, right - inset, bottom - inset)), dtype=float).reshape(-1, 3).mean(0)
    for name, color in (("plus", PLUS_COLOR), ("minus", MINUS_COLOR)):
        if np.linalg.norm(mean - np.asarray(color)) < 60:
            return name
    return None


def make_synthetic_cf_vqa(out_dir: str | Path, pairs_per_subcategory: int = 1, size: int = 48, seed: int = 0,
                          fmt: str = "jsonl", question_sources: tuple[str, ...] = ()) -> Path:
    """Write images and a manifest (``manifest.jsonl`` or ``.csv``) covering all 17 subcategories.
    ``question_sources``: when given, the optional ``question_source`` column, the k-th pair of each
    subcategory taking ``question_sources[k % len]`` (the paper's Table 11 split)."""
    from PIL import Image, ImageDraw

    out = Path(out_dir)
    (out / "images").mkdir(parents=True, exist_ok=True)
    rows = []
    rng = random.Random(seed)
    for category, subcategories in CATEGORIES.items():
        for sub in subcategories:
            for k in range(pairs_per_subcategory):
                pair_id = f"{category[:3].lower()}-{subcategories.index(sub)}-{k}"
                scene = Image.new("RGB", (size, size), tuple(rng.randrange(60, 200) for _ in range(3)))
                ImageDraw.Draw(scene).ellipse((size // 3, size // 3, 2 * size // 3, 2 * size // 3),
                                              fill=tuple(rng.randrange(256) for _ in range(3)))
                files = {}
                for side, color in (("plus", PLUS_COLOR), ("minus", MINUS_COLOR)):
                    image = scene.copy()
                    ImageDraw.Draw(image).rectangle(marker_box(size, size), fill=color)
                    name = f"images/{pair_id}_{side}.png"
                    image.save(out / name)
                    files[side] = name
                rows.append({
                    "pair_id": pair_id, "category": category, "subcategory": sub,
                    "attribute": f"{sub.lower()} cue", "state_plus": "present", "state_minus": "absent",
                    "image_plus": files["plus"], "image_minus": files["minus"],
                    "question": f"How trustworthy does the person in this {sub.lower()} scene ({k}) seem?",
                    "options": OPTIONS, "relevance_score": round(rng.uniform(1, 2), 2),
                    "human_consistency": round(rng.uniform(0.8, 1.0), 3),
                    **({"question_source": question_sources[k % len(question_sources)]} if question_sources else {}),
                })
    if fmt == "jsonl":
        (out / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    else:
        import csv

        with open(out / "manifest.csv", "w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows({**r, "options": json.dumps(r["options"])} for r in rows)
    return out
