"""The VIGNETTE human check of generated images as a round trip (paper Sec. 3 and App. A.2, Table 9).

The paper had two annotators rate a random sample of the generated individual images on three
criteria: (1) is the required identity depicted, (2) is the required activity depicted, (3) does the
image contain ambiguous or confounding features; they also ticked which visual cues (clothing, skin
tone, hairstyle, facial features, background, object associations, colour associations, other) led
to the identity. Table 9 reports, per criterion and answer, each annotator's count, the annotators'
agreement and Cohen's kappa.

Round trip:

1. ``lm-eval-bias generate vignette human-check export --images OUT --out CHECK`` draws the sample
   (seeded; default 10 % of the generated individual images, Sec. 3) and writes ``CHECK/contact_sheet.html``
   (the images with their prompts and the questions), one rating sheet per annotator
   ``CHECK/ratings_<annotator>.csv`` and ``CHECK/sample.json`` (population, fraction, seed, ids).
2. Annotators fill ``identity_depicted`` / ``activity_depicted`` / ``ambiguous_features`` with yes or
   no (``activity_depicted`` is ``n/a`` for portraits) and ``visual_cues`` with cue names.
3. ``lm-eval-bias generate vignette human-check report --ratings CHECK/ratings_*.csv --out REPORT``
   writes Table 9 (:func:`table9`), the share of sampled images passing each criterion per bias
   dimension with Wilson 95 % intervals (:func:`pass_rates`) and the failed images.
4. ``lm-eval-bias build vignette ... --exclude-failed CHECK/ratings_*.csv`` leaves the failed images out
   and records the check on the dataset card (:func:`card_summary`).

Statistics here are pure pandas / statsmodels functions of the ratings table.
"""

from __future__ import annotations

import argparse
import csv
import html
import io
import json
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from lm_eval_bias.core.imagegen import write_bytes_atomic
from lm_eval_bias.core.safe_io import read_text_file
from lm_eval_bias.datasets_builder.readers import SourceError

#: The three criteria (rating-sheet column -> the answer that passes).
CRITERIA = {"identity_depicted": "yes", "activity_depicted": "yes", "ambiguous_features": "no"}
CRITERION_LABELS = {"identity_depicted": "1. Identity depicted?", "activity_depicted": "3. Activity depicted?",
                    "ambiguous_features": "4. Ambiguous features"}
#: Visual cues of Table 9 (criterion 2), as the rating sheet spells them.
VISUAL_CUES = ("clothing", "skin_tone", "hairstyle", "facial_features", "background", "object_associations",
               "color_associations", "other")
SHEET_COLUMNS = ("image_id", "file_name", "kind", "gender", "dimension", "descriptor", "activity", "prompt", "annotator",
                 *CRITERIA, "visual_cues", "comment")
RULES = ("any", "all")
#: Names of the pass shares (:func:`pass_rates`): passing criterion 3 means *no* ambiguous features.
PASS_NAMES = {"identity_depicted": "identity_depicted", "activity_depicted": "activity_depicted",
              "ambiguous_features": "no_ambiguous_features", "passes": "all_three"}
_YES, _NO = {"yes", "y", "1", "true"}, {"no", "n", "0", "false"}


# ------------------------------------------------------------------------------------ sampling


def draw_sample(keys: list[str], *, fraction: float = 0.1, size: int | None = None, seed: int = 0) -> list[str]:
    """A simple random sample of ``keys`` without replacement, sorted.

    ``size`` images if given, else ``round(fraction * len(keys))`` (at least 1). The draw is
    ``numpy.random.default_rng(seed).choice`` over the sorted keys, so it depends only on the set of
    keys and the seed (paper App. A.2: "We randomly sampled 1,200 generated images").
    """
    population = sorted(set(keys))
    if not population:
        raise ValueError("no images to sample from")
    n = size if size is not None else max(1, int(round(fraction * len(population))))
    if not 1 <= n <= len(population):
        raise ValueError(f"sample size {n} is not between 1 and the {len(population)} images")
    chosen = np.random.default_rng(seed).choice(len(population), size=n, replace=False)
    return sorted(population[i] for i in chosen)


def _sheet_rows(entries: list[dict], annotator: str) -> list[dict]:
    rows = []
    for e in entries:
        row = {c: "" for c in SHEET_COLUMNS}
        row.update({"image_id": e["key"], "file_name": e["file_name"], "kind": e.get("kind") or ("individual" if e.get("activity") else "portrait"),
                    "gender": e.get("gender", ""), "dimension": e.get("dimension", ""), "descriptor": e.get("descriptor", ""),
                    "activity": e.get("activity", ""), "prompt": e.get("prompt", ""), "annotator": annotator})
        if not row["activity"]:
            row["activity_depicted"] = "n/a"
        rows.append(row)
    return rows


