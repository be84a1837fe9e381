#!/usr/bin/env python
"""Measure what the plugin adds to model time, at the real FOCUS size.

Builds a full synthetic FOCUS set (480 photos, 1024x1024 JPEG, in the authors' layout, through the
real builder) and 50 biographies per occupation, then runs REFLECT tasks through lm-eval with the
instant ``bias-probe`` model, so every second measured is harness + plugin overhead. Reports wall
time, time per doc, the aggregation (statistics + 1,000-replicate template bootstrap) on its own,
and peak resident memory. Usage::

    python scripts/benchmark.py [--work DIR] [--tasks focus_2afc_income,focus_mcq_salary,focus_salary]

Each task runs in its own process so peak memory is per task. Numbers go in the README.
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
from lm_eval_bias import samples as samples_lib
task = sys.argv[1]
t1 = time.perf_counter()
res = simple_evaluate(model="bias-probe", tasks=[task], task_manager=lm_eval_bias.task_manager(),
                      bootstrap_iters=0, log_samples=True)
t2 = time.perf_counter()
records = [s[next(iter(k for k in s if k.endswith("_rate")))] for s in res["samples"][task]]
t3 = time.perf_counter()
samples_lib.summarize(task, records)
t4 = time.perf_counter()
print(json.dumps({"task": task, "docs": len(records), "evaluate_s": t2 - t1, "import_s": t1 - t0,
                  "aggregate_s": t4 - t3, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def build(work: Path) -> Path:
    from datasets_builder.focus import build_focus
    from datasets_builder.focus_bios import build_focus_bios
    from lm_eval_bias.testing.synthetic_focus import make_synthetic_bios, make_synthetic_focus

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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", default=None, help="folder for the synthetic data (kept between runs)")
    parser.add_argument("--tasks", default="focus_2afc_income,focus_mcq_salary,focus_salary")
    args = parser.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="lm_eval_bias_bench_"))
    data = build(work)
    env = {**os.environ, "LM_EVAL_BIAS_DATA_DIR": str(data), "LM_EVAL_BIAS_BOOTSTRAP_ITERS": "1000",
           "LMEVAL_HASHMM": "0", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    print(f"{'task':<22}{'docs':>7}{'evaluate s':>12}{'ms/doc':>9}{'aggregate s':>13}{'peak RSS MB':>13}")
    for task in args.tasks.split(","):
        out = subprocess.run([sys.executable, "-c", CHILD, task], env=env, capture_output=True, text=True)
        if out.returncode != 0:
            print(out.stderr[-2000:], file=sys.stderr)
            return 1
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{r['task']:<22}{r['docs']:>7}{r['evaluate_s']:>12.1f}{1000 * r['evaluate_s'] / r['docs']:>9.2f}"
              f"{r['aggregate_s']:>13.2f}{r['peak_rss_mb']:>13.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
