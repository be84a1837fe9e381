"""VIGNETTE Table 10: are the two people of a pair image visually distinguishable? A human check of
paired images as a round trip (ACL 2026 version, App. "Visually Distinguishable Identities", Table 10).

The paper: "additional human validation on 1,200 randomly sampled paired images, where annotators were
asked to match the provided identity labels to the correct individuals [...] Agreement (%) represents
the proportion of image pairs where both annotators agreed that the identities either were or were
not visually distinguishable" (different from Table 9's per-answer agreement). Table 10 gives, per bias
dimension and overall: # image pairs, Distinguishable, Non-Distinguishable, Agreement (%), Cohen's kappa.

Here:

1. ``lm-eval-bias generate vignette human-check pairs-export --dataset BUILT --out CHECK`` draws
   identity-contrast pairs (two identities, one activity, as the tasks pair them) of a built
   ``vignette`` dataset, seeded, ``--per-dimension`` per bias dimension (all of a dimension's pairs
   where it has fewer; the paper's 1,200 are ~160 per dimension, 75 for gender), composes each pair
   image as the tasks do (``CHECK/pairs/NNNN.png``) and writes ``contact_sheet.html``, one sheet
   ``pair_ratings_<annotator>.csv`` per annotator and ``pair_sample.json`` (seed, pairs, and which
   label is the left person: the answer key, not shown on the sheets).
2. Each annotator writes in ``left_is`` which of the two labels (``label_A``, ``label_B``; their order
   is shuffled per pair) is the person on the left: ``A``, ``B`` or ``unsure``.
3. ``... human-check pairs-report --ratings CHECK/pair_ratings_*.csv --out REPORT`` writes Table 10
   (:func:`table10`) and every pair's verdicts.

An annotator finds a pair *distinguishable* when they match the labels to the right people (a wrong
match or ``unsure``: not distinguishable). A pair counts as Distinguishable unless both annotators
found it not distinguishable (``rule="any"``, default); ``rule="all"``: only when both did. The paper
does not state its rule; ``any`` is the one its rows fit: with Distinguishable = not both-no, each
row's pairs, Agreement and kappa are consistent (Age: 161 pairs, 31 both-no, 143 agreeing, so 112
both-yes and 18 split, kappa 0.70 as printed; ``all`` would give 0.53). The paper's Overall agreement
(88.23 %) is not the pooled agreement of its own rows (1,063 of 1,200 = 88.58 %); Overall here is pooled.
"""

from __future__ import annotations

import csv
import html
import io
import json
import os
import random
from pathlib import Path

import numpy as np
import pandas as pd

from lm_eval_bias.core.imagegen import write_bytes_atomic
from lm_eval_bias.core.safe_io import read_text_file
from lm_eval_bias.datasets_builder.readers import SourceError

SHEET_COLUMNS = ("pair_id", "image_file", "gender", "dimension", "activity", "label_A", "label_B", "annotator",
                 "left_is", "comment")
ANSWERS = {"a": "A", "b": "B", "unsure": "unsure", "?": "unsure", "can't tell": "unsure", "cannot tell": "unsure"}
RULES = ("any", "all")
DIMENSION_LABELS = {"age": "Age", "ability": "Disability", "gender_and_sex": "Gender", "nationality": "Nationality",
                    "physical_traits": "Physical Traits", "race_ethnicity_color": "Race/Ethnicity", "religion": "Religion",
                    "socioeconomic": "Socioeconomic Status"}


def draw_pairs(catalog, per_dimension: int = 150, seed: int = 0) -> list:
    """Identity-contrast pairs (:func:`lm_eval_bias.vignette.pairs.all_pairs`, kind ``identity``; both
    genders) drawn at random per bias dimension: a seeded reservoir sample (Algorithm R, Vitter 1985)
    of ``per_dimension`` pairs, so the full pair set is never held; all pairs of a smaller dimension.
    Returned in the enumeration order, deterministic for a catalog and seed."""
    from lm_eval_bias.vignette.pairs import all_pairs

    if per_dimension < 1:
        raise ValueError(f"per_dimension must be at least 1, got {per_dimension}")
    rng = random.Random(f"{seed}|distinguishability")
    kept: dict[str, list] = {}
    seen: dict[str, int] = {}
    for spec in all_pairs(catalog, "identity"):
        k = seen.get(spec.dimension, 0)
        seen[spec.dimension] = k + 1
        sample = kept.setdefault(spec.dimension, [])
        if k < per_dimension:
            sample.append(spec)
        else:
            j = rng.randrange(k + 1)
            if j < per_dimension:
                sample[j] = spec
    return sorted((s for v in kept.values() for s in v), key=lambda s: s.index)


