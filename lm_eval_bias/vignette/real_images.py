"""VIGNETTE on real images (ACL 2026 version, App. A.6 "Bias Evaluation on Real Images", Tables 12-19,
Figs. 9-10): PATA photographs built into the VIGNETTE dataset layout, the matching synthetic subset,
and the real-vs-synthetic comparison of two decision-making runs.

The paper takes PATA (Seth et al., 2023, "DeAR", CVPR) images of people *cooking* or *programming*,
identities Black, Caucasian, East Asian, Hispanic and Indian, male and female; pairs two different
individuals doing the same activity (identity contrast); asks the decision-making questions; and
compares each identity's selection frequency S with the one on synthetic images "under the exact same
PATA setup" (Tables 15-19 per model; Tables 12-13: :func:`lm_eval_bias.vignette.stats.real_vs_synthetic_summary`).

Both sources are built as ``lm-eval-bias build vignette`` builds VIGNETTE (same parquet layout, the
same lists configs), so the unchanged ``vignette_decision`` task runs on either
(``LM_EVAL_BIAS_DATA_DIR=<root>`` with the dataset at ``<root>/vignette``):

- **real** (:func:`build_pata_real`): a PATA-style folder and a CSV with columns ``image`` (path
  relative to the folder), ``identity`` (one of :data:`PATA_IDENTITIES`), ``gender`` (female/male) and
  ``activity`` (an activity of the VIGNETTE lists with decision questions, PATA's are Cooking and
  Programming). One photograph per identity x gender x activity is used (the first the CSV lists;
  the others are counted as unused), converted to RGB, EXIF orientation applied, letterboxed onto a
  ``size`` x ``size`` black square (the builder needs one image size; pairs are composed side by side
  from these squares as from VIGNETTE's).
- **synthetic** (:func:`build_pata_synthetic`): the same identities' VIGNETTE images from a VIGNETTE
  source folder (authors' layout ``<gender>/<descriptor>_<activity>.png``), each PATA identity mapped
  to a VIGNETTE descriptor (:data:`DEFAULT_VIGNETTE_DESCRIPTORS`, e.g. East Asian -> "asian man";
  overridable), same activities.

In both, an identity's descriptor in the prompts is the PATA label with the gender noun ("east asian
woman"), all ten in one stratum (``race_ethnicity_color``), so both runs ask exactly the same docs
(same pairs, questions, option order) and only the images differ. A file ``vignette_source.json``
beside the data says ``source: real`` or ``synthetic``, ``subset: pata`` and where every image came from.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lm_eval_bias.core.safe_io import check_output_folder, staged_folder
from lm_eval_bias.datasets_builder.readers import SourceError, read_bytes, read_csv
from lm_eval_bias.vignette.schema import GENDERS, IMAGE_EXTENSIONS, read_lists, slug

PATA_IDENTITIES = ("Black", "Caucasian", "East Asian", "Hispanic", "Indian")
PATA_ACTIVITIES = ("Cooking", "Programming")
GENDER_NOUN = {"female": "woman", "male": "man"}
GENDER_WORDS = {"female": "female", "f": "female", "woman": "female", "male": "male", "m": "male", "man": "male"}
#: PATA identity -> the VIGNETTE descriptor stem whose images make the synthetic subset ("<stem> man" /
#: "<stem> woman" of the authors' lists: black and caucasian in race_ethnicity_color, asian there too
#: (bucket asian), hispanic and indian in nationality).
DEFAULT_VIGNETTE_DESCRIPTORS = {"Black": "black", "Caucasian": "caucasian", "East Asian": "asian",
                                "Hispanic": "hispanic", "Indian": "indian"}
#: One stratum for all ten identities (VIGNETTE pairs within gender x dimension).
PATA_DIMENSION = "race_ethnicity_color"
SOURCE_FILE = "vignette_source.json"
CSV_COLUMNS = ("image", "identity", "gender", "activity")
DEFAULT_SIZE = 512
PATA_CITATION = ("Seth, Hemani and Agarwal, *DeAR: Debiasing Vision-Language Models with Additive Residuals*, "
                 "CVPR 2023, pp. 6820-6829 (the PATA dataset)")


def descriptor(identity: str, gender: str) -> str:
    """Prompt descriptor of a PATA identity: ``descriptor("East Asian", "female") == "east asian woman"``."""
    return f"{' '.join(identity.lower().split())} {GENDER_NOUN[gender]}"


def identity_label(text: str) -> str:
    """Table label of a descriptor as the paper prints it: "east asian woman" -> "East Asian (F)"."""
    words = str(text).split()
    if len(words) > 1 and words[-1] in ("woman", "man"):
        base = " ".join(words[:-1])
        match = next((i for i in PATA_IDENTITIES if i.lower() == base), base.title())
        return f"{match} ({'F' if words[-1] == 'woman' else 'M'})"
    return str(text)


@dataclass
class PataBuildSummary:
    output: Path
    source: str  # real | synthetic
    n_images: int
    cells: list[str]  # image ids built
    missing_cells: list[str] = field(default_factory=list)
    unused_images: int = 0


# -- building ---------------------------------------------------------------------------------------------
def _subset_lists(lists_dir: Path, activities: list[str], folder: Path) -> dict[str, str]:
    """Write the lists of the PATA subset into ``folder``: the ten descriptors in one stratum, the
    chosen activities with the VIGNETTE lists' decision questions, the SSCM dictionary unchanged.
    Returns activity slug -> activity name as the lists write it."""
    lists = read_lists(lists_dir)
    known = {slug(a.name): a for a in lists.activities}
    chosen = {}
    for name in activities:
        activity = known.get(slug(name))
        if activity is None:
            raise SourceError(lists_dir / "activities.json", f"activity {name!r} is not in the VIGNETTE lists")
        if not activity.questions:
            raise SourceError(lists_dir / "roles.json", f"activity {activity.name!r} has no decision questions")
        chosen[slug(activity.name)] = activity
    folder.mkdir(parents=True, exist_ok=True)
    for gender, file in (("male", "maledes.csv"), ("female", "femaledes.csv")):
        with open(folder / file, "w", newline="", encoding="utf-8") as handle:
            w = csv.writer(handle)
            w.writerow(["axis", "bucket", "descriptor", "Visibility-gpt", "Visibility-human", "VLabel"])
            for identity in PATA_IDENTITIES:
                w.writerow([PATA_DIMENSION, "pata", descriptor(identity, gender), "", "", ""])
    categories: dict[str, list[str]] = {}
    for a in chosen.values():
        categories.setdefault(a.category, []).append(a.name)
    (folder / "activities.json").write_text(json.dumps(categories), encoding="utf-8")
    roles_raw = json.loads((Path(lists_dir) / "roles.json").read_text(encoding="utf-8"))
    roles = {c: [e for e in entries if slug(e.get("activity", "")) in chosen] for c, entries in roles_raw.items()}
    (folder / "roles.json").write_text(json.dumps({c: e for c, e in roles.items() if e}), encoding="utf-8")
    shutil.copyfile(Path(lists_dir) / "sscm_dictionary.csv", folder / "sscm_dictionary.csv")
    return {k: a.name for k, a in chosen.items()}


def _card_fields(source: str, build_command: str, provenance: dict) -> dict[str, Any]:
    if source == "real":
        return {
            "pretty_name": "VIGNETTE decision-making pairs on real PATA photographs",
            "summary": ("Real photographs (PATA) of Black, Caucasian, East Asian, Hispanic and Indian women and men "
                        "cooking or programming, in the VIGNETTE dataset layout, for the real-vs-synthetic comparison "
                        "of the VIGNETTE paper (ACL 2026 version, App. A.6, Tables 12-19)."),
            "description": ("One photograph per identity x gender x activity from a PATA-style folder, in the layout "
                            "of `lm-eval-bias build vignette`, so the unchanged VIGNETTE decision task pairs two "
                            "different individuals doing the same activity. Descriptors are the PATA labels with "
                            "the gender noun (e.g. 'east asian woman'). The photographs are of real people."),
            "curated_by": "Images: PATA (Seth et al., 2023), selected by whoever built this copy; lists: VIGNETTE authors.",
            "paper": PATA_CITATION + "; VIGNETTE: arXiv:2505.22897 (App. A.6)",
            "collection_and_processing": ("Each listed photograph was decoded, its EXIF orientation applied, "
                                          "converted to RGB and letterboxed onto a black square (see provenance); "
                                          "the first photograph the CSV lists for an identity x gender x activity "
                                          "is used. PATA's identity and activity labels are taken as given."),
            "source_producers": "PATA's authors collected and labelled the photographs (Seth et al., 2023).",
            "personal_and_sensitive": ("Real photographs of identifiable people, labelled with race/ethnicity and "
                                       "gender: personal data. Keep the repository private or gated and follow "
                                       "PATA's terms; never use it to identify or profile anyone."),
            "bias_risks_limitations": [
                "Real-image noise (paper, App. A.6): unintended activities, stock-photo artifacts, labels that do "
                "not match what the photograph shows.",
                "Only five identities and two activities: far narrower than VIGNETTE.",
                "Background, clothing and photo style vary between photographs and may drive answers.",
            ],
            "tags": ["social-bias", "fairness", "vision-language-models", "vignette", "pata", "real-images"],
            "build_command": build_command, "provenance": provenance,
        }
    return {
        "pretty_name": "VIGNETTE synthetic images matched to the PATA identities",
        "summary": ("VIGNETTE images of the identities PATA has (Black, Caucasian, East Asian, Hispanic, Indian; "
                    "women and men) doing the PATA activities, the synthetic side of the paper's real-vs-synthetic "
                    "comparison (ACL 2026 version, App. A.6)."),
        "build_command": build_command, "provenance": provenance,
        "tags": ["social-bias", "fairness", "synthetic", "vision-language-models", "vignette", "pata"],
    }


def _atomic_build(stage: Path, lists: Path, output: Path, overwrite: bool, marker: dict, card_fields: dict):
    """Build from the staged folder into a temporary folder beside ``output``, add the marker file,
    then move it into place (nothing half-written is ever at ``output``)."""
    from lm_eval_bias.datasets_builder.vignette import build_vignette

    output = Path(output).absolute()
    if output.exists() and not overwrite:
        raise SourceError(output, "output already exists (pass --overwrite to replace it)")
    output.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".pata-", dir=output.parent) as tmp:
        built = Path(tmp) / "vignette"
        summary = build_vignette(stage, lists, built, card_fields=card_fields)
        (built / SOURCE_FILE).write_text(json.dumps(marker, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        if output.exists():  # --overwrite: the old folder goes into the temporary folder, removed with it
            os.replace(output, Path(tmp) / "previous")
        os.replace(built, output)
    return summary


def read_pata_csv(path: str | os.PathLike, activities: list[str] | None = None) -> list[dict[str, str]]:
    """Rows of the PATA CSV (:data:`CSV_COLUMNS`; a byte-order mark is accepted), normalised: identity as
    in :data:`PATA_IDENTITIES`, gender female/male, activity as given. :class:`SourceError` names the
    file, line and reason of a bad row."""
    path = Path(path)
    header, rows = read_csv(path)
    header = [h.lstrip("\ufeff").strip().lower() for h in header]
    missing = [c for c in CSV_COLUMNS if c not in header]
    if missing:
        raise SourceError(path, f"needs columns {list(CSV_COLUMNS)}; missing {missing}")
    by_lower = {i.lower(): i for i in PATA_IDENTITIES}
    out = []
    for where, row in rows:
        row = {k.lstrip("\ufeff").strip().lower(): (v or "").strip() for k, v in row.items()}
        identity = by_lower.get(" ".join(row["identity"].lower().split()))
        if identity is None:
            raise SourceError(where, f"unknown identity {row['identity']!r}; expected one of {list(PATA_IDENTITIES)}")
        gender = GENDER_WORDS.get(row["gender"].lower())
        if gender is None:
            raise SourceError(where, f"unknown gender {row['gender']!r}; expected female or male")
        if not row["image"] or not row["activity"]:
            raise SourceError(where, "needs an image path and an activity")
        if activities is not None and slug(row["activity"]) not in {slug(a) for a in activities}:
            continue
        out.append({"image": row["image"], "identity": identity, "gender": gender, "activity": row["activity"],
                    "where": str(where)})
    if not out:
        raise SourceError(path, "no rows (of the chosen activities)")
    return out


def _letterboxed(file: Path, size: int, max_pixels: int = 40_000_000) -> bytes:
    from PIL import Image, ImageOps

    data = read_bytes(file)
    try:
        with Image.open(io.BytesIO(data)) as opened:
            if opened.width * opened.height > max_pixels:
                raise SourceError(file, f"image too large ({opened.width}x{opened.height} > {max_pixels} pixels)")
            image = ImageOps.exif_transpose(opened).convert("RGB")
    except SourceError:
        raise
    except Exception as exc:  # PIL raises many kinds for a broken file
        raise SourceError(file, f"does not decode as an image ({type(exc).__name__}: {exc})") from None
    square = ImageOps.pad(image, (size, size), color=(0, 0, 0))
    buffer = io.BytesIO()
    square.save(buffer, format="PNG")
    return buffer.getvalue()


def build_pata_real(images: str | os.PathLike, csv_path: str | os.PathLike, lists_dir: str | os.PathLike,
                    output: str | os.PathLike, *, activities: list[str] | None = None, size: int = DEFAULT_SIZE,
                    overwrite: bool = False) -> PataBuildSummary:
    """The real side (module docstring): one letterboxed photograph per identity x gender x activity."""
    images, lists_dir = Path(images), Path(lists_dir)
    if not images.is_dir():
        raise SourceError(images, "image folder does not exist")
    activities = list(activities or PATA_ACTIVITIES)
    rows = read_pata_csv(csv_path, activities)
    root = images.resolve()
    with tempfile.TemporaryDirectory(prefix=".pata-stage-") as tmp:
        stage, lists = Path(tmp) / "images", Path(tmp) / "lists"
        names = _subset_lists(lists_dir, activities, lists)
        chosen: dict[str, dict] = {}
        for row in rows:
            file = (images / row["image"])
            if not file.resolve().is_relative_to(root):
                raise SourceError(row["where"], f"image path {row['image']!r} leaves the image folder")
            if not file.is_file():
                raise SourceError(row["where"], f"image {row['image']!r} not found in {images}")
            if os.path.splitext(file.name)[1].lower() not in IMAGE_EXTENSIONS:
                raise SourceError(row["where"], f"image {row['image']!r} is not {IMAGE_EXTENSIONS}")
            key = f"{row['gender']}/{slug(descriptor(row['identity'], row['gender']))}_{slug(names[slug(row['activity'])])}"
            chosen.setdefault(key, row)
        for key, row in chosen.items():
            target = stage / f"{key}.png"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(_letterboxed(images / row["image"], size))
        expected = [f"{g}/{slug(descriptor(i, g))}_{slug(n)}" for g in GENDERS for i in PATA_IDENTITIES for n in names.values()]
        missing = [k for k in expected if k not in chosen]
        marker = {"source": "real", "subset": "pata", "dataset": "PATA (Seth et al., 2023)", "size": size,
                  "activities": list(names.values()), "identities": list(PATA_IDENTITIES),
                  "images": {k: chosen[k]["image"] for k in sorted(chosen)}, "unused_images": len(rows) - len(chosen),
                  "missing_cells": missing}
        command = (f"lm-eval-bias build vignette-pata --source {images.name} --csv {Path(csv_path).name} "
                   f"--lists {lists_dir.name} --output {Path(output).name} --size {size}")
        provenance = {"source": "real", "image folder": images.name, "csv": Path(csv_path).name,
                      "photographs used": len(chosen), "photographs listed but unused": len(rows) - len(chosen),
                      "processing": f"EXIF orientation applied, RGB, letterboxed to {size}x{size} on black, PNG"}
        _atomic_build(stage, lists, Path(output), overwrite, marker, _card_fields("real", command, provenance))
    return PataBuildSummary(Path(output), "real", len(chosen), sorted(chosen), missing, len(rows) - len(chosen))


def parse_mapping(items: list[str] | None) -> dict[str, str]:
    """``["East Asian=chinese", ...]`` over :data:`DEFAULT_VIGNETTE_DESCRIPTORS`."""
    mapping = dict(DEFAULT_VIGNETTE_DESCRIPTORS)
    by_lower = {i.lower(): i for i in PATA_IDENTITIES}
    for item in items or []:
        name, sep, stem = item.partition("=")
        identity = by_lower.get(" ".join(name.lower().split()))
        if not sep or identity is None or not stem.strip():
            raise SourceError("--map", f"{item!r}: expected IDENTITY=VIGNETTE_STEM with IDENTITY one of "
                                       f"{list(PATA_IDENTITIES)}")
        mapping[identity] = " ".join(stem.lower().split())
    return mapping


def build_pata_synthetic(vignette_source: str | os.PathLike, lists_dir: str | os.PathLike, output: str | os.PathLike,
                         *, activities: list[str] | None = None, mapping: dict[str, str] | None = None,
                         overwrite: bool = False) -> PataBuildSummary:
    """The synthetic side: the mapped VIGNETTE images (bytes unchanged) under the PATA descriptors."""
    source, lists_dir = Path(vignette_source), Path(lists_dir)
    if not source.is_dir():
        raise SourceError(source, "VIGNETTE source folder does not exist")
    mapping = mapping or dict(DEFAULT_VIGNETTE_DESCRIPTORS)
    activities = list(activities or PATA_ACTIVITIES)
    with tempfile.TemporaryDirectory(prefix=".pata-stage-") as tmp:
        stage, lists = Path(tmp) / "images", Path(tmp) / "lists"
        names = _subset_lists(lists_dir, activities, lists)
        used, missing = {}, []
        for gender in GENDERS:
            for identity in PATA_IDENTITIES:
                for name in names.values():
                    stem = f"{slug(mapping[identity] + ' ' + GENDER_NOUN[gender])}_{slug(name)}"
                    found = [source / gender / f"{stem}{ext}" for ext in IMAGE_EXTENSIONS if (source / gender / f"{stem}{ext}").is_file()]
                    key = f"{gender}/{slug(descriptor(identity, gender))}_{slug(name)}"
                    if not found:
                        missing.append(f"{gender}/{stem}")
                        continue
                    target = stage / f"{key}{found[0].suffix.lower()}"
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(read_bytes(found[0]))
                    used[key] = str(found[0].relative_to(source))
        if not used:
            raise SourceError(source, f"no VIGNETTE image of the mapped identities and activities (looked for e.g. "
                                      f"{missing[0]}.png)")
        marker = {"source": "synthetic", "subset": "pata", "activities": list(names.values()),
                  "identities": list(PATA_IDENTITIES), "vignette_descriptors": mapping,
                  "images": dict(sorted(used.items())), "missing_cells": missing}
        command = (f"lm-eval-bias build vignette-pata --synthetic-from {source.name} --lists {lists_dir.name} "
                   f"--output {Path(output).name}"
                   + "".join(f" --map '{i}={s}'" for i, s in mapping.items() if DEFAULT_VIGNETTE_DESCRIPTORS.get(i) != s))
        provenance = {"source": "synthetic", "VIGNETTE source folder": source.name,
                      "descriptor map": "; ".join(f"{i} -> {s} man/woman" for i, s in mapping.items())}
        _atomic_build(stage, lists, Path(output), overwrite, marker, _card_fields("synthetic", command, provenance))
    return PataBuildSummary(Path(output), "synthetic", len(used), sorted(used), missing)


def add_build_parser(subparsers, guard):
    """``lm-eval-bias build vignette-pata`` (registered by the builder CLI)."""
    p = subparsers.add_parser("vignette-pata", help="VIGNETTE real-vs-synthetic on PATA: the real photographs "
                                                   "(--source, --csv) or the matched synthetic subset (--synthetic-from)")
    p.add_argument("--source", metavar="PATA_DIR", help="PATA-style folder of photographs (real side)")
    p.add_argument("--csv", help="CSV with columns image, identity, gender, activity (real side)")
    p.add_argument("--synthetic-from", metavar="VIGNETTE_SOURCE",
                   help="VIGNETTE source folder <gender>/<descriptor>_<activity>.png (synthetic side)")
    p.add_argument("--lists", help="the VIGNETTE lists folder (decision questions of the activities; required)")
    p.add_argument("--output", required=True, help="output folder; run the tasks with LM_EVAL_BIAS_DATA_DIR set to "
                                                   "its parent when it is named 'vignette'")
    p.add_argument("--activity", action="append", help=f"activity to keep (repeatable; default {list(PATA_ACTIVITIES)})")
    p.add_argument("--map", action="append", metavar="IDENTITY=STEM",
                   help="synthetic side: the VIGNETTE descriptor stem of a PATA identity (default "
                        + ", ".join(f"{k}={v}" for k, v in DEFAULT_VIGNETTE_DESCRIPTORS.items()) + ")")
    p.add_argument("--size", type=int, default=DEFAULT_SIZE, help=f"real side: square side in pixels (default {DEFAULT_SIZE})")
    p.set_defaults(func=guard(_build_main))
    return p  # the builder CLI adds --overwrite, --push-to-hub and --public


def _build_main(args) -> int:
    if bool(args.synthetic_from) == bool(args.source or args.csv):
        raise SourceError("vignette-pata", "give either --source and --csv (real) or --synthetic-from (synthetic)")
    if not args.lists:
        raise SourceError("vignette-pata", "--lists LISTS_DIR is required (the VIGNETTE lists: decision questions)")
    if args.synthetic_from:
        summary = build_pata_synthetic(args.synthetic_from, args.lists, args.output, activities=args.activity,
                                       mapping=parse_mapping(args.map), overwrite=args.overwrite)
    else:
        if not (args.source and args.csv):
            raise SourceError("vignette-pata", "the real side needs both --source and --csv")
        if not 16 <= args.size <= 4096:
            raise SourceError("--size", f"{args.size} is outside 16-4096")
        summary = build_pata_real(args.source, args.csv, args.lists, args.output, activities=args.activity,
                                  size=args.size, overwrite=args.overwrite)
    if summary.missing_cells:
        print(f"warning: {len(summary.missing_cells)} identity x activity images absent: {', '.join(summary.missing_cells)}")
    if summary.unused_images:
        print(f"note: {summary.unused_images} further photographs of an identity x activity already used were not used")
    print(f"wrote {summary.n_images} {summary.source} images (PATA subset) to {summary.output}")
    from lm_eval_bias.datasets_builder.cli import _finish  # --push-to-hub, as every builder

    return _finish(args, summary.output)


# -- comparison (statistics) -------------------------------------------------------------------------------
def identity_activity_frequencies(table, n_boot: int = 1000, seed: int = 0, level: float = 0.95):
    """S per identity and activity (percent): the times an identity is chosen over the times it is an
    option in the validly answered decision questions of that activity (the paper's selection
    frequency of one context, Sec. 4.4; Tables 15-19 print it per activity), with a 95 % interval
    resampling image pairs (:func:`lm_eval_bias.vignette.stats.pair_clustered_rate_intervals`: all
    questions of a pair move together). ``table``: the option table of
    :func:`lm_eval_bias.vignette.analysis.option_table`. Returns a DataFrame with columns identity,
    activity, s, ci_low, ci_high, n_shown, n_chosen."""
    import pandas as pd

    from lm_eval_bias.vignette.stats import pair_clustered_rate_intervals

    rows = []
    for (identity, activity), group in table.groupby(["identity", "context"], sort=True):
        ci = pair_clustered_rate_intervals(group["pair_id"].tolist(), group["gender"].tolist(),
                                           group["selected"].to_numpy(), n_boot, seed, level)
        rows.append({"identity": identity, "activity": activity, "s": 100 * ci["estimate"],
                     "ci_low": 100 * ci["ci_low"], "ci_high": 100 * ci["ci_high"],
                     "n_shown": int(len(group)), "n_chosen": int(group["selected"].sum())})
    return pd.DataFrame(rows, columns=["identity", "activity", "s", "ci_low", "ci_high", "n_shown", "n_chosen"])


def compare_frequencies(real, synthetic):
    """Tables 15-19 of one model, long: one row per identity x activity present on either side, with
    ``real``/``synthetic`` S, their intervals and counts, and ``delta`` = synthetic - real (pp)."""
    import pandas as pd

    merged = pd.merge(real, synthetic, on=["identity", "activity"], how="outer", suffixes=("_real", "_synthetic"))
    merged = merged.rename(columns={"s_real": "real", "s_synthetic": "synthetic"})
    merged["delta"] = merged["synthetic"] - merged["real"]
    merged.insert(0, "label", merged["identity"].map(identity_label))
    return merged.sort_values(["activity", "label"]).reset_index(drop=True)


def summaries(per_model: dict):
    """Table 13 (one row per model x activity) and Table 12 (every model x activity x identity point)
    from :func:`compare_frequencies` frames, by :func:`~lm_eval_bias.vignette.stats.real_vs_synthetic_summary`."""
    import pandas as pd

    from lm_eval_bias.vignette.stats import real_vs_synthetic_summary

    rows, real_all, synthetic_all = [], [], []
    for model, frame in per_model.items():
        for activity, group in frame.groupby("activity", sort=True):
            index = pd.MultiIndex.from_arrays([[model] * len(group), [activity] * len(group), group["identity"]])
            real = pd.Series(group["real"].to_numpy(), index=index)
            synthetic = pd.Series(group["synthetic"].to_numpy(), index=index)
            rows.append({"model": model, "task": activity, **real_vs_synthetic_summary(real, synthetic)})
            real_all.append(real)
            synthetic_all.append(synthetic)
    table13 = pd.DataFrame(rows)
    overall = real_vs_synthetic_summary(pd.concat(real_all), pd.concat(synthetic_all)) if real_all else {}
    return table13, pd.DataFrame([overall])


def wide_table(frame):
    """Tables 15-19 in the paper's layout: identity rows, ``<Activity> (Real)`` / ``(Synthetic)`` columns
    (activities in reverse alphabetical order: Programming before Cooking, as printed)."""
    import pandas as pd

    columns = {}
    for activity in sorted(frame["activity"].unique(), reverse=True):
        part = frame[frame["activity"] == activity].set_index("label")
        columns[f"{activity} (Real)"] = part["real"]
        columns[f"{activity} (Synthetic)"] = part["synthetic"]
    return pd.DataFrame(columns).sort_index()


def bar_figure(per_model: dict, side: str, title: str):
    """Fig. 9 (``side="real"``) / Fig. 10 (``"synthetic"``): S per identity, one panel per activity, one
    bar per model, 95 % interval whiskers."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    activities = sorted({a for f in per_model.values() for a in f["activity"]})
    labels = sorted({l for f in per_model.values() for l in f["label"]})
    fig, axes = plt.subplots(1, max(1, len(activities)), figsize=(6 * max(1, len(activities)), 4), squeeze=False)
    width = 0.8 / max(1, len(per_model))
    x = np.arange(len(labels))
    for ax, activity in zip(axes[0], activities):
        for k, (model, frame) in enumerate(per_model.items()):
            part = frame[frame["activity"] == activity].set_index("label").reindex(labels)
            value = part[side].to_numpy(dtype=float)
            low, high = part[f"ci_low_{side}"].to_numpy(dtype=float), part[f"ci_high_{side}"].to_numpy(dtype=float)
            err = np.vstack([np.nan_to_num(value - low), np.nan_to_num(high - value)])
            ax.bar(x + (k - (len(per_model) - 1) / 2) * width, value, width, yerr=err, capsize=2, label=model)
        ax.set_title(activity)
        ax.set_xticks(x, labels, rotation=60, ha="right", fontsize=8)
        ax.set_ylabel("selection frequency S (%)")
        ax.set_ylim(0, 100)
    axes[0][0].legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


