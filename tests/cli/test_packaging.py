"""Packaging and the harness's plugin entry points: the wheel adds only the plugin's own namespace (and
the start-up hook's two files) to site-packages, both entry-point groups are declared in upstream's form, and the plugin never adds its
tasks or models a second time to a harness that loads them itself."""

from __future__ import annotations

import configparser
import importlib.metadata
import importlib.util
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import lm_eval_bias
from lm_eval_bias.core import harness
from lm_eval_bias.core.registration import PLUGIN_MODELS

ROOT = Path(__file__).resolve().parents[2]


def _setup_cfg() -> configparser.ConfigParser:
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg", encoding="utf-8")
    return config


def _entries(value: str) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in value.strip().splitlines() if "=" in line)
    return {k.strip(): v.strip() for k, v in pairs}


def test_listed_packages_are_exactly_the_package_folders():
    config = _setup_cfg()
    listed = set(config["options"]["packages"].split())
    mapped = _entries(config["options"]["package_dir"])
    found = {"lm_eval_bias." + ".".join(p.parent.relative_to(ROOT / "lm_eval_bias").parts)
             for p in (ROOT / "lm_eval_bias").rglob("__init__.py") if p.parent != ROOT / "lm_eval_bias"}
    found |= {"lm_eval_bias"} | set(mapped)
    assert listed == found
    assert mapped == {"lm_eval_bias.datasets_builder": "datasets_builder", "lm_eval_bias.task_yamls": "task_yamls"}


def test_entry_points_are_declared_in_upstream_form():
    groups = _setup_cfg()["options.entry_points"]
    assert _entries(groups["lm_eval.models"]) == PLUGIN_MODELS  # PR #4013: name = "module:Class"
    assert _entries(groups["lm_eval.tasks"]) == {"lm_eval_bias": "lm_eval_bias.task_yamls"}  # PR #4015
    installed = {ep.name: ep.value for ep in importlib.metadata.entry_points(group="lm_eval.models")}
    assert {k: installed.get(k) for k in PLUGIN_MODELS} == PLUGIN_MODELS
    (tasks,) = [ep for ep in importlib.metadata.entry_points(group="lm_eval.tasks") if ep.name == "lm_eval_bias"]
    assert Path(tasks.load().__file__).resolve().parent == lm_eval_bias.tasks_dir()
    for name, target in PLUGIN_MODELS.items():  # the targets exist (vLLM classes are built lazily, by name)
        module, _, attr = target.partition(":")
        source = Path(importlib.util.find_spec(module).origin).read_text(encoding="utf-8")
        assert f"class {attr}(" in source, name