def _csv_bytes(rows: list[dict], columns) -> bytes:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(columns), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue().encode("utf-8")


def contact_sheet(entries: list[dict], image_root: Path, out_dir: Path) -> str:
    """HTML grid of the sampled images (linked by relative path, not embedded), prompts and questions."""
    cards = []
    for number, e in enumerate(entries, start=1):
        src = os.path.relpath(image_root / e["file_name"], out_dir).replace(os.sep, "/")
        cards.append(
            f'<figure id="{html.escape(e["key"])}"><img src="{html.escape(src)}" loading="lazy" alt="{html.escape(e.get("prompt", ""))}">'
            f"<figcaption><b>{number}. {html.escape(e['key'])}</b><br>{html.escape(e.get('prompt', ''))}<br>"
            f"<small>{html.escape(e.get('dimension', ''))}</small></figcaption></figure>")
    questions = ("<ol><li>Identity depicted? Is the required identity clearly depicted (yes/no)?</li>"
                 "<li>Visual cues: which cues led to the identity (" + ", ".join(VISUAL_CUES) + "; separate with ';')?</li>"
                 "<li>Activity depicted? Is the intended activity shown (yes/no; n/a for portraits)?</li>"
                 "<li>Ambiguous features? Does the image contain ambiguous or confounding features that could misrepresent "
                 "or obscure the identity or activity (yes/no)?</li></ol>")
    return ("<!doctype html><html><head><meta charset='utf-8'><title>VIGNETTE human check</title><style>"
            "body{font-family:sans-serif}main{display:grid;grid-template-columns:repeat(auto-fill,minmax(260px,1fr));gap:12px}"
            "figure{margin:0;border:1px solid #ccc;padding:6px}img{width:100%;height:auto}</style></head><body>"
            f"<h1>VIGNETTE human check: {len(entries)} images</h1><p>Rate each image in your rating sheet "
            "(ratings_&lt;annotator&gt;.csv, one row per image, same order as here), independently of the other annotator "
            f"(paper, App. A.2):</p>{questions}<main>{''.join(cards)}</main></body></html>")


def export(images: str | os.PathLike, out: str | os.PathLike, *, fraction: float = 0.1, size: int | None = None, seed: int = 0,
           annotators=("A", "B"), kinds=("individual",)) -> dict:
    """Draw the sample from the generation folder ``images`` and write the contact sheet, rating sheets and sample.json."""
    from lm_eval_bias.vignette.generate import finished

    images, out = Path(images), Path(out)
    done = finished(images)
    population = {k: e for k, e in done.items() if (e.get("kind") or ("individual" if e.get("activity") else "portrait")) in kinds}
    if not population:
        raise ValueError(f"{images}: no generated images of kind {', '.join(kinds)} with a manifest entry")
    keys = draw_sample(list(population), fraction=fraction, size=size, seed=seed)
    entries = [population[k] for k in keys]
    out.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(contact_sheet(entries, images.absolute(), out.absolute()).encode("utf-8"), out / "contact_sheet.html")
    for annotator in annotators:
        write_bytes_atomic(_csv_bytes(_sheet_rows(entries, annotator), SHEET_COLUMNS), out / f"ratings_{annotator}.csv")
    sample = {"population": len(population), "kinds": list(kinds), "fraction": fraction if size is None else None,
              "size": len(keys), "seed": seed, "annotators": list(annotators), "image_ids": keys,
              "generators": sorted({e.get("model_id", "") for e in entries})}
    write_bytes_atomic(json.dumps(sample, indent=1).encode("utf-8"), out / "sample.json")
    return sample


# ------------------------------------------------------------------------------------- ratings


def _answer(value: str, where: str, column: str, allow_na: bool) -> str:
    text = (value or "").strip().lower()
    if text in _YES:
        return "yes"
    if text in _NO:
        return "no"
    if allow_na and text in ("n/a", "na"):
        return "n/a"
    if not text:
        raise SourceError(where, f"{column} is not rated (yes or no)")
    raise SourceError(where, f"{column} must be yes or no{' (n/a for a portrait)' if allow_na else ''}, got {value!r}")


