"""Every command in the README's shell code blocks works as written.

Commands are taken from the ```bash / ```sh / ```shell / ```console blocks of the README (lines joined
at a trailing backslash, comments and blank lines dropped) and run in README order, each with
``bash -c`` in one scratch folder, offline:

- the folder has ``.venv`` (a link to this interpreter's environment) and the package's console
  scripts on ``PATH``;
- a build command finds the source it names (``--source`` / ``--lists``) in the folder: the
  synthetic stand-ins of ``lm_eval_bias.testing`` in the authors' layouts, as built by the fixtures of
  ``tests/conftest.py`` (so the README's builder commands really run);
- a command that reads ``LM_EVAL_BIAS_DATA_DIR`` finds every dataset there (built by the README's own
  build commands, or else the conftest fixtures' datasets);
- bootstrap replicates are lowered (``LM_EVAL_BIAS_BOOTSTRAP_ITERS``,
  ``LM_EVAL_BIAS_REPORT_BOOTSTRAP_ITERS``) to keep the test quick.

Commands that need a GPU, the network, a real model or an API key are listed in :data:`SKIP`, each
with its reason; the list may only name commands that are in the README. A skipped ``lm-eval-bias
run`` is still checked without running it: lm-eval's own argument parser accepts it, its model and
tasks exist, and the image-budget guard lets it through.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"

#: command (exact, else a substring that names exactly one command) -> why it is not run here
SKIP: dict[str, str] = {
    "bash scripts/setup.sh": "installs packages from PyPI (network); .ci/run runs it on every CI build",
    "TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu bash scripts/setup.sh": "installs from PyTorch's index (network)",
    ".venv/bin/python -m pytest -q -p no:cacheprovider -n 2 --dist loadfile": "the whole test-suite, of which this test is part",
    "pip install torch==2.13.0": "installs from a package index (network)",
    'pip install -e ".[hf]"': "installs from PyPI (network)",
    "--model hf-multimodal --model_args pretrained=Qwen/Qwen2.5-VL-7B-Instruct": "a 7B model from the Hub and a GPU",
    "--model hf --model_args pretrained=Qwen/Qwen2.5-0.5B-Instruct": "a real model from the Hub",
    "--model vllm-vlm --model_args pretrained=Qwen/Qwen2.5-VL-7B-Instruct": "vLLM, a GPU and a 7B model from the Hub",
    "--model local-chat-completions": "a hosted API (network and an API key)",
    "lm_eval --tasks focus_2afc_income --model vllm-vlm": "the design card's command: vLLM, a GPU and a model "
                                                           "from the Hub (tests/cli/test_plain_lm_eval.py runs "
                                                           "plain lm_eval with bias-probe)",
}

#: builder -> how to make the source it reads, from the conftest fixtures' folders
#: (fixture name, path of the source relative to the fixture's data folder's parent)
BUILD_SOURCES: dict[str, dict[str, tuple[str, str]]] = {
    "focus": {"--source": ("small_focus_data", "src")},
    "focus-bios": {"--source": ("small_focus_data", "bios.jsonl")},
    "fact-or-fair": {"--source": ("small_fof_data", "src")},
    "cf-vqa": {"--source": ("small_cf_vqa_data", "src")},
    "vignette": {"--source": ("small_vignette_data", "src"), "--lists": ("small_vignette_data", "lists")},
}
DATASET_FIXTURES = {"focus": "small_focus_data", "focus_bios": "small_focus_data", "fact_or_fair": "small_fof_data",
                    "cf_vqa": "small_cf_vqa_data", "vignette": "small_vignette_data"}
SHELL_BLOCKS = ("bash", "sh", "shell", "console")
TIMEOUT_S = 300


def readme_commands(text: str | None = None) -> list[str]:
    """Commands of the README's shell blocks, in order."""
    text = README.read_text(encoding="utf-8") if text is None else text
    commands = []
    for language, body in re.findall(r"^```[ \t]*(\w*)[^\n]*\n(.*?)^```[ \t]*$", text, re.M | re.S):
        if language.lower() not in SHELL_BLOCKS:
            continue
        pending = ""
        for line in body.splitlines():
            stripped = line.strip()
            if not pending and (not stripped or stripped.startswith("#")):
                continue
            if stripped.endswith("\\"):
                pending += stripped[:-1].rstrip() + " "
                continue
            commands.append(" ".join((pending + stripped).split()))
            pending = ""
        if pending:
            commands.append(" ".join(pending.split()))
    return commands


COMMANDS = readme_commands()


def skip_matches(key: str, commands: list[str]) -> list[str]:
    exact = [c for c in commands if c == key]
    return exact or [c for c in commands if key in c]


def skip_reason(command: str) -> str | None:
    for key, reason in SKIP.items():
        if command in skip_matches(key, COMMANDS):
            return reason
    return None


def words(command: str) -> tuple[dict[str, str], list[str]]:
    """(leading VAR=value assignments, the rest of the command as argv), comments dropped."""
    argv = shlex.split(command, comments=True)
    env = {}
    while argv and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", argv[0]):
        name, _, value = argv.pop(0).partition("=")
        env[name] = value
    return env, argv


