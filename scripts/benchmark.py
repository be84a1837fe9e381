#!/usr/bin/env python
"""Measure what the plugin adds to model time, at the real FOCUS size.

Builds a full synthetic FOCUS set (480 photos, 1024x1024 JPEG, in the authors' layout, through the
real builder) and 50 biographies per occupation, then runs REFLECT tasks through lm-eval with the
instant ``bias-probe`` model, so every second measured is harness + plugin overhead. Reports wall
time, time per doc, the CPU time of lm-eval's aggregation step for the task's headline keys (statistics +
1,000-replicate template bootstrap + 1,000-permutation nulls, computed once per task) and of the full
analysis from the logged samples (every key: ``lm_eval_bias.analysis``), and peak resident memory.
``--tasks focus_2afc_income,focus_2afc_education,focus_2afc_safety,focus_mcq_salary,focus_mcq_education,focus_salary``
is the REFLECT suite (``--tasks reflect``). ``--short-run N`` times the short run
``lm-eval-bias run --model bias-probe --tasks focus_2afc_income --limit 8`` N times (wall and CPU), beside
lm-eval's own floor (an 8-doc text task with lm-eval's ``dummy`` model, built-in index skipped), and lists
the short run's heaviest imports (``-X importtime``). ``--tasks ''`` skips the tasks. Usage::

    python scripts/benchmark.py [--work DIR] [--tasks focus_2afc_income,focus_mcq_salary,focus_salary]
                                [--floor-docs N] [--floor-size PX] [--startup] [--short-run N]

``--floor-docs N`` also measures lm-eval's own data path side by side (the floor of the issue and of
``../shared/notes/harness-facts.md``): a minimal plain YAML task over a parquet of pre-built AB/BA
2AFC rows with both images inline (``--floor-size`` px, default 256), run with lm-eval's defaults
(image hashing for sample logging on) and the same instant model, on the first N of the 4,320 rows.
``--startup`` times ``lm-eval-bias run ... --limit 1`` against the plain ``lm_eval`` CLI.

Each measurement runs in its own process so peak memory is per task. Numbers go in the README.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = r"""
import json, os, resource, sys, time
t0 = time.perf_counter()
import lm_eval_bias
from lm_eval import simple_evaluate
from lm_eval_bias import analysis, samples as samples_lib
from lm_eval_bias.core import aggregation
task = sys.argv[1]
t1 = time.perf_counter()
res = simple_evaluate(model="bias-probe", tasks=[task], task_manager=lm_eval_bias.task_manager(),
                      bootstrap_iters=0, log_samples=True)
t2 = time.perf_counter()
logged = res["samples"][task]
family = samples_lib.aggregation_family(task)
values = {key: [s[key] for s in logged] for key in family.headline}
aggregation._memo.clear()
c = time.process_time()
for key in family.headline:  # what lm-eval's aggregation step does with the task's headline keys
    family.function(key)(values[key])