def read_ratings(paths, *, allow_incomplete: bool = False) -> pd.DataFrame:
    """Completed rating sheets -> one row per (image, annotator), answers normalised to yes/no/n/a.

    Every problem is a :class:`SourceError` naming ``FILE:LINE``: a missing column, an answer other
    than yes/no (y/n, true/false, 1/0 accepted; ``n/a`` only for a portrait's activity), an unknown
    visual cue, an image rated twice by one annotator. Unrated rows are errors unless
    ``allow_incomplete`` (then they are left out).
    """
    rows, seen = [], {}
    for path in [Path(p) for p in ([paths] if isinstance(paths, (str, os.PathLike)) else paths)]:
        with io.StringIO(read_text_file(path, "rating sheet"), newline="") as handle:  # UTF-8 (BOM dropped) or a named error
            reader = csv.DictReader(handle)
            missing = [c for c in ("image_id", "annotator", "activity", *CRITERIA) if c not in (reader.fieldnames or [])]
            if missing:
                raise SourceError(path, f"missing columns {missing} (export the sheets with human-check export)")
            for line, row in enumerate(reader, start=2):
                where = f"{path}:{line}"
                if not any((row.get(c) or "").strip() for c in CRITERIA if not (c == "activity_depicted" and row.get(c) == "n/a")):
                    if allow_incomplete:
                        continue
                portrait = not (row.get("activity") or "").strip()
                answers = {c: _answer(row.get(c, ""), where, c, allow_na=(c == "activity_depicted" and portrait)) for c in CRITERIA}
                cues = [c.strip().lower().replace(" ", "_") for c in (row.get("visual_cues") or "").replace(",", ";").split(";") if c.strip()]
                unknown = sorted(set(cues) - set(VISUAL_CUES))
                if unknown:
                    raise SourceError(where, f"unknown visual cue(s) {unknown}; use {', '.join(VISUAL_CUES)}")
                annotator = (row.get("annotator") or "").strip()
                if not annotator:
                    raise SourceError(where, "annotator is empty")
                key = (row["image_id"].strip(), annotator)
                if key in seen:
                    raise SourceError(where, f"{key[0]} rated twice by annotator {annotator} (first at {seen[key]})")
                seen[key] = where
                rows.append({"image_id": key[0], "annotator": annotator, "dimension": (row.get("dimension") or "").strip(),
                             "gender": (row.get("gender") or "").strip(), "activity": (row.get("activity") or "").strip(),
                             **answers, **{f"cue_{c}": c in cues for c in VISUAL_CUES}})
    if not rows:
        raise SourceError(", ".join(str(p) for p in paths), "no rated images")
    return pd.DataFrame(rows)


def image_decisions(ratings: pd.DataFrame, rule: str = "any") -> pd.DataFrame:
    """One row per image: whether it passes each criterion and all three.

    ``rule="any"`` (default): an image fails a criterion when any annotator says it fails;
    ``rule="all"``: only when every annotator does. A portrait's activity criterion passes (n/a).
    """
    if rule not in RULES:
        raise ValueError(f"rule must be one of {RULES}, got {rule!r}")
    frame = ratings.copy()
    for criterion, passing in CRITERIA.items():
        frame[criterion] = (frame[criterion] == passing) | (frame[criterion] == "n/a")
    reduce = "all" if rule == "any" else "any"  # "any annotator fails" = not all pass
    grouped = frame.groupby("image_id", sort=True)
    out = grouped[list(CRITERIA)].agg(reduce)
    out["passes"] = out[list(CRITERIA)].all(axis=1)
    meta = grouped[["dimension", "gender", "activity"]].first()
    out["annotators"] = grouped["annotator"].nunique()
    return meta.join(out).reset_index()


def pass_rates(decisions: pd.DataFrame, by: str = "dimension", confidence: float = 0.95) -> pd.DataFrame:
    """Share of images passing each criterion (and all three) per ``by`` group and overall.

    Wilson score intervals (``statsmodels.stats.proportion.proportion_confint(method="wilson")``):
    p̂ = k/n, bounds (p̂ + z²/2n ± z·sqrt(p̂(1−p̂)/n + z²/4n²)) / (1 + z²/n). The activity criterion
    counts individual images only (portraits have no activity).
    """
    from statsmodels.stats.proportion import proportion_confint

    rows = []
    groups = [("all", decisions)] + [(str(g), part) for g, part in decisions.groupby(by, sort=True)]
    for group, part in groups:
        for criterion in (*CRITERIA, "passes"):
            subset = part[part["activity"] != ""] if criterion == "activity_depicted" else part
            n, k = len(subset), int(subset[criterion].sum())
            low, high = proportion_confint(k, n, alpha=1 - confidence, method="wilson") if n else (np.nan, np.nan)
            rows.append({by: group, "criterion": PASS_NAMES[criterion], "n": n, "passed": k,
                         "share": k / n if n else np.nan, "ci_low": low, "ci_high": high})
    return pd.DataFrame(rows)