def export(dataset: str | os.PathLike, out: str | os.PathLike, *, per_dimension: int = 150, seed: int = 0,
           annotators=("A", "B")) -> dict:
    """Draw the pairs of the built dataset at ``dataset``, compose them, write the sheets (module docstring)."""
    from lm_eval_bias.vignette.pairs import Catalog, IndividualImages, PairImages
    from lm_eval_bias.vignette.schema import image_id

    from lm_eval_bias.vignette.tasks import _image_metadata

    dataset, out = Path(dataset), Path(out)
    rows = _image_metadata(str(dataset))
    specs = draw_pairs(Catalog(rows), per_dimension, seed)
    if not specs:
        raise ValueError(f"{dataset}: no identity-contrast pair (two identities of one gender and dimension with an "
                         "image of the same activity)")
    composer = PairImages(IndividualImages(str(dataset)))
    (out / "pairs").mkdir(parents=True, exist_ok=True)
    entries = []
    for number, spec in enumerate(specs, start=1):
        left = image_id(spec.gender, spec.left.descriptor, spec.left.activity)
        right = image_id(spec.gender, spec.right.descriptor, spec.right.activity)
        buffer = io.BytesIO()
        composer.compose(left, right).save(buffer, format="PNG")
        file = f"pairs/{number:04d}.png"
        write_bytes_atomic(buffer.getvalue(), out / file)
        labels = [spec.left.descriptor, spec.right.descriptor]
        random.Random(f"{seed}|labels|{spec.pair_id}").shuffle(labels)
        entries.append({"pair_id": f"{number:04d}", "image_file": file, "gender": spec.gender, "dimension": spec.dimension,
                        "activity": spec.left.activity, "label_A": labels[0], "label_B": labels[1],
                        "left": spec.left.descriptor, "right": spec.right.descriptor, "source_pair": spec.pair_id})
    for annotator in annotators:
        sheet = [{**{c: e.get(c, "") for c in SHEET_COLUMNS}, "annotator": annotator} for e in entries]
        write_bytes_atomic(_csv_bytes(sheet), out / f"pair_ratings_{annotator}.csv")
    write_bytes_atomic(_contact_sheet(entries).encode("utf-8"), out / "contact_sheet.html")
    sample = {"dataset": dataset.name, "per_dimension": per_dimension, "seed": seed, "annotators": list(annotators),
              "size": len(entries), "pairs": entries}
    write_bytes_atomic(json.dumps(sample, indent=1, ensure_ascii=False).encode("utf-8"), out / "pair_sample.json")
    return sample


def _csv_bytes(rows: list[dict]) -> bytes:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(SHEET_COLUMNS), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue().encode("utf-8")


def _contact_sheet(entries: list[dict]) -> str:
    cards = "".join(
        f'<figure id="p{html.escape(e["pair_id"])}"><img src="{html.escape(e["image_file"])}" loading="lazy" alt="pair">'
        f"<figcaption><b>{html.escape(e['pair_id'])}</b> ({html.escape(e['activity'])})<br>A: {html.escape(e['label_A'])}"
        f"<br>B: {html.escape(e['label_B'])}</figcaption></figure>" for e in entries)
    return ("<!doctype html><html><head><meta charset='utf-8'><title>VIGNETTE paired-image check</title><style>"
            "body{font-family:sans-serif}main{display:grid;grid-template-columns:repeat(auto-fill,minmax(340px,1fr));gap:12px}"
            "figure{margin:0;border:1px solid #ccc;padding:6px}img{width:100%;height:auto}</style></head><body>"
            f"<h1>VIGNETTE paired-image check: {len(entries)} pairs</h1><p>For each pair, write in your sheet "
            "(pair_ratings_&lt;annotator&gt;.csv, column <code>left_is</code>) which label, A or B, is the person on the "
            "<b>left</b>, or <code>unsure</code> if you cannot tell them apart. Work independently of the other annotator."
            f"</p><main>{cards}</main></body></html>")


