"""``lm-eval-bias demo``: build a small synthetic FOCUS set and run REFLECT on it, offline.

The model is ``bias-probe`` (a planted preference: White > Asian > Latino > Middle Eastern > Black,
men over women), so the printed table shows what the metrics report for a known bias. Everything
runs through the real ``lm-eval`` CLI; nothing is downloaded.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path


def build_demo_data(root: Path, templates: int = 2, size: int = 128, bios_per_occupation: int = 3) -> Path:
    """Synthetic FOCUS images and biographies, built with the real builders into ``root``."""
    from datasets_builder.focus import build_focus
    from datasets_builder.focus_bios import build_focus_bios
    from lm_eval_bias.focus_schema import TEMPLATE_IDS
    from lm_eval_bias.testing.synthetic_focus import make_synthetic_bios, make_synthetic_focus

    source = root / "source"
    data_dir = root / "data"
    if not (data_dir / "focus").is_dir():
        make_synthetic_focus(source / "focus", templates=TEMPLATE_IDS[:templates], size=(size, size))
        build_focus(source / "focus", data_dir / "focus")
    if not (data_dir / "focus_bios").is_dir():
        bios = make_synthetic_bios(source / "bios.jsonl", per_occupation=bios_per_occupation)
        build_focus_bios(bios, data_dir / "focus_bios", per_occupation=bios_per_occupation)
    return data_dir


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lm-eval-bias demo", description=__doc__)
    parser.add_argument("--output", default="demo_out", help="folder for data and results (default: demo_out)")
    parser.add_argument("--tasks", default="reflect", help="tasks or groups to run (default: reflect)")
    parser.add_argument("--model_args", default="refusal_rate=0.05,position_bias=0.1,salary_noise=3000",
                        help="bias-probe settings (see lm_eval_bias.models.bias_probe)")
    args = parser.parse_args(argv)
    root = Path(args.output).resolve()
    data_dir = build_demo_data(root)
    os.environ["LM_EVAL_BIAS_DATA_DIR"] = str(data_dir)
    os.environ.setdefault("LM_EVAL_BIAS_BOOTSTRAP_ITERS", "200")
    from lm_eval_bias.cli import run_harness

    run_harness([
        "run", "--model", "bias-probe", "--model_args", args.model_args, "--tasks", args.tasks,
        "--output_path", str(root / "results"), "--log_samples",
    ])
    print(f"\nData: {data_dir}\nResults and samples: {root / 'results'}")
    return 0