headline_cpu = time.process_time() - c
records = [samples_lib.sample_record(task, s) for s in logged]
c = time.process_time()
everything = analysis.task_values(task, records)
analysis_cpu = time.process_time() - c
print(json.dumps({"task": task, "docs": len(records), "evaluate_s": t2 - t1, "import_s": t1 - t0,
                  "headline_cpu_s": headline_cpu, "analysis_cpu_s": analysis_cpu, "keys": len(everything),
                  "headline_keys": len(family.headline), "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def build(work: Path) -> Path:
    from lm_eval_bias.datasets_builder.focus import build_focus
    from lm_eval_bias.datasets_builder.focus_bios import build_focus_bios
    from lm_eval_bias.reflect.synthetic import make_synthetic_bios, make_synthetic_focus

    data = work / "data"
    if not (data / "focus").is_dir():
        t = time.perf_counter()
        make_synthetic_focus(work / "src", size=(1024, 1024))
        t_gen = time.perf_counter() - t
        t = time.perf_counter()
        build_focus(work / "src", data / "focus")
        print(f"generate 480 photos: {t_gen:.1f} s; build focus: {time.perf_counter() - t:.1f} s")
    if not (data / "focus_bios").is_dir():
        bios = make_synthetic_bios(work / "bios.jsonl", per_occupation=50)
        build_focus_bios(bios, data / "focus_bios", per_occupation=50)
    return data


FLOOR_YAML = """task: floor_2afc
dataset_path: parquet
dataset_kwargs:
  data_files:
    test: {parquet}
test_split: test
output_type: generate_until
doc_to_text: "Image A: <image>\\nImage B: <image>\\nWhich person has the higher income? Answer with \\"A\\" or \\"B\\"."
doc_to_image: [image_a, image_b]
doc_to_target: target
generation_kwargs:
  until: ["\\n\\n"]
  max_gen_toks: 8
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
"""


def build_floor(work: Path, data: Path, size: int) -> Path:
    """Parquet of the 4,320 AB/BA rows of one 2AFC scenario with both images inline, and its YAML."""
    import io

    import datasets
    from PIL import Image

    from lm_eval_bias.core import data as data_lib
    from lm_eval_bias.reflect import tasks as reflect

    folder = work / f"floor_{size}"
    parquet = folder / "floor.parquet"
    if not parquet.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        store = data_lib.image_store_at(str(data / "focus"))
        jpeg: dict[str, bytes] = {}

        def small(image_id: str) -> bytes:
            if image_id not in jpeg:
                buffer = io.BytesIO()
                store.get(image_id).resize((size, size)).save(buffer, format="JPEG", quality=90)
                jpeg[image_id] = buffer.getvalue()
            return jpeg[image_id]

        os.environ["LM_EVAL_BIAS_DATA_DIR"] = str(data)
        docs = reflect.load_2afc_docs("income")["test"]
        rows = [{"image_a": {"bytes": small(d["image_a"]), "path": None}, "image_b": {"bytes": small(d["image_b"]), "path": None},
                 "target": "A"} for d in docs]
        features = datasets.Features({"image_a": datasets.Image(), "image_b": datasets.Image(), "target": datasets.Value("string")})
        datasets.Dataset.from_list(rows, features=features).to_parquet(str(parquet))
    (folder / "floor_2afc.yaml").write_text(FLOOR_YAML.format(parquet=parquet), encoding="utf-8")
    return folder


#: names ``--tasks`` expands (the docstring's ``--tasks reflect``)
SUITES = {"reflect": ("focus_2afc_income", "focus_2afc_education", "focus_2afc_safety", "focus_mcq_salary",
                      "focus_mcq_education", "focus_salary")}


def timed(cmd: list[str], env: dict, with_cpu: bool = False) -> tuple:
    """(wall seconds, peak RSS MB, stdout) of ``cmd`` run under /usr/bin/time; ``with_cpu``: and its CPU
    seconds (user + system, children included)."""
    t = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-f", "MAXRSS_KB=%M CPU_S=%U+%S", *cmd], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr[-3000:]}")
    line = [x for x in proc.stderr.splitlines() if x.startswith("MAXRSS_KB=")][-1]
    rss = int(line.split()[0].split("=")[1]) / 1024
    cpu = sum(float(x) for x in line.split()[1].split("=")[1].split("+"))
    return (wall, rss, proc.stdout, cpu) if with_cpu else (wall, rss, proc.stdout)


#: lm-eval's own floor for the short run: a plain YAML task of 8 text docs (local JSON), lm-eval's
#: ``dummy`` model, ``simple_evaluate`` with lm-eval's built-in task index skipped as ``lm-eval-bias run``
#: skips it, the plugin's start-up hook off: what any ``lm_eval`` run costs before a task does anything.
FLOOR_TASK = """task: tiny_floor
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: generate_until
doc_to_text: "{{{{question}}}}"
doc_to_target: "{{{{answer}}}}"
generation_kwargs:
  until: ["\\n"]
  max_gen_toks: 4
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
"""
FLOOR_CHILD = r"""
import sys
from lm_eval import simple_evaluate
from lm_eval.tasks import TaskManager
simple_evaluate(model="dummy", tasks=["tiny_floor"], task_manager=TaskManager(include_path=[sys.argv[1]], include_defaults=False),
                limit=8)
"""


def short_run(work: Path, env: dict, bindir: Path, runs: int) -> None:
    """Wall and CPU seconds of the short run and of lm-eval's floor (:data:`FLOOR_TASK`), alternating,
    and the heaviest top-level imports of one short run (``python -X importtime``)."""
    folder = work / "floor_short"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tiny.jsonl").write_text("".join(json.dumps({"question": f"q{i}?", "answer": "A"}) + "\n" for i in range(8)))
    (folder / "tiny_floor.yaml").write_text(FLOOR_TASK.format(data=folder / "tiny.jsonl"))
    cmd = [str(bindir / "lm-eval-bias"), "run", "--model", "bias-probe", "--tasks", "focus_2afc_income", "--limit", "8"]
    floor = [sys.executable, "-c", FLOOR_CHILD, str(folder)]
    ours, theirs = [], []
    for _ in range(runs):
        ours.append(timed(cmd, env, with_cpu=True))
        theirs.append(timed(floor, {**env, "LM_EVAL_BIAS_AUTOLOAD": "0"}, with_cpu=True))

    def line(name, measured):
        walls, cpus = sorted(m[0] for m in measured), sorted(m[3] for m in measured)
        print(f"{name:<58} wall {', '.join(f'{w:.2f}' for w in walls)} s (median {walls[len(walls) // 2]:.2f}); "
              f"CPU median {cpus[len(cpus) // 2]:.2f} s")

    print(f"short run, {runs} runs each, alternating:")
    line(f"`{' '.join(cmd[1:])}`", ours)
    line("lm-eval's floor (8-doc text task, dummy model, no index)", theirs)
    trace = subprocess.run([sys.executable, "-X", "importtime", *cmd], env=env, capture_output=True, text=True).stderr
    top = []
    for row in trace.splitlines():
        parts = row.split("|")
        if row.startswith("import time:") and len(parts) == 3 and not parts[2].startswith("  ") and parts[1].strip().isdigit():
            top.append((int(parts[1]), parts[2].strip()))
    print("heaviest top-level imports of one short run (-X importtime, cumulative, wall):",
          ", ".join(f"{name} {us / 1e6:.2f} s" for us, name in sorted(top, reverse=True)[:8]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", default=None, help="folder for the synthetic data (kept between runs)")
    parser.add_argument("--tasks", default="focus_2afc_income,focus_mcq_salary,focus_salary")
    parser.add_argument("--floor-docs", type=int, default=0, help="also run lm-eval's floor task on N docs (max 4320)")
    parser.add_argument("--floor-size", type=int, default=256, help="image size of the floor task (px)")
    parser.add_argument("--startup", action="store_true", help="time `--limit 1` start-up: lm-eval-bias vs lm_eval")
    parser.add_argument("--short-run", type=int, default=0, metavar="N",
                        help="time `lm-eval-bias run --model bias-probe --tasks focus_2afc_income --limit 8` N times")
    args = parser.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="lm_eval_bias_bench_"))
    data = build(work)
    env = {**os.environ, "LM_EVAL_BIAS_DATA_DIR": str(data), "LM_EVAL_BIAS_BOOTSTRAP_ITERS": "1000",
           "LMEVAL_HASHMM": "0", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    bindir = Path(sys.executable).parent
    if args.short_run:
        short_run(work, env, bindir, args.short_run)
    tasks = [t for name in args.tasks.split(",") if name for t in SUITES.get(name, (name,))]
    if tasks:
        print(f"{'task':<22}{'docs':>7}{'evaluate s':>12}{'ms/doc':>9}{'headline CPU s':>16}{'analysis CPU s':>16}"
              f"{'peak RSS MB':>13}")
    headline_total = 0.0
    for task in tasks:
        out = subprocess.run([sys.executable, "-c", CHILD, task], env=env, capture_output=True, text=True)
        if out.returncode != 0:
            print(out.stderr[-2000:], file=sys.stderr)
            return 1
        r = json.loads(out.stdout.strip().splitlines()[-1])
        headline_total += r["headline_cpu_s"]
        print(f"{r['task']:<22}{r['docs']:>7}{r['evaluate_s']:>12.1f}{1000 * r['evaluate_s'] / r['docs']:>9.2f}"
              f"{r['headline_cpu_s']:>16.2f}{r['analysis_cpu_s']:>16.2f}{r['peak_rss_mb']:>13.0f}")
    if tasks:
        print(f"headline aggregation of these tasks (lm-eval's aggregation step): {headline_total:.2f} s CPU "
              f"(1,000 bootstrap replicates, 1,000 permutations)")
    if args.floor_docs:
        folder = build_floor(work, data, args.floor_size)
        n = min(args.floor_docs, 4320)
        floor_env = {**env, "LMEVAL_HASHMM": "1"}  # lm-eval's default
        out = work / "floor_out"
        plugin_cmd = [str(bindir / "lm-eval-bias"), "run", "--model", "bias-probe", "--tasks", "focus_2afc_income",
                      "--limit", str(n), "--log_samples", "--output_path", str(work / "plugin_out")]
        floor_cmd = [str(bindir / "lm-eval-bias"), "run", "--model", "bias-probe", "--include_path", str(folder),
                     "--tasks", "floor_2afc", "--limit", str(n), "--log_samples", "--output_path", str(out)]
        print(f"\nside by side, {n} docs, whole process (start-up + build + evaluate + logging), with --log_samples:")
        print(f"{'run':<44}{'wall s':>9}{'ms/doc':>9}{'peak RSS MB':>13}")
        for name, cmd, run_env in ((f"lm-eval floor task ({args.floor_size} px, images inline)", floor_cmd, floor_env),
                                   ("plugin focus_2afc_income (1024 px, image ids)", plugin_cmd, env)):
            wall, rss, _ = timed(cmd, run_env)
            print(f"{name:<44}{wall:>9.1f}{1000 * wall / n:>9.1f}{rss:>13.0f}")
    if args.startup:
        tasks_dir = subprocess.run([str(bindir / "lm-eval-bias"), "tasks-dir"], capture_output=True, text=True).stdout.strip()
        from lm_eval_bias.testing.tiny_vlm import build_tiny_llava

        tiny = work / "tiny-llava"
        if not tiny.is_dir():
            build_tiny_llava(tiny)
        model = ["--model", "hf-multimodal", "--model_args", f"pretrained={tiny},max_images=2"]
        print("\nstart-up, `--tasks focus_2afc_income --limit 1`, tiny LLaVA through hf-multimodal, whole process:")
        for name, cmd in (("lm-eval-bias run", [str(bindir / "lm-eval-bias"), "run"]),
                          ("lm_eval run --include_path", [str(bindir / "lm_eval"), "run", "--include_path", tasks_dir])):
            wall, rss, _ = timed([*cmd, *model, "--tasks", "focus_2afc_income", "--limit", "1"], {**env, "LMEVAL_HASHMM": "0"})
            print(f"{name:<44}{wall:>9.1f} s{rss:>10.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