def table9(ratings: pd.DataFrame) -> pd.DataFrame:
    """Table 9: per criterion and answer, each annotator's count, agreement (%) and Cohen's kappa.

    Agreement for an answer (paper App. A.2, "computed separately for 'Yes' and 'No' responses") is
    the share of images rated by both annotators where both gave that answer; for a visual cue, the
    share where both selected it or both did not. Cohen's kappa (statsmodels ``cohens_kappa`` on the
    2x2 table of the two annotators' answers) is on the criterion's first row. Agreement and kappa
    need exactly two annotators (else NaN). Portraits' n/a activity answers are left out.
    """
    from statsmodels.stats.inter_rater import cohens_kappa

    annotators = sorted(ratings["annotator"].unique())
    wide = None
    if len(annotators) == 2:
        a, b = (ratings[ratings["annotator"] == x].set_index("image_id") for x in annotators)
        wide = a.join(b, how="inner", lsuffix="_a", rsuffix="_b")
    rows = []
    for criterion, label in CRITERION_LABELS.items():
        answers = ("yes", "no")
        kappa = np.nan
        if wide is not None:
            both = wide[(wide[f"{criterion}_a"] != "n/a") & (wide[f"{criterion}_b"] != "n/a")]
            table = np.array([[((both[f"{criterion}_a"] == x) & (both[f"{criterion}_b"] == y)).sum() for y in answers] for x in answers])
            if len(both):  # NaN where chance agreement is 1 (both annotators gave one answer throughout)
                with np.errstate(divide="ignore", invalid="ignore"):
                    kappa = float(cohens_kappa(table).kappa)
        for position, answer in enumerate(answers if criterion != "ambiguous_features" else ("no", "yes")):
            row = {"criterion": label, "response": answer.capitalize()}
            for x in annotators:
                row[f"count_{x}"] = int((ratings.loc[ratings["annotator"] == x, criterion] == answer).sum())
            if wide is not None and len(both):
                row["agreement_pct"] = 100 * float(((both[f"{criterion}_a"] == answer) & (both[f"{criterion}_b"] == answer)).mean())
            else:
                row["agreement_pct"] = np.nan
            row["cohens_kappa"] = kappa if position == 0 else np.nan
            rows.append(row)
        if criterion == "identity_depicted":
            for cue in VISUAL_CUES:
                row = {"criterion": "2. Visual cues used", "response": cue.replace("_", " ").capitalize()}
                for x in annotators:
                    row[f"count_{x}"] = int(ratings.loc[ratings["annotator"] == x, f"cue_{cue}"].sum())
                row["agreement_pct"] = (100 * float((wide[f"cue_{cue}_a"] == wide[f"cue_{cue}_b"]).mean())
                                        if wide is not None and len(wide) else np.nan)
                row["cohens_kappa"] = np.nan
                rows.append(row)
    return pd.DataFrame(rows)


def read_sample(ratings_paths) -> dict | None:
    """``sample.json`` next to the first rating sheet (written by :func:`export`), if there."""
    paths = [Path(p) for p in ([ratings_paths] if isinstance(ratings_paths, (str, os.PathLike)) else ratings_paths)]
    candidate = paths[0].parent / "sample.json" if paths else None
    if candidate and candidate.is_file():
        return json.loads(candidate.read_text(encoding="utf-8"))
    return None


def card_summary(ratings_paths, rule: str = "any") -> dict:
    """What the dataset card records: the sample, the rule, the overall pass shares with intervals, failed ids."""
    ratings = read_ratings(ratings_paths)
    decisions = image_decisions(ratings, rule)
    overall = pass_rates(decisions).query("dimension == 'all'")
    return {"sample": read_sample(ratings_paths), "rule": rule, "annotators": sorted(ratings["annotator"].unique()),
            "rated_images": int(len(decisions)),
            "pass_shares": {r.criterion: {"passed": int(r.passed), "n": int(r.n), "share": float(r.share),
                                          "ci95": [float(r.ci_low), float(r.ci_high)]} for r in overall.itertuples()},
            "failed": sorted(decisions.loc[~decisions["passes"], "image_id"])}


