"""What the installed lm-eval does by itself with installed plugins, so the plugin never adds twice.

The package declares both entry-point groups upstream lm-eval uses or proposes (``setup.cfg``):

- ``lm_eval.models`` (merged upstream in PR #4013, after 0.4.13): ``name = "module:Class"`` per
  backend, so a harness with model plugins resolves ``--model bias-probe`` with no wrapper;
- ``lm_eval.tasks`` (proposed in PR #4015): ``lm_eval_bias = "lm_eval_bias.task_yamls"``, a module
  whose folder holds the task YAMLs, so such a harness indexes the tasks with no ``--include_path``.

lm-eval 0.4.13 reads neither; the wrapper CLI (``lm-eval-bias run``) and
:func:`lm_eval_bias.task_manager` then register the models and add the task folder themselves. Once
the harness loads a group itself, they leave it alone: :func:`harness_loads_plugin_tasks` and
:func:`harness_loads_plugin_models` detect that by looking for the group name in the harness's own
task-manager and registry modules (a text search, cheap and import-free; a harness that loads plugins
must name its entry-point group somewhere there).
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

MODELS_GROUP = "lm_eval.models"
TASKS_GROUP = "lm_eval.tasks"


def _harness_sources(*modules: str) -> str:
    text = []
    for name in modules:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is None:
            continue
        locations = list(spec.submodule_search_locations or [])
        files = [Path(spec.origin)] if spec.origin and spec.origin.endswith(".py") else []
        for folder in locations:  # a package: its own top-level modules only (not the task YAML folders)
            files += sorted(Path(folder).glob("*.py"))
        for file in files:
            try:
                text.append(file.read_text(encoding="utf-8", errors="replace"))
            except OSError:
                continue
    return "\n".join(text)


def _names_group(source: str, group: str) -> bool:
    """The source reads entry points and names ``group`` as a string literal."""
    return "entry_points" in source and (f'"{group}"' in source or f"'{group}'" in source)


@functools.lru_cache(maxsize=1)
def harness_loads_plugin_tasks() -> bool:
    """True when the installed lm-eval indexes ``lm_eval.tasks`` entry points itself (PR #4015)."""
    return _names_group(_harness_sources("lm_eval.tasks", "lm_eval.api.registry", "lm_eval.evaluator"), TASKS_GROUP)


@functools.lru_cache(maxsize=1)
def harness_loads_plugin_models() -> bool:
    """True when the installed lm-eval resolves ``lm_eval.models`` entry points itself (PR #4013)."""
    return _names_group(_harness_sources("lm_eval.api.registry", "lm_eval.models"), MODELS_GROUP)
