#!/usr/bin/env python
"""VIGNETTE scale benchmark: ``vignette_decision`` run through lm-eval's ``simple_evaluate`` with the
``bias-probe`` model, at several sizes, one process per size; reports peak RSS and ms per doc.

The synthetic set has the upstream sizes (167 + 162 identities in the 8 dimensions, 75 activities
with decision questions, 30 SSCM pairs) unless ``--lists DIR`` points at real lists; every identity x
activity image and every portrait exists (25,004 images of ``--image-size`` px), built once with the
real builder (``--workdir`` keeps it). Each size is a fresh Python process that runs the task exactly
as ``lm-eval-bias run`` does (``LMEVAL_HASHMM=0``, ``log_samples=True`` unless ``--no-log-samples``; no bootstrap); ``bias-probe``
reads the colour markers of every pair image, so every pair is really composed. The number of docs
is set with ``--metadata pairs_per_identity``: each sampled identity-contrast pair gives 6 decision
docs, one draw per identity gives 1,974 docs (329 identities), so ``--docs 2000,16000,100000`` runs
1,974, 15,792 and 100,674 docs (not with ``--limit``, which still builds every doc).

Reported per size: docs, peak RSS (``ru_maxrss`` of the run's process) over the whole run and up to
lm-eval's aggregation step (requests, answers, records and logged samples of every doc alive; the
task's summary runs after), ms per doc over the whole ``simple_evaluate`` call (wall and CPU time: the
machine may be shared), the aggregation's time, and how many pairs were
composed / how many composed pixel buffers are alive. ``--task vignette_decision_textonly`` runs the
same docs without images: lm-eval's own per-doc memory, the floor of the image task.

With ``--log_samples`` the samples file's size per doc is reported too (each sample serialised as
lm-eval writes it): in all, beyond the response text, and its metric entries (the headline keys' names
in ``metrics`` and their values).

``--limit N`` evaluates the first N docs only (lm-eval's ``limit``; every doc is still built): for the
samples file's bytes per doc of a large task (``vignette_stereotype`` asks every portrait pair every
SSCM term, ~326k docs at the upstream list sizes), not for its memory.

Usage: ``python scripts/benchmark_vignette.py [--docs 2000,16000,100000] [--task T] [--limit N] [--no-log-samples] [--workdir DIR] [--json OUT]``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import subprocess
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
IDENTITIES = sum(sum(d.values()) for d in SIZES.values())  # 329
DECISION_QUESTIONS = 6  # per activity: ability, sociability, morality, agency, status, appearance
TASK = "vignette_decision"  # the largest image paradigm per pair; --task vignette_decision_textonly: same docs, no image


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


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
    from lm_eval_bias.vignette.synthetic import individual_image
    from lm_eval_bias.vignette.schema import read_lists, slug

    import io

    from PIL import Image

    lists = read_lists(lists_dir)
    n = 0

    def unique(png: bytes) -> bytes:
        """The marker image with its top-left pixel set from the image's number: 329 identities share the
        marker palette, and the builder refuses two images with the same pixels (the probe reads the
        markers, not that pixel)."""
        image = Image.open(io.BytesIO(png)).convert("RGB")
        image.putpixel((0, 0), (n % 256, (n // 256) % 256, (n // 65536) % 256))
        out = io.BytesIO()
        image.save(out, format="PNG")
        return out.getvalue()

    for identity in lists.identities:
        (folder / identity.gender).mkdir(parents=True, exist_ok=True)
        (folder / identity.gender / f"{slug(identity.descriptor)}.png").write_bytes(
            unique(individual_image(identity.descriptor, None, size)))
        n += 1
        for activity in lists.activities:
            path = folder / identity.gender / f"{slug(identity.descriptor)}_{slug(activity.name)}.png"
            path.write_bytes(unique(individual_image(identity.descriptor, activity.name, size)))
            n += 1
    return n


def build(work: Path, lists: str | None, image_size: int) -> dict:
    """The synthetic dataset under ``work/data/vignette`` (built once)."""
    out = work / "data" / "vignette"
    if out.is_dir():
        return {}
    from lm_eval_bias.datasets_builder.vignette import build_vignette

    lists_dir = Path(lists) if lists else write_real_size_lists(work / "lists")
    t = time.perf_counter()
    n_images = write_images(lists_dir, work / "src", image_size)
    build_vignette(work / "src", lists_dir, out)
    return {"build_s": round(time.perf_counter() - t, 1), "images": n_images}


def run_one(work: Path, pairs_per_identity: int, task: str = TASK, log_samples: bool = True, limit: int | None = None) -> dict:
    """One run of ``task`` through lm-eval in this process (call in a fresh process)."""
    os.environ["LM_EVAL_BIAS_DATA_DIR"] = str(work / "data")
    os.environ.setdefault("LMEVAL_HASHMM", "0")  # as `lm-eval-bias run` sets it
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ["LM_EVAL_BIAS_BOOTSTRAP_ITERS"] = "0"
    import logging

    logging.disable(logging.WARNING)
    from lm_eval import simple_evaluate

    import lm_eval_bias

    import lm_eval.evaluator

    phases: dict = {}
    process_results = lm_eval.evaluator._process_results  # lm-eval's aggregation step (the task's summaries)

    def timed_process_results(*args, **kwargs):
        phases["peak_rss_before_aggregation_mb"] = round(peak_rss_mb())
        t0, c0 = time.perf_counter(), cpu_s()
        out = process_results(*args, **kwargs)
        phases["aggregation_s"], phases["aggregation_cpu_s"] = round(time.perf_counter() - t0, 2), round(cpu_s() - c0, 2)
        return out

    lm_eval.evaluator._process_results = timed_process_results
    rss_start = peak_rss_mb()
    t, cpu = time.perf_counter(), cpu_s()
    results = simple_evaluate(model="bias-probe", tasks=[task], bootstrap_iters=0, log_samples=log_samples, limit=limit,
                              task_manager=lm_eval_bias.task_manager(metadata={"pairs_per_identity": pairs_per_identity}))
    wall, cpu = time.perf_counter() - t, cpu_s() - cpu
    docs = results["n-samples"][task]["effective"]
    valid = results["results"][task]["valid_rate,none"]
    report = {"task": task, "log_samples": log_samples, "pairs_per_identity": pairs_per_identity, "limit": limit, "docs": docs,
              "peak_rss_mb": round(peak_rss_mb()),
              "rss_after_imports_mb": round(rss_start), "wall_s": round(wall, 1),
              "ms_per_doc": round(wall / docs * 1e3, 2), "cpu_ms_per_doc": round(cpu / docs * 1e3, 2),
              "valid_rate": valid, **phases}
    if log_samples:  # the samples file as lm-eval writes it (one JSON line per doc), per doc
        total = metric = response = metric_max = 0
        for sample in results["samples"][task]:
            total += len(json.dumps(sample, default=str, ensure_ascii=False).encode()) + 1
            entries = (len(json.dumps({k: sample[k] for k in sample["metrics"]}, ensure_ascii=False).encode())
                       + len(json.dumps(sample["metrics"]).encode()))
            metric, metric_max = metric + entries, max(metric_max, entries)
            response += len(json.dumps([sample["resps"], sample["filtered_resps"]], default=str).encode())
        report.update({"samples_bytes_per_doc": round(total / docs), "metric_bytes_per_doc": round(metric / docs),
                       "metric_bytes_max": metric_max,
                       "samples_bytes_per_doc_beyond_response": round((total - response) / docs)})
    from lm_eval_bias.vignette import tasks as vignette

    pairs = getattr(vignette, "pair_images_stats", None)  # composed-pair pool (absent before the pooled pairs)
    if pairs is not None:
        report.update(pairs())
    return report


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", default="2000,16000,100000",
                        help="comma-separated doc counts (rounded to whole draws per identity: 1,974 docs each)")
    parser.add_argument("--task", default=TASK, help="vignette_decision (default) or another vignette_* task")
    parser.add_argument("--image-size", type=int, default=64)
    parser.add_argument("--lists", default=None, help="real list folder (default: synthetic lists of the real sizes)")
    parser.add_argument("--workdir", default=None, help="reuse/keep the built dataset here")
    parser.add_argument("--json", default=None)
    parser.add_argument("--no-log-samples", action="store_true", help="run without --log_samples (a real run keeps them)")
    parser.add_argument("--limit", type=int, default=None, help="evaluate the first N docs only (bytes per doc of a large task)")
    parser.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)  # child: pairs_per_identity
    args = parser.parse_args(argv)

    if args.one is not None:  # child process: one run, JSON on the last line of stdout
        print(json.dumps(run_one(Path(args.workdir), args.one, args.task, not args.no_log_samples, args.limit)), flush=True)
        return 0

    work = Path(args.workdir or tempfile.mkdtemp(prefix="vignette-bench-"))
    report: dict = {"workdir": str(work), **build(work, args.lists, args.image_size), "runs": []}
    per_doc_draw = IDENTITIES * DECISION_QUESTIONS  # docs per draw per identity (decision paradigms)
    for target in (int(x) for x in args.docs.split(",") if x.strip()):
        draws = max(1, round(target / per_doc_draw))
        flags = (["--no-log-samples"] if args.no_log_samples else []) + (["--limit", str(args.limit)] if args.limit else [])
        proc = subprocess.run([sys.executable, __file__, "--workdir", str(work), "--one", str(draws), "--task", args.task, *flags],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            print(proc.stderr[-3000:], file=sys.stderr)
            report["runs"].append({"pairs_per_identity": draws, "error": f"exit {proc.returncode}"})
            continue
        run = json.loads(proc.stdout.strip().splitlines()[-1])
        report["runs"].append(run)
        print(f"  {run['task']}: {run['docs']:>7,} docs: peak RSS {run['peak_rss_mb']:>6,} MB, {run['ms_per_doc']:.2f} ms/doc wall, "
              f"{run['cpu_ms_per_doc']:.2f} ms/doc CPU ({run['wall_s']} s); before aggregation {run['peak_rss_before_aggregation_mb']:,} MB, "
              f"aggregation {run['aggregation_cpu_s']} s CPU; samples {run.get('samples_bytes_per_doc', '-')} B/doc, of which "
              f"metric entries {run.get('metric_bytes_per_doc', '-')} B (max {run.get('metric_bytes_max', '-')} B), "
              f"{run.get('samples_bytes_per_doc_beyond_response', '-')} B beyond the response", flush=True)
    print("\n| docs | peak RSS (MB) | peak RSS before aggregation (MB) | ms/doc (wall) | ms/doc (CPU) | aggregation CPU (s) |"
          "\n|---:|---:|---:|---:|---:|---:|")
    for run in report["runs"]:
        if "error" not in run:
            print(f"| {run['docs']:,} | {run['peak_rss_mb']:,} | {run['peak_rss_before_aggregation_mb']:,} | {run['ms_per_doc']:.2f} | "
                  f"{run['cpu_ms_per_doc']:.2f} | {run['aggregation_cpu_s']} |")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
