"""The design card's command as written: after installing the wheel, plain ``lm_eval --model bias-probe
--tasks focus_2afc_income`` finds the plugin's tasks and models (no wrapper, no --include_path).

A fresh virtual environment per session: the wheel is built from this checkout (``pip wheel
--no-deps``) and installed with ``--no-deps --no-index`` into a new ``python -m venv``, which sees
``.venv``'s already-installed dependencies through one plain path line (a ``.pth`` holding only a
directory: ``.venv``'s own ``.pth`` files, among them its editable install of lm_eval_bias, are not
processed). Every check runs in a subprocess of that environment's interpreter and asserts that the
``lm_eval_bias`` it uses is the wheel's copy.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def fresh_venv(tmp_path_factory) -> Path:
    """A new venv with the wheel of this checkout installed; returns its python."""
    root = tmp_path_factory.mktemp("fresh_venv")
    wheels = root / "wheels"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                            "-w", str(wheels), str(ROOT)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = wheels.glob("lm_eval_bias-*.whl")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site_packages = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                        capture_output=True, text=True, check=True).stdout.strip())
    (site_packages / "zz_dependencies_from_dot_venv.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    installed = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
                                "--no-index", "-q", str(wheel)], capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stderr[-3000:]
    assert (site_packages / "lm_eval_bias_autoload.pth").read_text() == "import _lm_eval_bias_autoload\n"
    return python


def _run(python: Path, code: str, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k != "LM_EVAL_BIAS_AUTOLOAD"}
    return subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=300,
                          env={**environ, **env}, cwd=python.parent)  # not the checkout: `-c` puts the cwd first


def test_plain_lm_eval_runs_the_card_command_with_the_plugin_model(fresh_venv, small_focus_data, tmp_path):
    out_dir = tmp_path / "out"
    env = {**os.environ, "LM_EVAL_BIAS_DATA_DIR": str(small_focus_data), "HF_HUB_OFFLINE": "1",
           "HF_DATASETS_OFFLINE": "1", "LM_EVAL_BIAS_BOOTSTRAP_ITERS": "20"}
    env.pop("LM_EVAL_BIAS_AUTOLOAD", None)
    # lm-eval's own console script, run by the fresh environment's interpreter
    proc = subprocess.run([str(fresh_venv), str(BIN / "lm_eval"), "--model", "bias-probe", "--tasks",
                           "focus_2afc_income", "--limit", "4", "--output_path", str(out_dir), "--log_samples"],
                          capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (results_file,) = out_dir.rglob("results_*.json")
    results = json.loads(results_file.read_text())
    assert results["config"]["model"] == "bias-probe"
    assert results["n-samples"]["focus_2afc_income"]["effective"] == 4
    (samples_file,) = out_dir.rglob("samples_focus_2afc_income_*.jsonl")
    assert len(samples_file.read_text().splitlines()) == 4


def test_the_fresh_environment_uses_the_wheel_and_finds_tasks_and_models(fresh_venv):
    code = (
        "import lm_eval_bias, sys\n"
        "from lm_eval.api.registry import get_model\n"
        "from lm_eval.tasks import TaskManager\n"
        "tm = TaskManager(include_defaults=False)\n"
        "print(lm_eval_bias.__file__.startswith(sys.prefix))\n"
        "print(get_model('bias-probe').__name__, get_model('hf').__name__, get_model('vllm-vlm-guided').__name__)\n"
        "print('focus_2afc_income' in tm.all_tasks, 'reflect' in tm.all_groups)\n"
        "print(tm.include_path == [str(lm_eval_bias.tasks_dir())])\n"
        "print(len(TaskManager(include_path=[str(lm_eval_bias.tasks_dir())], include_defaults=False).include_path))\n"
    )
    proc = _run(fresh_venv, code)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split("\n")[:5] == ["True", "BiasProbeLM HFLM GuidedVLLMVLM", "True True", "True", "1"]


def test_unrelated_start_ups_import_nothing_of_the_plugin(fresh_venv):
    proc = _run(fresh_venv, "import sys; print(sorted(m for m in sys.modules if m.startswith(('lm_eval', 'lm_eval_bias'))))")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "['_lm_eval_bias_autoload']" or proc.stdout.strip() == "[]"
    proc = _run(fresh_venv, "import sys; print([type(f).__name__ for f in sys.meta_path][0])")
    assert proc.stdout.strip() == "HarnessImportHook"


def test_opting_out_leaves_lm_eval_alone(fresh_venv):
    code = ("import sys\nfrom lm_eval.api.registry import model_registry\nfrom lm_eval.tasks import TaskManager\n"
            "print('lm_eval_bias' in sys.modules, 'bias-probe' in model_registry,\n"
            "      'focus_2afc_income' in TaskManager(include_defaults=False).all_tasks)\n")
    proc = _run(fresh_venv, code, LM_EVAL_BIAS_AUTOLOAD="0")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["False", "False", "False"]


def test_a_harness_that_reads_entry_points_gets_nothing_twice(fresh_venv):
    """Simulates PR #4013/#4015: the harness registers the entry points' EntryPoint objects itself and
    indexes the `lm_eval.tasks` folder itself; the hook then registers and adds nothing."""
    code = (
        "import importlib.metadata as md\n"
        "import lm_eval_bias.core.harness as h\n"
        "h.harness_loads_plugin_models = lambda: True\n"
        "h.harness_loads_plugin_tasks = lambda: True\n"
        "from lm_eval.api.registry import model_registry, get_model\n"
        "import lm_eval.models\n"
        "print('bias-probe' in model_registry)\n"
        "for ep in md.entry_points(group='lm_eval.models'):\n"
        "    model_registry.register(ep.name, target=ep)\n"
        "print(get_model('bias-probe').__name__, get_model('vllm-vlm-logprobs').__name__)\n"
        "import os, lm_eval.tasks as tasks\n"
        "original = tasks.TaskManager.__init__\n"
        "def init(self, *args, include_path=None, **kwargs):  # the harness adds entry-point folders itself\n"
        "    folders = [os.path.dirname(ep.load().__file__) for ep in md.entry_points(group='lm_eval.tasks')]\n"
        "    original(self, *args, include_path=folders + list(include_path or []), **kwargs)\n"
        "tasks.TaskManager.__init__ = init\n"
        "tm = tasks.TaskManager(include_defaults=False)\n"
        "print(len(tm.include_path), 'focus_2afc_income' in tm.all_tasks)\n"
    )
    proc = _run(fresh_venv, code)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split("\n")[:3] == ["False", "BiasProbeLM VLLMVLMLogprobs", "1 True"]


def test_every_entry_point_loads_in_the_fresh_environment(fresh_venv):
    code = ("import importlib.metadata as md\n"
            "for ep in sorted(md.entry_points(group='lm_eval.models'), key=lambda e: e.name):\n"
            "    print(ep.name, ep.load().__name__)\n"
            "print(md.entry_points(group='lm_eval.tasks')['lm_eval_bias'].load().__name__)\n")
    proc = _run(fresh_venv, code)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split("\n")[:5] == ["bias-probe BiasProbeLM", "hf-multimodal-logprobs HFMultimodalLogprobsLM",
                                           "vllm-vlm-guided GuidedVLLMVLM", "vllm-vlm-logprobs VLLMVLMLogprobs",
                                           "lm_eval_bias.task_yamls"]
