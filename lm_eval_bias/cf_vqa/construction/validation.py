"""Stage 3: the human-validation round trip (Sec. 3.3 Step 2, App. D): the Likert relevance sheet and the
answer sheet out, completed sheets in, the paper's filter (mean rating < 3 kept), the share dropped, the
agreement with the majority label, and each pair's human consistency (App. D.2)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lm_eval_bias.cf_vqa.construction.paper import LIKERT_KEEP_BELOW, N_ANNOTATORS
from lm_eval_bias.cf_vqa.construction.store import (
    StageError,
    csv_text,
    described_pairs,
    generated_pairs,
    write_jsonl_atomic,
    write_text_atomic,
)
from lm_eval_bias.cf_vqa.schema import OPTION_LETTERS


RELEVANCE_COLUMNS = ("pair_id", "annotator_slot", "category", "subcategory", "attribute", "description_plus",
                     "description_minus", "question", "option_a", "option_b", "option_c", "option_d", "relevance")


ANSWER_COLUMNS = ("pair_id", "annotator_slot", "image_plus", "image_minus", "question", "option_a", "option_b",
                  "option_c", "option_d", "answer_plus", "answer_minus")


SHEET_INSTRUCTIONS = """# Validation sheets (lm-eval-bias generate cf-vqa)

relevance_sheet.csv (paper Sec. 3.3 Step 2, App. D.1): one row per pair and annotator slot. Give each
row to a different annotator (a slot is one of the N annotators of that pair). Read the attribute, the
two image descriptions, the question and its four options, and write in `relevance` how relevant the
attribute is to answering the question, an integer on the five-point Likert scale:
1 very irrelevant, 2 irrelevant, 3 neutral, 4 relevant, 5 very relevant.
Pairs whose mean rating is 3 or more are dropped.

answer_sheet.csv (App. D.2, optional): one row per pair and annotator slot; the same annotator sees
both images (`image_plus`, `image_minus`, paths relative to the work folder) and answers the question
for each in `answer_plus` / `answer_minus` with a letter A-D (option_a ... option_d) or N/A. In the
paper each worker answered 50 items in random order, the two images of a pair among them: present
the images one at a time, shuffled, in your survey tool, and write the answers back into this sheet.

