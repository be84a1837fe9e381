"""lm-eval-bias: social-bias audits of vision-language models as lm-evaluation-harness tasks."""

from __future__ import annotations

from pathlib import Path

__version__ = "0.1.0"


def tasks_dir() -> Path:
    """Absolute path of the folder holding the plugin's task YAMLs (for ``lm_eval --include_path``)."""
    import lm_eval_bias.task_yamls as task_yamls

    return Path(task_yamls.__file__).resolve().parent


def task_manager(include_defaults: bool = False, include_path=None, **kwargs):
    """A lm-eval ``TaskManager`` that knows the plugin's tasks.

    ``include_defaults=False`` (the default here) skips indexing lm-eval's ~14k built-in tasks,
    which takes ~13 s; pass True to mix plugin and built-in tasks. ``include_path`` adds further
    task folders after the plugin's own. Plugin models (``bias-probe``) are registered too.
    """
    from lm_eval.tasks import TaskManager

    from lm_eval_bias.core.registration import register_plugin

    register_plugin()
    from lm_eval_bias.core.harness import harness_loads_plugin_tasks

    # a harness that reads the `lm_eval.tasks` entry point (PR #4015) indexes the folder itself
    paths: list = [] if harness_loads_plugin_tasks() else [tasks_dir()]
    if include_path:
        paths.extend(include_path if isinstance(include_path, (list, tuple)) else [include_path])
    return TaskManager(include_path=[str(p) for p in paths], include_defaults=include_defaults, **kwargs)