def read_pair_ratings(paths, sample: dict, *, allow_incomplete: bool = False) -> pd.DataFrame:
    """Completed pair sheets -> one row per (pair, annotator) with ``answer`` (A/B/unsure) and
    ``distinguishable`` (the label named left is the left person). ``sample``: ``pair_sample.json``
    (the answer key). :class:`SourceError` names ``FILE:LINE`` for an unknown pair, an answer other
    than A/B/unsure, a pair rated twice by one annotator, an unrated row (unless ``allow_incomplete``)."""
    key = {p["pair_id"]: p for p in sample["pairs"]}
    rows, seen = [], {}
    for path in [Path(p) for p in paths]:
        with io.StringIO(read_text_file(path, "rating sheet"), newline="") as handle:  # UTF-8 (BOM dropped) or a named error
            reader = csv.DictReader(handle)
            missing = [c for c in ("pair_id", "annotator", "left_is") if c not in (reader.fieldnames or [])]
            if missing:
                raise SourceError(path, f"missing columns {missing} (export the sheets with human-check pairs-export)")
            for line, row in enumerate(reader, start=2):
                where = f"{path}:{line}"
                pair = key.get((row.get("pair_id") or "").strip())
                if pair is None:
                    raise SourceError(where, f"pair {row.get('pair_id')!r} is not in pair_sample.json")
                text = (row.get("left_is") or "").strip().lower()
                if not text:
                    if allow_incomplete:
                        continue
                    raise SourceError(where, "left_is is not filled (A, B or unsure)")
                answer = ANSWERS.get(text)
                if answer is None:
                    raise SourceError(where, f"left_is must be A, B or unsure, got {row['left_is']!r}")
                annotator = (row.get("annotator") or "").strip()
                if not annotator:
                    raise SourceError(where, "annotator is empty")
                if (pair["pair_id"], annotator) in seen:
                    raise SourceError(where, f"pair {pair['pair_id']} rated twice by annotator {annotator} "
                                             f"(first at {seen[(pair['pair_id'], annotator)]})")
                seen[(pair["pair_id"], annotator)] = where
                correct = answer != "unsure" and pair[f"label_{answer}"] == pair["left"]
                rows.append({"pair_id": pair["pair_id"], "annotator": annotator, "dimension": pair["dimension"],
                             "gender": pair["gender"], "answer": answer, "distinguishable": bool(correct)})
    if not rows:
        raise SourceError(", ".join(str(p) for p in paths), "no rated pairs")
    return pd.DataFrame(rows)


def pair_verdicts(ratings: pd.DataFrame) -> pd.DataFrame:
    """One row per pair rated by exactly two annotators: ``a`` and ``b`` (each annotator's verdict, in
    annotator-name order). Pairs with another number of ratings are left out (Table 10 needs both)."""
    annotators = sorted(ratings["annotator"].unique())
    if len(annotators) != 2:
        raise ValueError(f"Table 10 needs exactly two annotators, got {annotators}")
    wide = ratings.pivot(index="pair_id", columns="annotator", values="distinguishable").dropna()
    meta = ratings.groupby("pair_id")[["dimension", "gender"]].first()
    out = meta.join(wide.rename(columns={annotators[0]: "a", annotators[1]: "b"}), how="inner")
    out[["a", "b"]] = out[["a", "b"]].astype(bool)
    return out.reset_index()