Import completed sheets with `lm-eval-bias generate cf-vqa import-ratings --workdir DIR FILE...`
(every completed sheet at once: the import replaces earlier imports).
"""


def _write_sheet(path: Path, text: str, overwrite: bool) -> bool:
    """Write a sheet unless an identical one exists; refuse to replace a different one (it may be in
    annotators' hands) without ``overwrite``. True if written."""
    if path.is_file():
        if path.read_text(encoding="utf-8") == text:
            return False
        if not overwrite:
            raise StageError(f"{path}: exists with other content (annotators may be filling it); "
                             "pass --overwrite to replace it")
    write_text_atomic(path, text)
    return True


def write_relevance_sheet(workdir: Path, annotators: int = N_ANNOTATORS, overwrite: bool = False) -> tuple[Path, int]:
    pairs = described_pairs(workdir)
    if not pairs:
        raise StageError(f"{workdir}: no described pairs yet; run the describe stage first")
    rows = [{"pair_id": p["pair_id"], "annotator_slot": slot, "category": p["category"],
             "subcategory": p["subcategory"], "attribute": p["attribute"], "description_plus": p["description_plus"],
             "description_minus": p["description_minus"], "question": p["question"],
             **{f"option_{c}": o for c, o in zip("abcd", p["options"])}, "relevance": ""}
            for p in (pairs[k] for k in sorted(pairs)) for slot in range(1, annotators + 1)]
    path = workdir / "validation" / "relevance_sheet.csv"
    _write_sheet(path, csv_text(RELEVANCE_COLUMNS, rows), overwrite)
    write_text_atomic(workdir / "validation" / "INSTRUCTIONS.md", SHEET_INSTRUCTIONS)
    return path, len(rows)


def write_answer_sheet(workdir: Path, image_set: str, annotators: int = N_ANNOTATORS,
                       overwrite: bool = False) -> tuple[Path, int]:
    pairs = described_pairs(workdir)
    images = generated_pairs(workdir, image_set)
    if not images:
        raise StageError(f"{workdir}: no generated images in set {image_set!r}; run the images stage first")
    rows = [{"pair_id": k, "annotator_slot": slot, "image_plus": images[k]["image_plus"],
             "image_minus": images[k]["image_minus"], "question": pairs[k]["question"],
             **{f"option_{c}": o for c, o in zip("abcd", pairs[k]["options"])}, "answer_plus": "", "answer_minus": ""}
            for k in sorted(images) if k in pairs for slot in range(1, annotators + 1)]
    path = workdir / "validation" / "answer_sheet.csv"
    _write_sheet(path, csv_text(ANSWER_COLUMNS, rows), overwrite)
    write_text_atomic(workdir / "validation" / "INSTRUCTIONS.md", SHEET_INSTRUCTIONS)
    return path, len(rows)


def relevance_label(rating: int) -> str:
    """A rating's label for the majority-agreement statistic: ``relevant`` when it is at or above the
    filter's threshold (>= 3), else ``irrelevant`` (our binarisation; the paper does not define it)."""
    return "relevant" if rating >= LIKERT_KEEP_BELOW else "irrelevant"


def majority_agreement(ratings: list[int]) -> float:
    """Share of a pair's ratings whose label equals the most frequent label (ties: that share is 1/2)."""
    labels = [relevance_label(r) for r in ratings]
    return max(labels.count("relevant"), labels.count("irrelevant")) / len(labels)


def human_consistency(answers: list[tuple[int | None, int | None]]) -> float:
    """App. D.2: the share of annotators whose answers on the two images agree (two N/A agree)."""
    return sum(a == b for a, b in answers) / len(answers)


@dataclass
class ValidationSummary:
    pairs_rated: int
    pairs_kept: int
    pairs_dropped: int
    share_dropped: float
    majority_agreement_kept: float
    majority_agreement_all: float
    pairs_with_fewer_ratings: int
    ratings: int
    pairs_with_answers: int
    mean_human_consistency: float
    files: list[str] = field(default_factory=list)


def _parse_answer(value: str, options: list[str], where: str, column: str) -> int | None:
    text = value.strip()
    if text.upper() in ("N/A", "NA"):
        return None
    if len(text) == 1 and text.upper() in OPTION_LETTERS:
        return OPTION_LETTERS.index(text.upper())
    lowered = [o.lower() for o in options]
    if text.lower() in lowered:
        return lowered.index(text.lower())
    raise StageError(f"{where}: {column} must be a letter A-D, an option's text or N/A, got {value!r}")


def import_sheets(workdir: Path, files: list[Path], annotators: int = N_ANNOTATORS) -> ValidationSummary:
    """Read completed sheets (relevance and/or answer columns), validate every row, apply the paper's
    filter (mean < 3 kept) and write ``ratings.jsonl`` and ``validation/summary.json`` atomically.
    Errors name the file and row: unknown pair, slot outside 1..N, a rating that is not an integer
    1-5, a slot rated twice, an answer that is not A-D / option text / N/A, an answer missing its other side."""
    from lm_eval_bias.datasets_builder.readers import SourceError, read_csv

    pairs = described_pairs(workdir)
    ratings: dict[str, dict[int, tuple[int, str]]] = {}
    answers: dict[str, dict[int, tuple[tuple[int | None, int | None], str]]] = {}
    if not files:
        raise StageError("import-ratings needs at least one completed sheet")
    for path in files:
        try:
            columns, rows = read_csv(path, ("pair_id", "annotator_slot"))
        except SourceError as exc:
            raise StageError(str(exc)) from None
        if "relevance" not in columns and not {"answer_plus", "answer_minus"} <= set(columns):
            raise StageError(f"{path}: neither a relevance column nor answer_plus/answer_minus columns")
        for where, row in rows:
            where = str(where)
            pair_id = row["pair_id"].strip()
            if pair_id not in pairs:
                raise StageError(f"{where}: unknown pair_id {pair_id!r} (not in descriptions.jsonl)")
            try:
                slot = int(row["annotator_slot"])
            except ValueError:
                slot = 0
            if not 1 <= slot <= annotators:
                raise StageError(f"{where}: annotator_slot must be an integer 1-{annotators}, got {row['annotator_slot']!r}")
            rating = (row.get("relevance") or "").strip()
            if rating:
                if not re.fullmatch(r"[1-5]", rating):
                    raise StageError(f"{where}: relevance must be an integer 1-5, got {rating!r}")
                seen = ratings.setdefault(pair_id, {})
                if slot in seen:
                    raise StageError(f"{where}: slot {slot} of pair {pair_id!r} is already rated at {seen[slot][1]}")
                seen[slot] = (int(rating), where)
            plus, minus = (row.get("answer_plus") or "").strip(), (row.get("answer_minus") or "").strip()
            if plus or minus:
                if not (plus and minus):
                    raise StageError(f"{where}: answer_plus and answer_minus must both be filled (or both empty)")
                options = pairs[pair_id]["options"]
                answer = (_parse_answer(plus, options, where, "answer_plus"),
                          _parse_answer(minus, options, where, "answer_minus"))
                seen_answers = answers.setdefault(pair_id, {})
                if slot in seen_answers:
                    raise StageError(f"{where}: slot {slot} of pair {pair_id!r} is already answered at "
                                     f"{seen_answers[slot][1]}")
                seen_answers[slot] = (answer, where)
    records = []
    for pair_id in sorted(set(ratings) | set(answers)):
        values = [v for _, (v, _w) in sorted(ratings.get(pair_id, {}).items())]
        pair_answers = [a for _, (a, _w) in sorted(answers.get(pair_id, {}).items())]
        mean = sum(values) / len(values) if values else None
        records.append({
            "pair_id": pair_id, "ratings": values, "n_ratings": len(values), "relevance_mean": mean,
            "kept": None if mean is None else mean < LIKERT_KEEP_BELOW,
            "majority_agreement": majority_agreement(values) if values else None,
            "answers": [list(a) for a in pair_answers],
            "human_consistency": human_consistency(pair_answers) if pair_answers else None,
        })
    rated = [r for r in records if r["n_ratings"]]
    kept = [r for r in rated if r["kept"]]
    nan = float("nan")
    with_answers = [r for r in records if r["human_consistency"] is not None]
    summary = ValidationSummary(
        pairs_rated=len(rated), pairs_kept=len(kept), pairs_dropped=len(rated) - len(kept),
        share_dropped=(len(rated) - len(kept)) / len(rated) if rated else nan,
        majority_agreement_kept=_pooled_agreement(kept), majority_agreement_all=_pooled_agreement(rated),
        pairs_with_fewer_ratings=sum(r["n_ratings"] < annotators for r in rated), ratings=sum(r["n_ratings"] for r in rated),
        pairs_with_answers=len(with_answers),
        mean_human_consistency=(sum(r["human_consistency"] for r in with_answers) / len(with_answers)
                                if with_answers else nan),
        files=[str(p) for p in files])
    write_jsonl_atomic(workdir / "ratings.jsonl", records)
    write_text_atomic(workdir / "validation" / "summary.json",
                      json.dumps({**summary.__dict__, "annotators": annotators,
                                  "keep_rule": f"mean rating < {LIKERT_KEEP_BELOW:g} on 1-5"}, indent=2,
                                 allow_nan=True) + "\n")
    return summary


def _pooled_agreement(records: list[dict[str, Any]]) -> float:
    """Ratings agreeing with their pair's majority label / all ratings, over ``records``."""
    total = sum(r["n_ratings"] for r in records)
    if not total:
        return float("nan")
    return sum(r["majority_agreement"] * r["n_ratings"] for r in records) / total
