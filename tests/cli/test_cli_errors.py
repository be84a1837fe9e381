"""Errors that tell a new user what to do: a misspelled task gets a suggestion, a missing dataset names
the builder command, LM_EVAL_BIAS_DATA_DIR and the Hub id it tried, every sub-command has its own
--help, and cli.py / demo.py do not import each other at module level.

Nothing here needs the network: Hub checks go to a local address (connection refused, a server that
never answers, or one that answers "repository not found")."""

from __future__ import annotations

import ast
import http.server
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

import lm_eval_bias
from lm_eval_bias import cli
from lm_eval_bias.core import data

ROOT = Path(lm_eval_bias.__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
MISSPELLED = "error: unknown task 'focus_2afc_incom'; did you mean 'focus_2afc_income'?"
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
#: a local port nothing listens on: the Hub check is refused at once, whatever network the machine has
REFUSED = "http://127.0.0.1:9"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The caller's environment with an empty Hugging Face cache, no LM_EVAL_BIAS_DATA_DIR, and no
    offline flags unless given."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("LM_EVAL_BIAS_DATA_DIR", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE",
                        "HF_DATASETS_CACHE", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_ENDPOINT")}
    env["HF_HOME"] = str(tmp_path / "hf_home")
    env.update(extra)
    return env


#: runs the CLI and writes the names of every module the process imported to the file argv[1]
_RECORD_IMPORTS = (
    "import atexit, json, sys\n"
    "out = sys.argv.pop(1)\n"
    "atexit.register(lambda: open(out, 'w').write(json.dumps(sorted(sys.modules))))\n"
    "from lm_eval_bias.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n")
#: what a check that answers before any model or evaluation work must not have imported
HEAVY = ("torch", "transformers", "vllm", "scipy", "statsmodels", "matplotlib", "lm_eval.evaluator")


def _cli(args: list[str], env: dict[str, str], timeout: float = 120) -> tuple[subprocess.CompletedProcess, set[str]]:
    """The CLI's result and the set of modules its process imported (how much work it did before
    answering, measured without a clock)."""
    with tempfile.TemporaryDirectory() as tmp:
        record = Path(tmp) / "modules.json"
        done = subprocess.run([sys.executable, "-c", _RECORD_IMPORTS, str(record), *args], capture_output=True,
                              text=True, env=env, timeout=timeout)
        modules = set(json.loads(record.read_text())) if record.exists() else set()
    return done, modules


def _heavy(modules: set[str]) -> list[str]:
    return [name for name in HEAVY if name in modules]


# -- misspelled tasks ---------------------------------------------------------------------------------------
def test_misspelled_task_suggests_the_plugin_task_before_any_heavy_import_without_traceback(tmp_path):
    done, modules = _cli(["run", "--model", "bias-probe", "--tasks", "focus_2afc_incom"], _env(tmp_path, **OFFLINE))
    assert done.returncode == 2
    assert done.stderr.strip() == MISSPELLED
    assert "Traceback" not in done.stderr + done.stdout
    assert "lm_eval_bias.cli" in modules  # the record is real
    assert _heavy(modules) == []  # answered from the task index: no model, statistics or evaluator loaded


def test_misspelled_task_among_builtin_tasks_is_still_reported_and_legacy_form_too(tmp_path):
    done, _ = _cli(["--model", "bias-probe", "--tasks", "hellaswag,focus_2afc_incom", "reflct"],
                   _env(tmp_path, **OFFLINE))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [MISSPELLED, "error: unknown task 'reflct'; did you mean 'reflect'?"]


def test_validate_gets_the_same_check(tmp_path):
    done, _ = _cli(["validate", "--tasks", "vignete"], _env(tmp_path, **OFFLINE))
    assert done.returncode == 2
    assert done.stderr.strip() == "error: unknown task 'vignete'; did you mean 'vignette'?"


def test_names_that_are_not_misspellings_of_plugin_tasks_are_left_to_lm_eval(tmp_path):
    assert cli.unknown_task_errors(["focus_2afc_income", "reflect", "hellaswag", "mmlu", "arc_easy"]) == []
    assert cli.unknown_task_errors(["focus_2afc_*", "focus_2afc_incom.yaml", ""]) == []
    assert cli.unknown_task_errors(None) == []
    # a near-miss of a plugin name that the user's own --include_path defines is theirs
    own = tmp_path / "mine"
    own.mkdir()
    (own / "t.yaml").write_text("task: focus_2afc_incomes\ndataset_path: x\n", encoding="utf-8")
    assert cli.unknown_task_errors(["focus_2afc_incomes"]) == [
        "unknown task 'focus_2afc_incomes'; did you mean 'focus_2afc_income'?"]
    assert cli.unknown_task_errors(["focus_2afc_incomes"], str(own)) == []
    assert cli.unknown_task_errors("focus_2afc_incomes,reflect", [str(own)]) == []


def test_builtin_names_are_read_as_lm_eval_indexes_them(tmp_path):
    """The text scan finds quoted keys, inline and block tag lists, and extension-less templates."""
    (tmp_path / "a.yaml").write_text('"task": "quoted_task"\n"tag": "quoted_tag"\n', encoding="utf-8")
    (tmp_path / "b.yaml").write_text("task: plain_task\ntag: [inline_a, 'inline_b']\n", encoding="utf-8")
    (tmp_path / "_template_yaml").write_text("tag:\n  - block_a\n  - block_b # note\ndataset_path: x\n",
                                            encoding="utf-8")
    (tmp_path / "c.yaml").write_text("group: grp\ntask:\n  - member_a\n  - task: member_b\n", encoding="utf-8")
    assert cli._yaml_names([tmp_path]) >= {"quoted_task", "quoted_tag", "plain_task", "inline_a", "inline_b",
                                           "block_a", "block_b", "grp", "member_a", "member_b"}
    assert cli._yaml_names([tmp_path], among=["block_b", "nothing"]) == {"block_b"}


def test_plugin_task_names_match_the_guard_and_the_task_folder():
    from lm_eval_bias.guard import images_per_task

    assert sorted(cli.plugin_task_names()) == sorted(images_per_task())


# -- missing datasets ----------------------------------------------------------------------------------------
def _assert_missing_focus_message(text: str) -> None:
    assert "error: dataset 'focus' not found" in text
    assert "lm-eval-bias build focus --source" in text and "--output" in text
    assert "LM_EVAL_BIAS_DATA_DIR" in text
    assert "'lm-eval-bias/focus'" in text
    for name, hub_id in data.DEFAULT_HUB_IDS.items():  # every default id is listed
        assert f"{name}={hub_id}" in text
    assert "Traceback" not in text


@pytest.mark.parametrize("offline", [True, False], ids=["HF_HUB_OFFLINE=1", "HF_HUB_OFFLINE unset"])
def test_missing_dataset_names_builder_env_var_and_hub_id_before_loading_a_model(tmp_path, offline):
    env = _env(tmp_path, **(OFFLINE if offline else {"HF_ENDPOINT": REFUSED}))
    done, modules = _cli(["run", "--model", "bias-probe", "--tasks", "focus_2afc_income"], env)
    assert done.returncode == 2, done.stderr[-2000:]
    _assert_missing_focus_message(done.stderr)
    assert len(done.stderr.strip().splitlines()) == 1
    assert ("HF_HUB_OFFLINE is set" if offline else "the Hub could not be reached") in done.stderr
    assert "lm_eval_bias.cli" in modules and _heavy(modules) == []  # refused before any model or evaluator


def test_the_hub_id_given_in_metadata_is_the_one_tried(tmp_path):
    done, _ = _cli(["run", "--model", "bias-probe", "--tasks", "focus_salary",
                    "--metadata", '{"hub_id": "someone/focus-copy"}'], _env(tmp_path, **OFFLINE))
    assert done.returncode == 2
    # hub_id from --metadata is the one tried for focus
    assert "'someone/focus-copy'" in done.stderr and "dataset 'focus' not found" in done.stderr


def test_missing_folder_under_data_dir_names_the_builder_and_the_hub_id(tmp_path, monkeypatch):
    monkeypatch.setenv("LM_EVAL_BIAS_DATA_DIR", str(tmp_path))
    with pytest.raises(data.DataSourceError) as info:
        data.load_split("vignette")
    text = str(info.value)
    assert f"lm-eval-bias build vignette --source <images folder> --lists <authors' lists folder> --output " \
           f"{tmp_path / 'vignette'}" in text
    assert "LM_EVAL_BIAS_DATA_DIR" in text and "'lm-eval-bias/vignette'" in text


@pytest.fixture
def no_cache(monkeypatch):
    monkeypatch.delenv("LM_EVAL_BIAS_DATA_DIR", raising=False)
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_ETAG_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(data, "_HUB_CHECKED", {})
    monkeypatch.setattr(data, "_in_local_hf_cache", lambda repo_id: False)
    monkeypatch.setattr(data, "_hub_offline", lambda: False)
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)  # the suite runs with it set
    return huggingface_hub.constants