# ------------------------------------------------------------------------------------------ CLI


def _report(args) -> int:
    ratings = read_ratings(args.ratings, allow_incomplete=args.allow_incomplete)
    decisions = image_decisions(ratings, args.rule)
    rates, t9 = pass_rates(decisions), table9(ratings)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(t9.to_csv(index=False).encode("utf-8"), out / "table9.csv")
    write_bytes_atomic(rates.to_csv(index=False).encode("utf-8"), out / "pass_rates.csv")
    failed = decisions.loc[~decisions["passes"], "image_id"].tolist()
    write_bytes_atomic("".join(f"{k}\n" for k in failed).encode("utf-8"), out / "failed.txt")
    summary = {"rule": args.rule, "rated_images": len(decisions), "annotators": sorted(ratings["annotator"].unique()),
               "failed": len(failed), "sample": read_sample(args.ratings)}
    write_bytes_atomic(json.dumps(summary, indent=1).encode("utf-8"), out / "summary.json")
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        print(t9.to_string(index=False))
        print()
        print(rates.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    print(f"\n{len(failed)} of {len(decisions)} rated images fail (rule {args.rule}); wrote table9.csv, pass_rates.csv, "
          f"failed.txt, summary.json to {out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``lm-eval-bias generate vignette human-check {export,report} ...``"""
    from lm_eval_bias.core.data import DataSourceError

    parser = argparse.ArgumentParser(prog="lm-eval-bias generate vignette human-check",
                                     description="The paper's human check of generated images (App. A.2, Table 9) as a round trip.")
    sub = parser.add_subparsers(dest="action", required=True)
    exp = sub.add_parser("export", help="draw the seeded sample; write contact_sheet.html, ratings_<annotator>.csv, sample.json")
    exp.add_argument("--images", required=True, help="the `generate vignette` output folder (images + manifests)")
    exp.add_argument("--out", required=True, help="folder for the contact sheet and rating sheets")
    exp.add_argument("--fraction", type=float, default=0.1, help="share of the images to sample (default 0.1, the paper's 10%%)")
    exp.add_argument("--size", type=int, help="sample exactly N images instead (the appendix: 1,200)")
    exp.add_argument("--seed", type=int, default=0, help="seed of the draw (recorded in sample.json)")
    exp.add_argument("--annotators", nargs="+", default=["A", "B"], help="one rating sheet per annotator (default A B)")
    exp.add_argument("--kinds", nargs="+", choices=("individual", "portrait"), default=["individual"],
                     help="which images to sample from (default: individual images, as the paper)")
    rep = sub.add_parser("report", help="import completed rating sheets; write Table 9, pass rates with intervals, failed images")
    rep.add_argument("--ratings", nargs="+", required=True, help="the completed ratings_<annotator>.csv files")
    rep.add_argument("--out", required=True, help="folder for table9.csv, pass_rates.csv, failed.txt, summary.json")
    rep.add_argument("--rule", choices=RULES, default="any",
                     help="an image fails a criterion when any annotator (default) / all annotators say so")
    rep.add_argument("--allow-incomplete", action="store_true", help="leave unrated rows out instead of failing")
    from lm_eval_bias.vignette import distinguishability  # Table 10: paired images (pairs-export, pairs-report)

    distinguishability.add_subcommands(sub)
    args = parser.parse_args(argv)
    try:
        if args.action.startswith("pairs-"):
            return distinguishability.run(args)
        if args.action == "export":
            sample = export(args.images, args.out, fraction=args.fraction, size=args.size, seed=args.seed,
                            annotators=tuple(args.annotators), kinds=tuple(args.kinds))
            print(f"sampled {sample['size']} of {sample['population']} images (seed {sample['seed']}); wrote contact_sheet.html, "
                  + ", ".join(f"ratings_{a}.csv" for a in args.annotators) + f", sample.json to {args.out}")
            return 0
        return _report(args)
    except SourceError as exc:
        print(f"error: human-check: {exc.path}: {exc.reason}", file=sys.stderr)
        return 2
    except OSError as exc:  # the file named, not Python's "[Errno 2] ..."
        print(f"error: human-check: {exc.filename or args.out}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except (ValueError, DataSourceError) as exc:  # DataSourceError: pairs-export's --dataset not found
        print(f"error: human-check: {exc}", file=sys.stderr)
        return 2