def option(argv: list[str], name: str) -> str | None:
    for k, arg in enumerate(argv):
        if arg == name and k + 1 < len(argv):
            return argv[k + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def is_lm_eval_bias(argv: list[str], *sub: str) -> bool:
    return bool(argv) and Path(argv[0]).name == "lm-eval-bias" and tuple(argv[1:1 + len(sub)]) == sub


# -- the scratch folder --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    ws = tmp_path_factory.mktemp("readme")
    (ws / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)
    return ws


@pytest.fixture(scope="module")
def command_env(workspace) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LM_EVAL_BIAS_", "PYTEST_"))}
    env.update({
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
        "LM_EVAL_BIAS_DATA_DIR": str(workspace / "data"),
        "LM_EVAL_BIAS_BOOTSTRAP_ITERS": "50", "LM_EVAL_BIAS_REPORT_BOOTSTRAP_ITERS": "20",
        "MPLBACKEND": "Agg", "TOKENIZERS_PARALLELISM": "false",
    })
    return env


def _copy(src: Path, dst: Path) -> None:
    if dst.exists():
        return
    dst.parent.mkdir(parents=True, exist_ok=True)
    (shutil.copytree if src.is_dir() else shutil.copyfile)(src, dst)


def provide_sources(argv: list[str], cwd: Path, request) -> None:
    """Put the synthetic stand-in of every source a build command names where it names it."""
    for flag, (fixture, rel) in BUILD_SOURCES.get(argv[2], {}).items():
        target = option(argv, flag)
        assert target, f"{' '.join(argv)}: no {flag}"
        _copy(request.getfixturevalue(fixture).parent / rel, cwd / target)


def provide_datasets(data_dir: Path, request) -> None:
    """Every dataset in ``data_dir``: what the README's build commands wrote, else the fixtures'."""
    for name, fixture in DATASET_FIXTURES.items():
        _copy(request.getfixturevalue(fixture) / name, data_dir / name)


# -- checks after a command ----------------------------------------------------------------------------
def check_outputs(argv: list[str], cwd: Path) -> None:
    if is_lm_eval_bias(argv, "demo"):
        out = cwd / (option(argv, "--output") or "demo_out")
        assert (out / "data" / "focus").is_dir()
        # the README says: results in demo_out/results/<id>/ (lm-eval's folder per model name)
        assert list(out.glob("results/*/results_*.json")), sorted(map(str, out.rglob("*")))[:20]
        assert list(out.glob("results/*/samples_focus_2afc_income_*.jsonl"))
    elif is_lm_eval_bias(argv, "build"):
        out = cwd / option(argv, "--output")
        assert (out / "README.md").is_file() and list(out.rglob("*.parquet")), out
    elif is_lm_eval_bias(argv, "run"):
        out = cwd / option(argv, "--output_path")
        assert list(out.glob("*/results_*.json")), out
        if "--log_samples" in argv:
            assert list(out.glob("*/samples_*.jsonl")), out
    elif is_lm_eval_bias(argv, "report"):
        assert (cwd / option(argv, "--output") / "index.html").is_file()


def static_check_run(argv: list[str]) -> None:
    """A skipped ``lm-eval-bias run``: parsed by lm-eval's CLI, its model and tasks known, images fit."""
    from lm_eval._cli import HarnessCLI
    from lm_eval.api.registry import model_registry

    from lm_eval_bias.guard import check_image_budget, images_per_task
    from lm_eval_bias.core.registration import register_plugin

    register_plugin()
    saved = sys.argv
    sys.argv = ["lm-eval-bias", *argv[1:]]
    try:
        args = HarnessCLI().parse_args()
    finally:
        sys.argv = saved
    assert args.model in set(getattr(model_registry, "_objs", {})), f"unknown model {args.model!r}"
    tasks = args.tasks if isinstance(args.tasks, list) else str(args.tasks).split(",")
    known = images_per_task()
    assert all(t.strip() in known for t in tasks), tasks
    check_image_budget(args.model, args.model_args, [t.strip() for t in tasks])


# -- tests ---------------------------------------------------------------------------------------------
def test_readme_has_commands():
    assert len(COMMANDS) >= 10
    assert any(c.endswith("lm-eval-bias demo") for c in COMMANDS)


def test_skip_list_names_readme_commands():
    for key, reason in SKIP.items():
        assert reason.strip(), key
        found = skip_matches(key, COMMANDS)
        assert len(found) == 1, f"SKIP entry {key!r} must name exactly one README command, names {found}"


def test_extraction():
    text = "```bash\n# c\nA=1 foo \\\n  --x y   # note\n\nbar\n```\n```text\nnot a command\n```\n"
    assert readme_commands(text) == ["A=1 foo --x y # note", "bar"]
    assert words("A=1 B=x lm-eval-bias run --tasks t  # c") == ({"A": "1", "B": "x"}, ["lm-eval-bias", "run", "--tasks", "t"])


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS, ids=[f"{i:02d}-{c[:60]}" for i, c in enumerate(COMMANDS)])
def test_readme_command(command, workspace, command_env, request):
    reason = skip_reason(command)
    env_vars, argv = words(command)
    if reason:
        if is_lm_eval_bias(argv, "run"):
            static_check_run(argv)
        pytest.skip(reason)
    if is_lm_eval_bias(argv, "build"):
        provide_sources(argv, workspace, request)
    if "LM_EVAL_BIAS_DATA_DIR" in env_vars or is_lm_eval_bias(argv, "run"):
        provide_datasets(workspace / env_vars.get("LM_EVAL_BIAS_DATA_DIR", "data"), request)
    done = subprocess.run(["bash", "-c", command], cwd=workspace, env=command_env, capture_output=True, text=True,
                          timeout=TIMEOUT_S)
    assert done.returncode == 0, f"{command}\nexit {done.returncode}\n{(done.stdout + done.stderr)[-4000:]}"
    check_outputs(argv, workspace)
