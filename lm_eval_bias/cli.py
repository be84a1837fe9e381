"""``lm-eval-bias``: a drop-in for the ``lm_eval`` command with the plugin built in.

- ``lm-eval-bias run|ls|validate ...`` are lm-eval's own sub-commands and flags, with the plugin's
  task folder added to ``--include_path`` (a user's own ``--include_path`` is kept as well) and the
  plugin's models (``bias-probe``) registered. As with ``lm_eval``, a bare ``lm-eval-bias --model ...``
  means ``run``.
- ``lm-eval-bias tasks-dir`` prints the plugin's task folder, for the plain harness CLI:
  ``lm_eval --include_path "$(lm-eval-bias tasks-dir)" --tasks focus_2afc_income ...``.
- ``lm-eval-bias build <dataset> ...`` runs a dataset builder (``build --help`` lists them).
- ``lm-eval-bias score fact-or-fair-t2i --labels FILE`` scores text-to-image generations from
  face-attribute labels with the FACT-OR-FAIR metrics.
- ``lm-eval-bias report RUN_DIR ... --output DIR`` writes HTML bias cards, figures, tables and a leaderboard.
- ``lm-eval-bias demo`` builds a small synthetic FOCUS set and runs REFLECT on the planted-bias
  ``bias-probe`` model, offline.

Unless ``LMEVAL_HASHMM`` is set, it is set to 0: lm-eval would otherwise PNG-encode every image of
every logged sample to hash it (measured 0.14 s per 1024-px photo-like image: about 20 min for the
8,640 image references of one 2AFC scenario).
Logged samples identify images by their FOCUS ``image_id`` in the doc instead.
"""

from __future__ import annotations

import argparse
import os
import sys

from lm_eval_bias import __version__, tasks_dir

_HARNESS_COMMANDS = ("run", "ls", "validate")


def _build_main(argv: list[str]) -> int:
    from datasets_builder.cli import add_build_subcommands

    parser = argparse.ArgumentParser(prog="lm-eval-bias build", description="Build a dataset in Hugging Face Hub layout.")
    subparsers = parser.add_subparsers(dest="dataset", metavar="DATASET", required=True)
    add_build_subcommands(subparsers)
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


def _with_plugin_tasks(include_path):
    """``--include_path`` value that adds the plugin's task folder to the user's (if any)."""
    ours = str(tasks_dir())
    if not include_path:
        return ours
    theirs = include_path if isinstance(include_path, list) else [include_path]
    return [ours] + [p for p in theirs if p != ours]


def run_harness(argv: list[str]) -> None:
    """Run lm-eval's CLI on ``argv`` with the plugin's tasks and models available."""
    os.environ.setdefault("LMEVAL_HASHMM", "0")
    from lm_eval.utils import setup_logging

    from lm_eval_bias.registration import register_plugin

    register_plugin()
    from lm_eval._cli import HarnessCLI

    setup_logging()
    saved = sys.argv
    sys.argv = ["lm-eval-bias", *argv]
    try:
        cli = HarnessCLI()
        args = cli.parse_args()
    finally:
        sys.argv = saved
    if hasattr(args, "include_path"):
        args.include_path = _with_plugin_tasks(args.include_path)
    if getattr(args, "command", None) == "run" and getattr(args, "model", None) and getattr(args, "tasks", None):
        from lm_eval_bias.guard import ImageBudgetError, check_image_budget

        tasks = args.tasks if isinstance(args.tasks, list) else str(args.tasks).split(",")
        try:
            check_image_budget(args.model, args.model_args, [t.strip() for t in tasks])
        except ImageBudgetError as exc:
            print(f"error: {exc}", file=sys.stderr)
            raise SystemExit(2) from None
    if getattr(args, "command", None) in ("run", "validate") and _only_plugin_tasks(getattr(args, "tasks", None)):
        _skip_builtin_task_index()
    cli.execute(args)


def _only_plugin_tasks(tasks) -> bool:
    """True when every requested task or group is one of the plugin's (then lm-eval's ~14k built-in
    task configs need not be indexed, which costs ~10 s at every start)."""
    if not tasks:
        return False
    from lm_eval_bias.guard import images_per_task

    names = tasks if isinstance(tasks, list) else str(tasks).split(",")
    known = images_per_task()
    return all(name.strip() in known for name in names)


def _skip_builtin_task_index() -> None:
    """Make this process's TaskManager skip lm-eval's built-in tasks unless a caller asks for them.

    lm-eval 0.4.13's CLI builds ``TaskManager(include_path=..., metadata=...)`` with no way to pass
    ``include_defaults``; we change only that default, in this process, for runs whose tasks are all
    the plugin's."""
    import functools

    from lm_eval.tasks import TaskManager

    original = TaskManager.__init__
    if getattr(original, "_lm_eval_bias_defaults_off", False):
        return

    @functools.wraps(original)
    def init(self, *args, include_defaults: bool = False, **kwargs):
        original(self, *args, include_defaults=include_defaults, **kwargs)

    init._lm_eval_bias_defaults_off = True  # type: ignore[attr-defined]
    TaskManager.__init__ = init


def _report_main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="lm-eval-bias report",
                                     description="HTML bias cards, figures, tables and a leaderboard from lm-eval output folders.")
    parser.add_argument("runs", nargs="+", help="lm-eval --output_path folders (results JSON + --log_samples files)")
    parser.add_argument("--output", required=True, help="report folder (index.html, figures/, tables/, leaderboard.*)")
    args = parser.parse_args(argv)
    from lm_eval_bias.report import build_report

    try:
        index = build_report(args.runs, args.output)
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {index}")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["tasks-dir"]:
        print(tasks_dir())
        return 0
    if argv[:1] == ["build"]:
        return _build_main(argv[1:])
    if argv[:2] == ["score", "fact-or-fair-t2i"]:
        from lm_eval_bias.t2i_scoring import main as t2i_main

        return t2i_main(argv[2:])
    if argv[:1] == ["report"]:
        return _report_main(argv[1:])
    if argv[:1] == ["demo"]:
        from lm_eval_bias.demo import main as demo_main

        return demo_main(argv[1:])
    if argv[:1] in (["--version"], ["version"]):
        print(f"lm-eval-bias {__version__}")
        return 0
    if not argv or argv[:1] in (["-h"], ["--help"]):
        print(__doc__.strip())
        print("\nlm-eval's own help follows.\n")
        run_harness(["--help"])
        return 0
    run_harness(argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