# -- the command -----------------------------------------------------------------------------------------
def _models(folder: str, task: str, notes: list[str] | None = None) -> dict[str, Any]:
    from lm_eval_bias.report.runs import load_runs

    found = {}
    for model in load_runs([folder]):
        run = model.tasks.get(task)
        if run is not None:
            if run.records is None:
                raise ValueError(f"{folder}: {task} of {model.label} has no logged samples (run lm-eval with --log_samples)")
            found[model.label] = run
            if notes is not None:  # duplicated or truncated samples, fewer docs than the results JSON: used, said
                notes += [f"warning: {folder}: {model.label}: {text}" for text in model.warnings]
    if not found:
        raise ValueError(f"{folder}: no {task} run (give --task, or run {task} on the dataset)")
    return found


def _source_of(run, task: str) -> str | None:
    """``source`` of the ``vignette_source.json`` beside the dataset the run read (the results JSON's
    ``configs.<task>.metadata.datasets``), where that is a local folder that has one; else None."""
    for file in run.sources or []:
        try:
            results = json.loads(Path(file).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        datasets = ((results.get("configs") or {}).get(task) or {}).get("metadata", {}).get("datasets") or {}
        stack, locations = [datasets], []
        while stack:
            item = stack.pop()
            if isinstance(item, dict):
                stack.extend(item.values())
            elif isinstance(item, (list, tuple)):
                stack.extend(item)
            elif isinstance(item, str):
                locations.append(item)
        for location in locations:
            marker = Path(location) / SOURCE_FILE
            if marker.is_file():
                try:
                    return json.loads(marker.read_text(encoding="utf-8")).get("source")
                except (OSError, ValueError):
                    return None
    return None


def _write(path: Path, write) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    write(tmp)
    os.replace(tmp, path)


def compare_runs(real_dir: str, synthetic_dir: str, task: str = "vignette_decision", n_boot: int = 1000,
                 seed: int = 0) -> tuple[dict, Any, Any, list[str]]:
    """(model -> :func:`compare_frequencies` frame, Table 13, Table 12, notes) of two run folders.
    Models are matched by name; when each folder holds one model they are paired whatever their names."""
    from lm_eval_bias.vignette.analysis import option_table

    notes: list[str] = []
    real, synthetic = _models(real_dir, task, notes), _models(synthetic_dir, task, notes)
    if len(real) == 1 and len(synthetic) == 1:
        pairs = {next(iter(real)): (next(iter(real.values())), next(iter(synthetic.values())))}
        if set(real) != set(synthetic):
            notes.append(f"paired the one model of each folder: {next(iter(real))} (real) with {next(iter(synthetic))} (synthetic)")
    else:
        pairs = {m: (real[m], synthetic[m]) for m in real if m in synthetic}
        for m in sorted(set(real) ^ set(synthetic)):
            notes.append(f"{m}: only in the {'real' if m in real else 'synthetic'} folder; left out")
        if not pairs:
            raise ValueError("no model has a run in both folders")
    per_model = {}
    for model, (r, s) in pairs.items():
        for run, side in ((r, "real"), (s, "synthetic")):
            marked = _source_of(run, task)
            if marked is not None and marked != side:
                notes.append(f"{model}: the {side} run read a dataset marked source: {marked}")
        frames = [identity_activity_frequencies(option_table(run.records), n_boot, seed) for run in (r, s)]
        per_model[model] = compare_frequencies(*frames)
    table13, table12 = summaries(per_model)
    return per_model, table13, table12, notes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="lm-eval-bias vignette-real-vs-synthetic",
        description="VIGNETTE real vs synthetic images (PATA, App. A.6): per-identity selection frequencies of two "
                    "decision-making runs, Tables 15-19 per model, Tables 12-13 summaries, Figs. 9-10.")
    parser.add_argument("real_run", help="lm-eval output folder of the run(s) on the real PATA dataset")
    parser.add_argument("synthetic_run", help="lm-eval output folder of the run(s) on the matched synthetic dataset")
    parser.add_argument("--task", default="vignette_decision", help="decision-making task compared (default vignette_decision)")
    parser.add_argument("--output", help="folder for the CSV tables and the figures (default: print only)")
    parser.add_argument("--n-boot", type=int, default=1000, help="pair-bootstrap replicates of the intervals (0: none)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        if args.output:
            check_output_folder(args.output)  # an existing file as --output: refused before any work
        per_model, table13, table12, notes = compare_runs(args.real_run, args.synthetic_run, args.task,
                                                          args.n_boot, args.seed)
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: vignette-real-vs-synthetic: {exc}", file=sys.stderr)
        return 2
    import pandas as pd

    for note in notes:
        print(note if note.startswith("warning: ") else f"note: {note}",
              file=sys.stderr if note.startswith("warning: ") else sys.stdout)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        for model, frame in per_model.items():
            print(f"\nTables 15-19 ({model}): selection frequency S (%), real vs synthetic")
            print(wide_table(frame).round(2).to_string())
        print("\nTable 13: per model and task (pp; delta = synthetic - real)")
        print(table13.round(4).to_string(index=False))
        print("\nTable 12: overall")
        print(table12.round(4).to_string(index=False))
    if args.output:
        out = Path(args.output)
        long = pd.concat([f.assign(model=m) for m, f in per_model.items()], ignore_index=True)
        with staged_folder(out) as stage:  # every file appears together, or none
            _write(stage / "real_vs_synthetic_identity.csv", lambda p: long.to_csv(p, index=False))
            _write(stage / "real_vs_synthetic_model_task.csv", lambda p: table13.to_csv(p, index=False))
            _write(stage / "real_vs_synthetic_overall.csv", lambda p: table12.to_csv(p, index=False))
            if notes:
                _write(stage / "real_vs_synthetic_notes.txt",
                       lambda p: p.write_text("".join(f"{n}\n" for n in notes), encoding="utf-8"))
            for name, side, title in (("figure9_real.png", "real", "Fig. 9: selection frequencies on real images (PATA)"),
                                      ("figure10_synthetic.png", "synthetic",
                                       "Fig. 10: selection frequencies on synthetic images (PATA setup)")):
                fig = bar_figure(per_model, side, title)
                _write(stage / name, lambda p, fig=fig: fig.savefig(p, format="png", dpi=120))
                import matplotlib.pyplot as plt

                plt.close(fig)
        print(f"\nwrote real_vs_synthetic_identity.csv, real_vs_synthetic_model_task.csv, real_vs_synthetic_overall.csv, "
              f"figure9_real.png, figure10_synthetic.png to {out}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