def test_a_hub_that_never_answers_costs_one_timeout_not_retries(no_cache, monkeypatch):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)  # connections complete, nothing is ever read or answered
    accepted: list[socket.socket] = []

    def accept_forever():
        while True:
            try:
                accepted.append(server.accept()[0])
            except OSError:  # the socket was closed
                return

    threading.Thread(target=accept_forever, daemon=True).start()
    try:
        monkeypatch.setattr(no_cache, "ENDPOINT", f"http://127.0.0.1:{server.getsockname()[1]}")
        monkeypatch.setenv("HF_HUB_ETAG_TIMEOUT", "1")
        monkeypatch.setattr(no_cache, "HF_HUB_ETAG_TIMEOUT", 1)
        with pytest.raises(data.DataSourceError, match="could not be reached") as info:
            data.check_hub_dataset("lm-eval-bias/focus_bios")
        # one try (plus, at most, huggingface_hub's own once-a-day agent-registry fetch from the same
        # endpoint); datasets.load_dataset would retry the same request several times
        time.sleep(0.2)  # let the accept loop see a connection made just before the timeout
        assert 1 <= len(accepted) <= 2, len(accepted)
        assert "1 s timeout" in str(info.value) and "lm-eval-bias build focus-bios" in str(info.value)
        assert "bios_hub_id" in str(info.value)
    finally:
        server.close()
        for connection in accepted:
            connection.close()


