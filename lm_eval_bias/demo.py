"""``lm-eval-bias demo``: build a small synthetic FOCUS set and run REFLECT on it, offline.

The model is ``bias-probe`` (a planted preference: White > Asian > Latino > Middle Eastern > Black,
men over women), so the printed table shows what the metrics report for a known bias. Everything
runs through the real ``lm-eval`` CLI; nothing is downloaded.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable


def build_demo_data(root: Path, templates: int = 2, size: int = 128, bios_per_occupation: int = 3) -> Path:
    """Synthetic FOCUS images and biographies, built with the real builders into ``root``."""
    from lm_eval_bias.datasets_builder.focus import build_focus
    from lm_eval_bias.datasets_builder.focus_bios import build_focus_bios
    from lm_eval_bias.reflect.schema import TEMPLATE_IDS
    from lm_eval_bias.reflect.synthetic import make_synthetic_bios, make_synthetic_focus

    source = root / "source"
    data_dir = root / "data"
    if not (data_dir / "focus").is_dir():
        make_synthetic_focus(source / "focus", templates=TEMPLATE_IDS[:templates], size=(size, size))
        build_focus(source / "focus", data_dir / "focus")
    if not (data_dir / "focus_bios").is_dir():
        bios = make_synthetic_bios(source / "bios.jsonl", per_occupation=bios_per_occupation)
        build_focus_bios(bios, data_dir / "focus_bios", per_occupation=bios_per_occupation)
    return data_dir


def make_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """``parser`` (or a new one) set up as ``lm-eval-bias demo``."""
    parser = parser or argparse.ArgumentParser(prog="lm-eval-bias demo")
    parser.description = __doc__
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--output", default="demo_out", help="folder for data and results (default: demo_out)")
    parser.add_argument("--tasks", default="reflect", help="tasks or groups to run (default: reflect)")
    parser.add_argument("--model_args", default="refusal_rate=0.05,position_bias=0.1,salary_noise=3000",
                        help="bias-probe settings (see lm_eval_bias.models.bias_probe)")
    return parser


@dataclass(frozen=True)
class DemoRun:
    """What :func:`prepare` made: the lm-eval command line to run, and where data and results go."""

    harness_argv: list[str]
    data_dir: Path
    results_dir: Path

    def summary(self) -> str:
        return f"\nData: {self.data_dir}\nResults and samples: {self.results_dir}"


def prepare(argv: list[str] | None = None) -> DemoRun:
    """Parse ``lm-eval-bias demo`` options, build the synthetic data, point ``LM_EVAL_BIAS_DATA_DIR``
    at it, and return the ``run`` command line. Running it is the caller's: this module does not
    import :mod:`lm_eval_bias.cli` (which imports this one)."""
    args = make_parser().parse_args(argv)
    root = Path(args.output).resolve()
    data_dir = build_demo_data(root)
    os.environ["LM_EVAL_BIAS_DATA_DIR"] = str(data_dir)
    os.environ.setdefault("LM_EVAL_BIAS_BOOTSTRAP_ITERS", "200")
    results = root / "results"
    harness_argv = ["run", "--model", "bias-probe", "--model_args", args.model_args, "--tasks", args.tasks,
                    "--output_path", str(results), "--log_samples"]
    return DemoRun(harness_argv, data_dir, results)


def main(argv: list[str] | None, run_harness: Callable[[list[str]], Any]) -> int:
    """``lm-eval-bias demo``: :func:`prepare`, then ``run_harness`` (``lm_eval_bias.cli.run_harness``)."""
    demo = prepare(argv)
    run_harness(demo.harness_argv)
    print(demo.summary())
    return 0
