"""Plugin discovery: the drop-in CLI, tasks-dir for the plain harness CLI, the entry point, the
Python API, and model registration that neither hides built-ins nor registers twice."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import lm_eval_bias
from lm_eval_bias.tasks.generate_yamls import render

REFLECT_TASKS = {
    "focus_2afc_income", "focus_2afc_education", "focus_2afc_safety",
    "focus_mcq_salary", "focus_mcq_education", "focus_salary",
}
REFLECT_GROUPS = {"reflect", "focus_2afc", "focus_mcq"}
CF_VQA_TASKS = {"cf_vqa", "cf_vqa_baep", "cf_vqa_hner", "cf_vqa_hner_targeted"}
FACT_OR_FAIR_TASKS = {f"fact_or_fair_objective_{a}" for a in ("gender", "race")} | {
    f"fact_or_fair_subjective_{c}_{a}" for c in ("baseline", "representativeness", "attribution", "ingroup")
    for a in ("gender", "race")
}
BIN = Path(sys.executable).parent


def test_committed_task_yamls_match_the_generator():
    root = lm_eval_bias.tasks_dir()
    for rel, content in render().items():
        assert (root / rel).read_text(encoding="utf-8") == content, f"{rel} is stale: run python -m lm_eval_bias.tasks.generate_yamls"
    generated = {str(p.relative_to(root)) for p in root.rglob("*.yaml")}
    assert generated == set(render()), "task_yamls/ holds YAMLs the generator does not write"


def test_task_manager_lists_plugin_tasks_and_groups():
    tm = lm_eval_bias.task_manager()
    assert REFLECT_TASKS | FACT_OR_FAIR_TASKS | CF_VQA_TASKS <= set(tm.all_subtasks)
    assert REFLECT_GROUPS | {"fact_or_fair", "cf_vqa_all"} <= set(tm.all_groups)


def test_registration_is_idempotent_and_keeps_builtin_models():
    from lm_eval.api.registry import get_model

    from lm_eval_bias.models.bias_probe import BiasProbeLM
    from lm_eval_bias.core.registration import register_plugin

    register_plugin()
    register_plugin()
    assert get_model("bias-probe") is BiasProbeLM
    assert get_model("hf-multimodal").__name__ == "HFMultimodalLM"
    assert get_model("dummy").__name__ == "DummyLM"


def test_registering_in_a_fresh_interpreter_keeps_builtins():
    code = (
        "from lm_eval_bias.core.registration import register_plugin; register_plugin(); register_plugin();"
        "from lm_eval.api.registry import get_model;"
        "print(get_model('bias-probe').__name__, get_model('hf').__name__, get_model('vllm-vlm').__name__ if False else '')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split()[:2] == ["BiasProbeLM", "HFLM"]


def test_tasks_dir_command_prints_the_task_folder():
    out = subprocess.run([BIN / "lm-eval-bias", "tasks-dir"], capture_output=True, text=True, check=True).stdout.strip()
    assert Path(out) == lm_eval_bias.tasks_dir()
    assert (Path(out) / "reflect" / "focus_2afc_income.yaml").is_file()


def test_entry_point_is_declared_in_pr_4015_format():
    eps = importlib.metadata.entry_points(group="lm_eval.tasks")
    ours = [ep for ep in eps if ep.name == "lm_eval_bias"]
    assert len(ours) == 1
    module = ours[0].load()
    assert Path(module.__file__).resolve().parent == lm_eval_bias.tasks_dir()


@pytest.mark.slow
def test_drop_in_cli_ls_tasks_lists_plugin_and_builtin_tasks():
    out = subprocess.run([BIN / "lm-eval-bias", "ls", "tasks"], capture_output=True, text=True, check=True,
                         env={**os.environ, "HF_HUB_OFFLINE": "1"}).stdout
    for task in REFLECT_TASKS:
        assert task in out
    assert "hellaswag" in out  # lm-eval's own tasks are still there


def test_plugin_only_runs_skip_the_builtin_task_index():
    from lm_eval_bias.cli import _only_plugin_tasks

    assert _only_plugin_tasks(["focus_2afc_income", "reflect", "fact_or_fair", "cf_vqa_all"])
    assert _only_plugin_tasks("focus_mcq_salary,cf_vqa")
    assert not _only_plugin_tasks(["focus_mcq_salary", "hellaswag"])
    assert not _only_plugin_tasks(None)
    code = (
        "from lm_eval_bias.cli import _skip_builtin_task_index as s; s(); s();"
        "from lm_eval.tasks import TaskManager as T; import lm_eval_bias;"
        "p=str(lm_eval_bias.tasks_dir());"
        "a=T(include_path=p).all_tasks; b=T(include_path=p, include_defaults=True).all_tasks;"
        "print('focus_salary' in a, 'hellaswag' in a, 'hellaswag' in b)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True", "False", "True"]
