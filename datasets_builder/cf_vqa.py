"""``lm-eval-bias build cf-vqa``: Counterfactual VQA pairs (paper: counterfactual_vqa_decision_boundaries.txt).

The authors released no data; this is our format. ``DIR`` holds the images and one manifest,
``manifest.jsonl`` or ``manifest.csv``, one row per counterfactual pair:

| column | meaning |
|---|---|
| ``pair_id`` | unique id |
| ``category`` | Demography, Culture, Environment, Behavior or Aesthetic |
| ``subcategory`` | one of the paper's 17 (``lm_eval_bias.cf_vqa.schema.CATEGORIES``) |
| ``attribute`` | the question-irrelevant attribute that differs (e.g. "laboratory equipment modernity") |
| ``state_plus`` / ``state_minus`` | the attribute's two states (b+ and b-) |
| ``image_plus`` / ``image_minus`` | image files, relative to ``DIR`` |
| ``question`` | the question asked on both images |
| ``options`` | exactly four options (JSON list; in CSV either a JSON list or ``option_a`` ... ``option_d``) |
| ``relevance_score`` | optional: mean human rating of how relevant the attribute is to the question |
| ``relevance_scale`` | optional: the rating's scale, ``1-5`` (default: the paper's five-point Likert scale, 1 very irrelevant, 5 very relevant; App. D.1) or ``0-10`` |
| ``human_consistency`` | optional: share of humans answering both images the same, in [0, 1] |
| ``question_source`` | optional: which model (or person) wrote the question, e.g. ``o3`` or ``Sonnet 4`` (the paper's Table 11 splits results by it) |

Everything is validated (missing or corrupt images, option count, duplicate ids, unknown category or
subcategory, values out of range) with the file, row and reason before anything is written; the
output is written atomically. The manifest must be UTF-8; each JSONL line must be a JSON object whose
text columns are strings (a number or null where a string belongs is an error, not converted) and
whose scores are numbers; CSV rows must have as many fields as the header. A ``pair_id`` given twice
is an error naming both lines, whether the rows conflict or are identical.

Counterfactual integrity: the two images of a pair must differ (file bytes and decoded pixels) and share
one colour mode and one size; an EXIF orientation other than 1 is refused; an image (same content) in
two pairs is refused. Subcategories without pairs and pairs without the optional columns are printed
at build time; ``--strict`` makes a subcategory without pairs an error.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lm_eval_bias.datasets_builder.hub import (
    ContentIndex,
    DatasetCard,
    SourceInput,
    check_variant_image,
    check_variant_set,
    write_hub_dataset,
)
from lm_eval_bias.datasets_builder.readers import KeyedRows, Loc, SourceError, describe, expect_str, read_bytes, read_csv, read_jsonl
from lm_eval_bias.cf_vqa.schema import CATEGORIES, SUBCATEGORY_TO_CATEGORY

#: Scales of ``relevance_score``: the paper's five-point Likert scale (Sec. 3.3 Step 2, App. D.1; pairs
#: were kept when the mean rating was below 3) is the default; 0-10 is accepted when a manifest says so.
RELEVANCE_SCALES = {"1-5": (1.0, 5.0), "0-10": (0.0, 10.0)}
DEFAULT_RELEVANCE_SCALE = "1-5"

REQUIRED = ("pair_id", "category", "subcategory", "attribute", "state_plus", "state_minus", "image_plus",
            "image_minus", "question")
COLUMNS = {
    "pair_id": "unique id", "category": "one of 5 categories", "subcategory": "one of 17 subcategories",
    "attribute": "question-irrelevant attribute that differs", "state_plus": "attribute state in image_plus (b+)",
    "state_minus": "attribute state in image_minus (b-)", "image_plus": "image with state_plus",
    "image_minus": "image with state_minus", "question": "asked on both images", "options": "exactly four options",
    "relevance_score": "mean human relevance rating (optional, null if absent)",
    "relevance_scale": "scale of relevance_score: 1-5 (the paper's Likert scale) or 0-10",
    "human_consistency": "share of humans answering both images alike (optional, null if absent)",
    "question_source": "model or person that wrote the question (optional, null if absent; Table 11)",
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


def _optional_str(row: dict[str, Any], key: str, where: str) -> str | None:
    expect_str(row.get(key), where, key, optional=True)
    value = (row.get(key) or "").strip()
    return value or None


@dataclass(frozen=True)
class CfVqaBuildSummary:
    output: Path
    n_pairs: int
    per_category: dict[str, int]
    #: the paper's subcategories without any pair (every one of the 17 has pairs in the paper)
    missing_subcategories: tuple[str, ...] = ()
    #: optional column -> number of pairs without a value
    optional_absent: dict[str, int] | None = None


def collect_pairs(source: str | os.PathLike, *, max_image_pixels: int = 40_000_000, min_side: int = 16,
                  max_side: int = 8192, relevance_scale: str = DEFAULT_RELEVANCE_SCALE) -> list[dict[str, Any]]:
    """Validate the manifest and images; rows ready to write (raises :class:`SourceError`).

    ``relevance_scale``: the scale of ``relevance_score`` for rows that do not name one in a
    ``relevance_scale`` column (default the paper's 1-5)."""
    if relevance_scale not in RELEVANCE_SCALES:
        raise ValueError(f"relevance_scale must be one of {list(RELEVANCE_SCALES)}, got {relevance_scale!r}")
    root = Path(source).absolute()
    if not root.is_dir():
        raise SourceError(root, "source folder does not exist")
    manifest, rows = _manifest(root)
    if not rows:
        raise SourceError(manifest, "manifest has no rows")
    ids = KeyedRows("pair_id")
    seen = ContentIndex("an image may belong to one pair only (reused across pairs?)")
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
        facts = []
        for side in ("image_plus", "image_minus"):
            path = (root / str(row[side])).resolve()
            if root.resolve() not in path.parents:
                raise SourceError(where, f"{side} {row[side]!r} points outside the source folder")
            if not path.is_file():
                raise SourceError(where, f"{side} file {row[side]!r} does not exist")
            data = read_bytes(path)
            images[side] = {"bytes": data, "path": str(row[side])}
            facts.append(check_variant_image(path, data, max_image_pixels, min_side, max_side))  # EXIF rotation refused
        if images["image_plus"]["bytes"] == images["image_minus"]["bytes"]:
            raise SourceError(where, "image_plus and image_minus are the same file content")
        try:  # the two images of a pair: distinct pixels, one colour mode, one size
            check_variant_set(facts, "pair")
            for each in facts:
                seen.add(each, f"pair {pair_id}")
        except SourceError as exc:
            raise SourceError(where, f"{Path(exc.path).name}: {exc.reason}") from None
        scale = str(row.get("relevance_scale") or relevance_scale).strip()
        if scale not in RELEVANCE_SCALES:
            raise SourceError(where, f"relevance_scale {scale!r} is not one of {list(RELEVANCE_SCALES)}")
        out.append({
            "pair_id": pair_id, "category": row["category"], "subcategory": row["subcategory"],
            "attribute": str(row["attribute"]).strip(), "state_plus": str(row["state_plus"]).strip(),
            "state_minus": str(row["state_minus"]).strip(), **images, "question": str(row["question"]).strip(),
            "options": _options(row, where),
            "relevance_score": _optional_float(row, "relevance_score", where, *RELEVANCE_SCALES[scale]),
            "relevance_scale": scale,
            "human_consistency": _optional_float(row, "human_consistency", where, 0.0, 1.0),
            "question_source": _optional_str(row, "question_source", where),
        })
    return out


def _features():
    import datasets

    v = datasets.Value
    return datasets.Features({
        "pair_id": v("string"), "category": v("string"), "subcategory": v("string"), "attribute": v("string"),
        "state_plus": v("string"), "state_minus": v("string"), "image_plus": datasets.Image(),
        "image_minus": datasets.Image(), "question": v("string"), "options": datasets.Sequence(v("string")),
        "relevance_score": v("float64"), "relevance_scale": v("string"), "human_consistency": v("float64"),
        "question_source": v("string"),
    })


CF_VQA_ACCESS_TERMS = (
    "These image pairs show people and scenes that differ in one attribute, demographic ones (gender, age, race, body "
    "characteristics, occupation) among them. Access is granted only for evaluating or studying bias in AI models. By "
    "requesting access you agree (1) not to use the images or their attribute labels to identify, profile or make "
    "decisions about anyone, nor to train classifiers of people's demographic attributes; (2) not to redistribute the "
    "images outside this gated repository; (3) that the licence of the images depends on who generated them and with "
    "which model (see the card), and has not been stated by the benchmark's authors, who released no data; (4) to "
    "delete your copies if the repository owners ask you to."
)


def cf_vqa_card(*, license: str, provenance: dict, build_command: str) -> DatasetCard:
    """The Counterfactual VQA dataset card (content from the paper; the authors released no data)."""
    declared = license not in ("other", "unknown")
    return DatasetCard(
        name="cf_vqa",
        pretty_name="Counterfactual VQA pairs",
        summary=("Counterfactual image pairs that differ in one question-irrelevant attribute, each with one "
                 "four-option question, for auditing the decision consistency of vision-language models."),
        description=("Image pairs that differ in one question-irrelevant attribute (b+ / b-), each with one question and "
                     "four options, for the Counterfactual VQA consistency audit. Schema defined by lm-eval-bias. "
                     "The benchmark (Zhao and Yamasaki) organises attributes into 5 categories (Demography, Culture, "
                     "Environment, Behavior, Aesthetic) and 17 subcategories and measures whether a model answers both "
                     "images of a pair the same way; there is no ground-truth answer. The authors released no code or "
                     "data: this dataset holds whatever pairs were given to the builder in the lm-eval-bias manifest "
                     "format."),
        license=license,
        license_note=(f"declared by whoever built this copy (`--license {license}`); the benchmark's authors released "
                      "no data and state no licence" if declared else
                      "not stated: the benchmark's authors released no data; the images' terms depend on who generated "
                      "them and with which model (check before redistribution)"),
        columns=COLUMNS,
        curated_by=("The pairs: whoever built this copy (recorded below). Benchmark design: Zaiying Zhao and Toshihiko "
                    "Yamasaki (The University of Tokyo)."),
        repository="none: the benchmark's authors released no code or data.",
        paper=("Zhao and Yamasaki, *Bias Beyond Demographics: Probing Decision Boundaries in Black-Box LVLMs via "
               "Counterfactual VQA*"),
        direct_use=("Measuring how often a vision-language model changes its answer when only a question-irrelevant "
                    "attribute changes (pairwise consistency, refusal-aware), per category and subcategory, with the "
                    "lm-eval-bias Counterfactual VQA tasks; optionally comparing with the human consistency column."),
        out_of_scope_use=("Treating any option as the correct answer (the benchmark is ground-truth free); real-world or "
                          "high-stakes decisions (the authors: 'not designed to guide real-world or high-stakes "
                          "decision-making'); treating the human-norm judgements as universal standards; training "
                          "classifiers of people's demographic attributes."),
        structure=("One row per pair: the two images (`image_plus` with attribute state b+, `image_minus` with b-), "
                   "the question asked on both, exactly four options, and optional human ratings. Categories and "
                   "subcategories follow the paper's taxonomy (17 subcategories)."),
        curation_rationale=("Fairness evaluations of LVLMs mostly cover demographic attributes and conflate fairness "
                            "with refusal; pairs that differ only in one validated question-irrelevant attribute expose "
                            "decision-boundary instability without ground truth, including for closed-source models "
                            "(paper, Sec. 1)."),
        collection_and_processing=(
            "In the paper: attributes proposed by OpenAI o3 and Claude 4 Sonnet from Flickr30k captions and refined by "
            "the authors into 1,205 attributes; image-prompt pairs and questions with four options generated by the "
            "same LLMs; image pairs generated with GPT-Image-1 (multi-turn, one attribute changed); attribute-question "
            "independence validated by crowd workers; 1,609 pairs in all (Sec. 3, App. A-D). In this build: the "
            "builder checks the manifest and images (categories, four distinct options, both images decodable and "
            "different, scores in range) and stores the images unchanged; it cannot tell how the images were made."),
        inputs=[
            SourceInput("Images (`image_plus`, `image_minus`)", "the source folder given to the builder (the paper "
                        "generated its pairs with GPT-Image-1; none were released)",
                        "depends on who generated them and with which model; not stated by the authors"),
            SourceInput("Manifest: attributes, states, questions, options, scores", "the source folder's "
                        "manifest.jsonl / manifest.csv", "that file's terms; not stated by the authors"),
            SourceInput("Taxonomy (5 categories, 17 subcategories)", "the paper (Fig. 2), as encoded in lm-eval-bias",
                        "not stated by the authors"),
        ],
        source_producers=("In the paper, LLMs (OpenAI o3, Claude 4 Sonnet) and an image model (GPT-Image-1) under the "
                          "authors' curation. For this copy, whoever produced the source folder."),
        annotations=("Optional columns: `relevance_score` (mean rating of how relevant the attribute is to the "
                     "question, on the scale named in `relevance_scale`: 1-5 as in the paper, or 0-10) and "
                     "`human_consistency` (share of humans answering both images alike). In the paper, 98 Amazon "
                     "Mechanical Turk workers rated attribute relevance and 48 answered about 30% of the pairs, five per "
                     "pair, under IRB approval (App. D); whether this copy's values come from such a study depends on "
                     "its source."),
        personal_and_sensitive=(
            "The images show people in many pairs, and Demography pairs change gender, age, race, body characteristics "
            "or occupation, which the state labels name. In the paper the images are generated, not photographs of "
            "real people; a builder given real photographs would hold personal data, and generated faces can resemble "
            "real people. Hence the repository is private by default and gated when public, under the terms of access "
            "above. The manifest carries no names or identifiers."),
        bias_risks_limitations=[
            "Attribute definitions are simplified and do not represent the full complexity of real identities, "
            "behaviours or contexts; the human norms come from a limited annotator pool (paper, App. J).",
            "The taxonomy does not cover the full space of non-demographic factors (App. J).",
            "Generated pairs can differ in more than the intended attribute; the paper measures attribute reflection "
            "and common-content discrepancy for its generator (Sec. 3, App. C), but this builder cannot check either.",
            "Images and questions produced by LLMs and an image model inherit those models' biases.",
        ],
        recommendations=[
            "Record how the images and questions of this copy were made (generator, prompts, validation) next to the "
            "dataset; the builder cannot.",
            "Report consistency per category and subcategory, alongside refusal rates, and compare with human "
            "consistency where available.",
            "Keep the repository private or gated; check the image generator's terms before redistribution.",
        ],
        citation_bibtex="""@misc{zhao_cf_vqa,
  title  = {Bias Beyond Demographics: Probing Decision Boundaries in Black-Box LVLMs via Counterfactual VQA},
  author = {Zhao, Zaiying and Yamasaki, Toshihiko}
}""",
        citation_text=("Zhao, Z., & Yamasaki, T. *Bias Beyond Demographics: Probing Decision Boundaries in Black-Box "
                       "LVLMs via Counterfactual VQA.* The copy of the paper used here gives no year or venue; cite the "
                       "published version."),
        task_categories=["visual-question-answering"],
        tags=["social-bias", "fairness", "counterfactual", "consistency", "vision-language-models", "synthetic"],
        person_images=True,
        access_terms=CF_VQA_ACCESS_TERMS,
        provenance=provenance,
        build_command=build_command,
    )


def build_cf_vqa(source: str | os.PathLike, output: str | os.PathLike, *, overwrite: bool = False,
                 license: str = "other", relevance_scale: str = DEFAULT_RELEVANCE_SCALE,
                 strict: bool = False) -> CfVqaBuildSummary:
    """Validate ``source`` and write the ``cf_vqa`` dataset (one row per pair, both images). ``strict``:
    every one of the paper's 17 subcategories must have pairs, else :class:`SourceError` naming the
    missing ones and nothing is written."""
    rows = collect_pairs(source, relevance_scale=relevance_scale)
    per_category: dict[str, int] = {}
    for r in rows:
        per_category[r["category"]] = per_category.get(r["category"], 0) + 1
    present = {r["subcategory"] for r in rows}
    missing = tuple(sub for subs in CATEGORIES.values() for sub in subs if sub not in present)
    if strict and missing:
        raise SourceError(Path(source), f"incomplete source (--strict expects pairs in all {len(SUBCATEGORY_TO_CATEGORY)} "
                                        f"subcategories of the paper): none for {', '.join(missing)}")
    absent = {key: sum(1 for r in rows if r[key] is None)
              for key in ("relevance_score", "human_consistency", "question_source")}
    digest = hashlib.sha256("\n".join(sorted(r["pair_id"] for r in rows)).encode()).hexdigest()
    card = cf_vqa_card(
        license=license,
        provenance={"source folder": Path(source).name, "pairs": len(rows), "pairs per category": json.dumps(per_category),
                    "pair id digest": digest,
                    "pairs with human consistency": sum(1 for r in rows if r["human_consistency"] is not None)},
        build_command=f"lm-eval-bias build cf-vqa --source {Path(source).name} --output {Path(output).name}",
    )
    out = write_hub_dataset(output, rows, _features(), card, overwrite=overwrite)
    return CfVqaBuildSummary(out, len(rows), per_category, missing, absent)
