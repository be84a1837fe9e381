#!/usr/bin/env python
"""VIGNETTE scale benchmark: sample and compose N pairs (default 1,000,000) from a synthetic set of the
real list sizes, streaming, and report peak RSS and the per-pair costs.

The synthetic set has the upstream sizes (167 + 162 identities in the 8 dimensions, 75 activities,
30 SSCM pairs) unless ``--lists DIR`` points at real lists; every identity x activity image and every
portrait exists (25,004 images of ``--image-size`` px), built with the real builder. Then:

1. sampling: ``vignette_pairs.sample_pairs`` (identity contrast) draws N pairs lazily;
2. composing: every sampled pair is read and composed (``IndividualImages.half`` + ``compose_pair``,
   exactly what ``doc_to_image`` does) and dropped, as a streaming reader would;
3. doc building: the ``vignette_decision`` docs of the first ``--docs-pairs`` pairs.

Usage: ``python scripts/benchmark_vignette.py [--pairs 1000000] [--workdir DIR] [--json OUT]``.
"""

from __future__ import annotations

import argparse
import csv
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SIZES = {"male": {"socioeconomic": 54, "physical_traits": 40, "nationality": 26, "race_ethnicity_color": 14,
                  "religion": 12, "ability": 10, "age": 9, "gender_and_sex": 2},
         "female": {"socioeconomic": 54, "physical_traits": 37, "nationality": 26, "race_ethnicity_color": 14,
                    "religion": 12, "ability": 10, "age": 9}}
N_ACTIVITIES, N_TERM_PAIRS = 75, 30


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def write_real_size_lists(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for gender, dims in SIZES.items():
        with open(folder / f"{gender}des.csv", "w", newline="") as handle:
            w = csv.writer(handle)
            w.writerow(["axis", "bucket", "descriptor", "Visibility-gpt", "Visibility-human", "VLabel"])
            for dim, n in dims.items():
                for k in range(n):
                    w.writerow([dim, "", f"{dim.replace('_', ' ')} {k} {'man' if gender == 'male' else 'woman'}", "Yes", "Yes", "Yes"])
    activities = [f"activity {k}" for k in range(N_ACTIVITIES)]
    (folder / "activities.json").write_text(json.dumps({"Free Time": activities}))
    roles = [{"activity": a, "role": f"role {k}", **{d: f"Who should do {a} ({d})?" for d in
              ("ability", "sociability", "morality", "agency", "status", "appearance")}} for k, a in enumerate(activities)]
    (folder / "roles.json").write_text(json.dumps({"Free Time": roles}))
    with open(folder / "sscm_dictionary.csv", "w", newline="") as handle:
        w = csv.writer(handle)
        w.writerow(["dictionary", "term", "direction", "pair_id"])
        for k in range(N_TERM_PAIRS):
            w.writerow(["Dimension", f"good{k}", "high", f"high_t{k}"])
            w.writerow(["Dimension", f"bad{k}", "low", f"low_t{k}"])
    return folder


def write_images(lists_dir: Path, folder: Path, size: int) -> int:
    from lm_eval_bias.testing.synthetic_vignette import individual_image
    from lm_eval_bias.vignette_schema import read_lists, slug

    lists = read_lists(lists_dir)
    n = 0
    for identity in lists.identities:
        (folder / identity.gender).mkdir(parents=True, exist_ok=True)
        (folder / identity.gender / f"{slug(identity.descriptor)}.png").write_bytes(individual_image(identity.descriptor, None, size))
        n += 1
        for activity in lists.activities:
            path = folder / identity.gender / f"{slug(identity.descriptor)}_{slug(activity.name)}.png"
            path.write_bytes(individual_image(identity.descriptor, activity.name, size))
            n += 1
    return n


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1_000_000)
    parser.add_argument("--image-size", type=int, default=64)
    parser.add_argument("--lists", default=None, help="real list folder (default: synthetic lists of the real sizes)")
    parser.add_argument("--workdir", default=None, help="reuse/keep the built dataset here")
    parser.add_argument("--docs-pairs", type=int, default=20_000)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)

    from datasets_builder.vignette import build_vignette
    from lm_eval_bias.tasks import vignette
    from lm_eval_bias.vignette_pairs import IndividualImages, compose_pair, sample_pairs

    work = Path(args.workdir or tempfile.mkdtemp(prefix="vignette-bench-"))
    out = work / "data" / "vignette"
    report: dict = {}
    if not out.is_dir():
        lists_dir = Path(args.lists) if args.lists else write_real_size_lists(work / "lists")
        t = time.perf_counter()
        n_images = write_images(lists_dir, work / "src", args.image_size)
        build_vignette(work / "src", lists_dir, out)
        report["build_s"] = round(time.perf_counter() - t, 1)
        report["images"] = n_images
    vd = vignette.VignetteData(str(out))
    identities = len(vd.catalog.dimension)
    per_identity = -(-args.pairs // identities)
    report.update(identities=identities, activities=len(vd.activities), per_identity=per_identity,
                  rss_after_load_mb=round(peak_rss_mb()))

    t = time.perf_counter()
    n = sum(1 for _ in sample_pairs(vd.catalog, "identity", per_identity))
    report["sampled_pairs"] = n
    report["sampling_us_per_pair"] = round((time.perf_counter() - t) / n * 1e6, 2)
    report["rss_after_sampling_mb"] = round(peak_rss_mb())

    store = IndividualImages(str(out))
    t = time.perf_counter()
    composed = 0
    for spec in sample_pairs(vd.catalog, "identity", per_identity):
        left = store.half(vignette.image_id(spec.gender, spec.left.descriptor, spec.left.activity))
        right = store.half(vignette.image_id(spec.gender, spec.right.descriptor, spec.right.activity))
        image = compose_pair(left, right)
        composed += 1
        if composed % 100_000 == 0:
            print(f"  composed {composed:,} pairs, {(time.perf_counter() - t) / composed * 1e3:.2f} ms/pair, "
                  f"peak RSS {peak_rss_mb():.0f} MB", flush=True)
    del image
    report["composed_pairs"] = composed
    report["compose_ms_per_pair"] = round((time.perf_counter() - t) / composed * 1e3, 3)
    report["rss_after_composing_mb"] = round(peak_rss_mb())

    t = time.perf_counter()
    docs = 0
    for k, spec in enumerate(sample_pairs(vd.catalog, "identity", per_identity, activities=None)):
        if k >= args.docs_pairs:
            break
        docs += len(vignette.docs_for_pair("decision", spec, vd, 0))
    report["decision_docs"] = docs
    report["doc_build_us_per_doc"] = round((time.perf_counter() - t) / max(docs, 1) * 1e6, 1)
    report["peak_rss_mb"] = round(peak_rss_mb())

    for key, value in report.items():
        print(f"{key:>26}: {value}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