def table10(verdicts: pd.DataFrame, rule: str = "any") -> pd.DataFrame:
    """Table 10 per bias dimension and Overall (pooled over all pairs).

    - Distinguishable: pairs not judged non-distinguishable by both annotators (``rule="any"``: at
      least one annotator matched the labels), ``rule="all"``: both did; Non-Distinguishable the rest;
    - Agreement (%) = 100 x (pairs where both judged distinguishable + both judged not) / pairs;
    - Cohen's kappa of the two annotators' verdicts, kappa = (p_o - p_e) / (1 - p_e) with p_e =
      p_A(yes) p_B(yes) + p_A(no) p_B(no) (statsmodels ``cohens_kappa`` on the 2x2 table); NaN where
      p_e = 1 (both annotators gave one verdict throughout)."""
    from statsmodels.stats.inter_rater import cohens_kappa

    if rule not in RULES:
        raise ValueError(f"rule must be one of {RULES}, got {rule!r}")
    rows = []
    groups = [(DIMENSION_LABELS.get(d, d), part) for d, part in verdicts.groupby("dimension", sort=True)]
    for label, part in groups + [("Overall", verdicts)]:
        a, b = part["a"].to_numpy(bool), part["b"].to_numpy(bool)
        positive = (a | b) if rule == "any" else (a & b)
        table = np.array([[np.sum(a & b), np.sum(a & ~b)], [np.sum(~a & b), np.sum(~a & ~b)]])
        with np.errstate(divide="ignore", invalid="ignore"):
            kappa = float(cohens_kappa(table).kappa) if len(part) else np.nan
        rows.append({"bias_dimension": label, "n_pairs": int(len(part)), "distinguishable": int(positive.sum()),
                     "non_distinguishable": int((~positive).sum()),
                     "agreement_pct": 100 * float(np.mean(a == b)) if len(part) else np.nan, "cohens_kappa": kappa})
    return pd.DataFrame(rows)


def report(ratings_paths, out: str | os.PathLike, *, rule: str = "any", allow_incomplete: bool = False) -> pd.DataFrame:
    """Read the sheets (and ``pair_sample.json`` beside the first), write ``table10.csv`` and
    ``pair_verdicts.csv`` to ``out``; returns Table 10."""
    paths = [Path(p) for p in ratings_paths]
    sample_file = paths[0].parent / "pair_sample.json"
    if not sample_file.is_file():
        raise SourceError(sample_file, "missing: the answer key written by human-check pairs-export (keep the sheets "
                                       "in the export folder)")
    sample = json.loads(sample_file.read_text(encoding="utf-8"))
    verdicts = pair_verdicts(read_pair_ratings(paths, sample, allow_incomplete=allow_incomplete))
    table = table10(verdicts, rule)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(table.to_csv(index=False).encode("utf-8"), out / "table10.csv")
    write_bytes_atomic(verdicts.to_csv(index=False).encode("utf-8"), out / "pair_verdicts.csv")
    return table


def add_subcommands(sub) -> None:
    """``pairs-export`` and ``pairs-report`` under ``generate vignette human-check``."""
    exp = sub.add_parser("pairs-export", help="Table 10: draw identity-contrast pairs of a built dataset; write the pair "
                                              "images, contact_sheet.html, pair_ratings_<annotator>.csv, pair_sample.json")
    exp.add_argument("--dataset", required=True, help="a `build vignette` output folder")
    exp.add_argument("--out", required=True)
    exp.add_argument("--per-dimension", type=int, default=150,
                     help="pairs per bias dimension (default 150; the paper: ~160, 1,200 in all)")
    exp.add_argument("--seed", type=int, default=0)
    exp.add_argument("--annotators", nargs="+", default=["A", "B"])
    rep = sub.add_parser("pairs-report", help="Table 10 from completed pair_ratings_<annotator>.csv sheets")
    rep.add_argument("--ratings", nargs="+", required=True)
    rep.add_argument("--out", required=True, help="folder for table10.csv and pair_verdicts.csv")
    rep.add_argument("--rule", choices=RULES, default="any",
                     help="a pair is Distinguishable unless both annotators fail it (any, default) / when both match it (all)")
    rep.add_argument("--allow-incomplete", action="store_true", help="leave unrated rows out instead of failing")


def run(args) -> int:
    if args.action == "pairs-export":
        sample = export(args.dataset, args.out, per_dimension=args.per_dimension, seed=args.seed,
                        annotators=tuple(args.annotators))
        print(f"drew {sample['size']} pairs (seed {sample['seed']}); wrote pairs/, contact_sheet.html, "
              + ", ".join(f"pair_ratings_{a}.csv" for a in args.annotators) + f", pair_sample.json to {args.out}")
        return 0
    table = report(args.ratings, args.out, rule=args.rule, allow_incomplete=args.allow_incomplete)
    with pd.option_context("display.width", 160):
        print(table.to_string(index=False, float_format=lambda x: f"{x:.2f}"))
    print(f"\nwrote table10.csv, pair_verdicts.csv to {args.out}")
    return 0