def test_a_hub_without_the_dataset_says_so(no_cache, monkeypatch):
    class NotFound(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            self.send_response(404)
            self.send_header("X-Error-Code", "RepoNotFound")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NotFound)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setattr(no_cache, "ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
        with pytest.raises(data.DataSourceError, match="does not exist on the Hub or is private") as info:
            data.load_split("cf_vqa", hub_id="someone/cf-vqa")
        assert "'someone/cf-vqa'" in str(info.value) and "lm-eval-bias build cf-vqa" in str(info.value)
    finally:
        server.shutdown()
        server.server_close()


def test_a_dataset_in_the_local_hf_cache_is_left_to_datasets(tmp_path):
    home = tmp_path / "hf_home"
    (home / "datasets" / "org___my_set" / "default" / "0.0.0" / "abc").mkdir(parents=True)
    (home / "hub" / "datasets--org--Other" / "snapshots").mkdir(parents=True)
    code = ("from lm_eval_bias import data;"
            "print(data._in_local_hf_cache('org/MySet'), data._in_local_hf_cache('org/Other'),"
            " data._in_local_hf_cache('org/absent'), data._hub_problem('org/MySet'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env=_env(tmp_path, **OFFLINE)).stdout.split()
    assert out == ["True", "True", "False", "None"]


# -- --help of every sub-command ----------------------------------------------------------------------------
HELP = ["run", "ls", "validate", "tasks-dir", "version", "build", "build focus", "build focus-bios",
        "build fact-or-fair", "build cf-vqa", "build vignette", "score", "score fact-or-fair-t2i", "report", "demo"]


@pytest.mark.parametrize("command", HELP)
def test_every_sub_command_prints_its_own_help(command, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(SystemExit) as info:
        cli.main([*command.split(), "--help"])
    assert info.value.code in (0, None)
    out = capsys.readouterr().out
    assert out.startswith(f"usage: lm-eval-bias {command} "), out[:300]
    assert "usage: lm-eval run" not in out


def test_score_help_through_the_entry_point_is_the_scorers(tmp_path):
    done = subprocess.run([BIN / "lm-eval-bias", "score", "--help"], capture_output=True, text=True,
                          env=_env(tmp_path, **OFFLINE), timeout=120)
    assert done.returncode == 0
    assert done.stdout.startswith("usage: lm-eval-bias score ")
    assert "fact-or-fair-t2i" in done.stdout and "--model" not in done.stdout


def test_main_help_lists_every_sub_command_on_one_line(tmp_path):
    done, _ = _cli(["--help"], _env(tmp_path, **OFFLINE))
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert lines[0].startswith("usage: lm-eval-bias")
    for command in ("run", "ls", "validate", "tasks-dir", "build", "score", "report", "demo"):
        matching = [line for line in lines if line.split()[:1] == [command] and line.startswith("  ")]
        assert len(matching) == 1 and len(matching[0].split()) > 2, command
    assert "Evaluate language models on various benchmarks" not in done.stdout  # not lm-eval's run help
    assert cli.main([]) == 0


def test_unknown_command_suggests_one(capsys):
    assert cli.main(["scroe", "--labels", "x"]) == 2
    assert capsys.readouterr().err.strip() == "error: unknown command 'scroe'; did you mean 'score'?"
    assert cli.main(["version"]) == 0 and cli.main(["--version"]) == 0
    assert capsys.readouterr().out == f"lm-eval-bias {lm_eval_bias.__version__}\n" * 2


# -- no import cycle between cli and demo -------------------------------------------------------------------
def _imports(path: Path, module_level_only: bool) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if module_level_only else list(ast.walk(tree))
    found = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            found.add(node.module or "")
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def test_demo_never_imports_cli_and_cli_imports_demo_lazily():
    package = ROOT / "lm_eval_bias"
    assert not any(name.startswith("lm_eval_bias.cli") for name in _imports(package / "demo.py", False))
    assert not any("demo" in name for name in _imports(package / "cli.py", True))
    code = "import sys, lm_eval_bias.demo; print('lm_eval_bias.cli' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          timeout=60).stdout.strip() == "False"


def test_demo_runs_the_harness_it_is_given(tmp_path, monkeypatch):
    from lm_eval_bias import demo

    monkeypatch.delenv("LM_EVAL_BIAS_DATA_DIR", raising=False)
    monkeypatch.setattr(demo, "build_demo_data", lambda root: root / "data")
    calls = []
    assert demo.main(["--output", str(tmp_path), "--tasks", "focus_2afc_income"], calls.append) == 0
    assert calls == [["run", "--model", "bias-probe", "--model_args",
                      "refusal_rate=0.05,position_bias=0.1,salary_noise=3000", "--tasks", "focus_2afc_income",
                      "--output_path", str(tmp_path.resolve() / "results"), "--log_samples"]]
    assert os.environ["LM_EVAL_BIAS_DATA_DIR"] == str(tmp_path.resolve() / "data")


@pytest.mark.slow
def test_unknown_names_lm_eval_rejects_are_one_line_too(tmp_path):
    done, _ = _cli(["run", "--model", "bias-probe", "--tasks", "no_such_task_anywhere_xyz"], _env(tmp_path, **OFFLINE),
                   timeout=300)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (
        "error: Tasks not found: no_such_task_anywhere_xyz; `lm-eval-bias ls tasks` lists them")
    assert "Traceback" not in done.stderr