def test_installed_code_imports_only_through_the_plugin_namespace():
    stray = []
    for path in list((ROOT / "lm_eval_bias").rglob("*.py")) + list((ROOT / "datasets_builder").rglob("*.py")) + \
            list((ROOT / "tests").rglob("*.py")) + list((ROOT / "scripts").rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            words = line.strip().split()
            if words[:1] in (["import"], ["from"]) and len(words) > 1 and \
                    words[1].split(".")[0] in ("datasets_builder", "task_yamls"):
                stray.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not stray, "import these through lm_eval_bias.*:\n" + "\n".join(stray)


@pytest.mark.slow
def test_the_wheel_adds_only_the_plugin_namespace(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (wheel,) = tmp_path.glob("lm_eval_bias-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    # besides the namespace: the start-up hook (lm_eval_bias/core/startup.py), one module and one .pth line
    assert {n.split("/")[0] for n in names} == {"lm_eval_bias", f"lm_eval_bias-{lm_eval_bias.__version__}.dist-info",
                                                "_lm_eval_bias_autoload.py", "lm_eval_bias_autoload.pth"}
    assert zipfile.ZipFile(wheel).read("lm_eval_bias_autoload.pth") == b"import _lm_eval_bias_autoload\n"
    assert zipfile.ZipFile(wheel).read("_lm_eval_bias_autoload.py") == (ROOT / "lm_eval_bias/core/startup.py").read_bytes()
    yamls = {n.split("lm_eval_bias/task_yamls/", 1)[1] for n in names if n.endswith(".yaml")}
    assert yamls == {str(p.relative_to(lm_eval_bias.tasks_dir())) for p in lm_eval_bias.tasks_dir().rglob("*.yaml")}
    assert "lm_eval_bias/datasets_builder/readers.py" in names
    entry_points = zipfile.ZipFile(wheel).read(f"lm_eval_bias-{lm_eval_bias.__version__}.dist-info/entry_points.txt")
    assert b"[lm_eval.models]" in entry_points and b"[lm_eval.tasks]" in entry_points


# -- harness behaviours ------------------------------------------------------------------------------
def test_lm_eval_0_4_13_loads_no_plugins_so_the_plugin_adds_its_folder():
    harness.harness_loads_plugin_tasks.cache_clear()
    harness.harness_loads_plugin_models.cache_clear()
    assert not harness.harness_loads_plugin_tasks() and not harness.harness_loads_plugin_models()
    from lm_eval_bias.cli import _with_plugin_tasks

    assert _with_plugin_tasks(None) == str(lm_eval_bias.tasks_dir())
    assert "focus_2afc_income" in lm_eval_bias.task_manager().all_tasks


def test_detection_reads_the_harness_source_for_the_entry_point_group(tmp_path, monkeypatch):
    package = tmp_path / "fake_harness"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "manager.py").write_text(
        "from importlib.metadata import entry_points\n"
        "def plugin_task_dirs():\n    return [ep.load() for ep in entry_points(group=\"lm_eval.tasks\")]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert harness._names_group(harness._harness_sources("fake_harness"), harness.TASKS_GROUP)
    assert not harness._names_group(harness._harness_sources("fake_harness"), harness.MODELS_GROUP)


def test_a_harness_that_indexes_plugin_tasks_gets_the_folder_only_once(monkeypatch):
    """Simulates PR #4015: the harness's TaskManager adds every `lm_eval.tasks` entry point itself."""
    from lm_eval.tasks import TaskManager

    original = TaskManager.__init__
    seen = []

    def plugin_aware_init(self, *args, include_path=None, **kwargs):
        paths = list(include_path or []) if isinstance(include_path, (list, tuple)) else \
            ([include_path] if include_path else [])
        seen.append(list(paths))
        original(self, *args, include_path=[str(lm_eval_bias.tasks_dir()), *paths], **kwargs)

    monkeypatch.setattr(TaskManager, "__init__", plugin_aware_init)
    monkeypatch.setattr(harness, "harness_loads_plugin_tasks", lambda: True)
    from lm_eval_bias.cli import _with_plugin_tasks

    assert _with_plugin_tasks(None) is None and _with_plugin_tasks(["/mine"]) == ["/mine"]
    tm = lm_eval_bias.task_manager()
    assert seen[-1] == []  # the plugin passed no folder of its own
    assert "focus_2afc_income" in tm.all_tasks


def test_a_harness_that_registers_plugin_models_keeps_its_entries():
    """Simulates PR #4013: the registry already holds the entry points' "module:Class" placeholders
    before the plugin registers; registering again changes nothing and resolves to the same class."""
    code = (
        "import lm_eval.models\n"
        "from lm_eval.api.registry import model_registry, get_model\n"
        "from lm_eval_bias.core.registration import PLUGIN_MODELS, register_plugin\n"
        "for name, target in PLUGIN_MODELS.items():\n"
        "    model_registry.register(name, target=target)\n"
        "before = {n: model_registry._objs.get(n) for n in PLUGIN_MODELS}\n"
        "register_plugin(); register_plugin()\n"
        "assert {n: model_registry._objs.get(n) for n in PLUGIN_MODELS} == before\n"
        "print(get_model('bias-probe').__name__, get_model('hf-multimodal').__name__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["BiasProbeLM", "HFMultimodalLM"]
