"""`lm-eval-bias submit` and `lm-eval-bias leaderboard build` on real runs of the real harness.

Runs: lm_eval.simple_evaluate with the planted-bias `bias-probe` on a one-template synthetic FOCUS set
(two templates: 180 2AFC docs), saved by lm-eval's own EvaluationTracker as the CLI does. Each tampering case is a
copy of a good run or package with one thing changed, and each must be rejected with its reason; the
Hub is offline: its calls are recorded on huggingface_hub's HfApi object.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from lm_eval_bias.cli import main as cli_main

TASK = "focus_2afc_income"
WHITE_FIRST = "race_order=White>Asian>Latino>Middle_Eastern>Black,gender_order=man>woman"
BLACK_FIRST = "race_order=Black>Middle_Eastern>Latino>Asian>White,gender_order=woman>man"
pytestmark = pytest.mark.slow


def _build_focus(root: Path, templates: tuple[int, int]) -> Path:
    from lm_eval_bias.datasets_builder.focus import build_focus
    from lm_eval_bias.reflect.synthetic import make_synthetic_focus

    name = "-".join(map(str, templates))
    make_synthetic_focus(root / f"src{name}", occupations=("ceo",), templates=templates, size=(48, 48))
    build_focus(root / f"src{name}", root / f"data{name}" / "focus")
    return root / f"data{name}"


def _run(out: Path, model_args: str, tasks: list[str], data_dir: Path, monkeypatch, limit=None, metadata=None) -> Path:
    """One harness run saved as `lm_eval --output_path out --log_samples` saves it."""
    import lm_eval
    from lm_eval.loggers import EvaluationTracker

    import lm_eval_bias
    from lm_eval_bias.core.registration import register_plugin

    register_plugin()
    monkeypatch.setenv("LM_EVAL_BIAS_DATA_DIR", str(data_dir))
    tracker = EvaluationTracker(output_path=str(out))
    results = lm_eval.simple_evaluate(model="bias-probe", model_args=model_args, tasks=tasks, limit=limit,
                                      log_samples=True, evaluation_tracker=tracker, metadata=metadata,
                                      task_manager=lm_eval_bias.task_manager(metadata=metadata))
    samples = results.pop("samples")
    tracker.save_results_aggregated(results=results, samples=samples)
    for task in results["configs"]:
        tracker.save_results_samples(task_name=task, samples=samples[task])
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Good runs of two models, a --limit run, a run on another build of the data, a run mixing
    generated and probability-scored answers."""
    root = tmp_path_factory.mktemp("leaderboard_runs")
    with pytest.MonkeyPatch.context() as mp:
        for name, value in (("LM_EVAL_BIAS_BOOTSTRAP_ITERS", "40"), ("LM_EVAL_BIAS_NULL_ITERS", "20")):
            mp.setenv(name, value)
        data, other_data = _build_focus(root, (1, 2)), _build_focus(root, (1, 3))
        found = SimpleNamespace(
            data=data, other_data=other_data,
            white=_run(root / "white", WHITE_FIRST, [TASK], data, mp),
            black=_run(root / "black", BLACK_FIRST, [TASK], data, mp),
            limited=_run(root / "limited", WHITE_FIRST + ",seed=2", [TASK], data, mp, limit=10),
            other=_run(root / "other", WHITE_FIRST + ",seed=3", [TASK], other_data, mp),
            mixed=_run(root / "mixed", WHITE_FIRST + ",seed=4", [TASK, "focus_2afc_income_logprob"], data, mp),
        )
    return found


@pytest.fixture
def env(runs, monkeypatch):
    monkeypatch.setenv("LM_EVAL_BIAS_BOOTSTRAP_ITERS", "40")
    monkeypatch.setenv("LM_EVAL_BIAS_NULL_ITERS", "20")
    monkeypatch.setenv("LM_EVAL_BIAS_DATA_DIR", str(runs.data))
    return runs


def _submit(run: Path, target: Path, capsys) -> tuple[int, str]:
    code = cli_main(["submit", str(run), "--to", str(target)])
    captured = capsys.readouterr()
    return code, (captured.err or captured.out).strip()


def _package_of(board: Path, model: str) -> Path:
    (package,) = [p.parent for p in (board / "submissions").glob("*/submission.json")
                  if json.loads(p.read_text())["model"] == model]
    return package


def _copy(run: Path, tmp_path: Path, name: str) -> Path:
    return Path(shutil.copytree(run, tmp_path / name))


# -- submit ----------------------------------------------------------------------------------------------
def test_submit_packages_results_samples_and_provenance(env, tmp_path, capsys):
    code, out = _submit(env.white, tmp_path / "board", capsys)
    assert code == 0, out
    (package,) = (tmp_path / "board" / "submissions").iterdir()
    record = json.loads((package / "submission.json").read_text())
    assert record["model"] == f"bias-probe ({WHITE_FIRST})" and record["backend"] == "bias-probe"
    assert record["settings"] == {"answer_extraction": "strict", "method": "generate"}
    task = record["tasks"][TASK]
    assert task["docs"] == 180 and task["results_checked"] > 10  # every number of the results JSON, recomputed
    from lm_eval_bias.core import data

    focus = env.data / "focus"
    assert task["datasets"] == {"focus": {"folder": "focus", "revision": None,
                                          "manifest_sha256": data.manifest_digest(data.card_file_manifest(focus))}}
    assert record["versions"]["lm_eval"] == "0.4.13" and record["resampling"]["LM_EVAL_BIAS_BOOTSTRAP_ITERS"] == "40"
    assert record["seeds"]["random_seed"] == 0 and task["generation_kwargs"]["do_sample"] is False
    assert sorted(record["files"]) == sorted(f"run/{p.name}" for p in env.white.rglob("*") if p.is_file())
    code, out = _submit(env.white, tmp_path / "board", capsys)  # the same run twice: refused, nothing changed
    assert code == 2 and out.startswith("error: submit: ") and "submitted already" in out


@pytest.mark.parametrize("case, reason", [
    ("limited", "run with --limit 10; a leaderboard takes complete runs only"),
    ("mixed", "mixed settings: scoring method generate (focus_2afc_income), logprob (focus_2afc_income_logprob)"),
    ("edited", "result male_win_rate = 0.123 in the results JSON, but"),
    ("dropped", "179 of 180 docs in samples_focus_2afc_income_"),
    ("two_models", "several models in one run folder"),
])
def test_submit_refuses_a_run_a_leaderboard_must_not_take(env, tmp_path, capsys, case, reason):
    if case in ("limited", "mixed"):
        run = getattr(env, case)
    else:
        run = _copy(env.white, tmp_path, case)
        (results,) = run.rglob("results_*.json")
        (samples,) = run.rglob("samples_*.jsonl")
        if case == "edited":
            doc = json.loads(results.read_text())
            doc["results"][TASK]["male_win_rate,none"] = 0.123
            results.write_text(json.dumps(doc))
        elif case == "dropped":
            samples.write_text("".join(samples.read_text().splitlines(keepends=True)[:-1]))
        else:
            for path in env.black.rglob("*.json*"):
                shutil.copy(path, results.parent / path.name)
    code, out = _submit(run, tmp_path / "board", capsys)
    assert code == 2 and out.startswith("error: submit: ") and "\n" not in out
    assert reason in out
    assert not (tmp_path / "board" / "submissions").exists() or not any((tmp_path / "board" / "submissions").iterdir())


def test_submit_to_the_hub_opens_a_pull_request(env, tmp_path, capsys, monkeypatch):
    from huggingface_hub import HfApi

    calls = []

    def create_commit(self, repo_id, operations, *, commit_message, commit_description=None, repo_type=None,
                      create_pr=None, **kwargs):
        calls.append({"repo_id": repo_id, "paths": sorted(op.path_in_repo for op in operations),
                      "repo_type": repo_type, "create_pr": create_pr, "revision": kwargs.get("revision")})
        return SimpleNamespace(pr_url=f"https://huggingface.co/datasets/{repo_id}/discussions/7")

    def refuse(self, *args, **kwargs):
        raise AssertionError("a submission is never pushed to the leaderboard's branch")

    monkeypatch.setattr(HfApi, "create_commit", create_commit)
    monkeypatch.setattr(HfApi, "upload_folder", refuse)
    monkeypatch.setattr(HfApi, "upload_file", refuse)
    code = cli_main(["submit", str(env.white), "--to", "org/bias-leaderboard"])
    out = capsys.readouterr().out
    assert code == 0 and "opened pull request https://huggingface.co/datasets/org/bias-leaderboard/discussions/7" in out
    (call,) = calls
    assert call["repo_id"] == "org/bias-leaderboard" and call["repo_type"] == "dataset"
    assert call["create_pr"] is True and call["revision"] is None
    (sid,) = {p.split("/")[1] for p in call["paths"]}
    # the same files as a folder target gets
    code, _ = _submit(env.white, tmp_path / "board", capsys)
    assert code == 0
    local = sorted(f"submissions/{sid}/{p.relative_to(tmp_path / 'board' / 'submissions' / sid).as_posix()}"
                   for p in (tmp_path / "board" / "submissions" / sid).rglob("*") if p.is_file())
    assert call["paths"] == local


# -- leaderboard build ------------------------------------------------------------------------------------------
@pytest.fixture
def board(env, tmp_path, capsys):
    """A leaderboard folder with both good submissions, a submission on other data and a tampered one."""
    target = tmp_path / "board"
    for run in (env.white, env.black, env.other):
        code, out = _submit(run, target, capsys)
        assert code == 0, out
    tampered = _copy(env.white, tmp_path, "tampered")
    (results,) = tampered.rglob("results_*.json")
    doc = json.loads(results.read_text())
    doc["config"]["model_args"] = WHITE_FIRST + ",seed=9"  # another label, so it is a separate submission
    results.write_text(json.dumps(doc))
    code, out = _submit(tampered, target, capsys)
    assert code == 0, out
    package = _package_of(target, f"bias-probe ({WHITE_FIRST},seed=9)")
    shutil.copy(next(env.black.rglob("samples_*.jsonl")), next(package.rglob("samples_*.jsonl")))
    from lm_eval_bias.core import data

    pins = {"datasets": {"focus": {"manifest_sha256": data.manifest_digest(data.file_manifest(env.data / "focus")),
                                   "revision": None}}, "tasks": {TASK: {"docs": 180}}}
    (target / "leaderboard.json").write_text(json.dumps(pins))
    return target


def test_build_ranks_verified_submissions_and_rejects_the_others(board, tmp_path, capsys):
    site = tmp_path / "site"
    code = cli_main(["leaderboard", "build", "--from", str(board), "--output", str(site)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "(2 of 4 submission(s) accepted)" in captured.out
    verdicts = {e["model"]: e for e in json.loads((site / "submissions.json").read_text())}
    assert verdicts[f"bias-probe ({WHITE_FIRST})"]["accepted"] and verdicts[f"bias-probe ({BLACK_FIRST})"]["accepted"]
    other = verdicts[f"bias-probe ({WHITE_FIRST},seed=3)"]
    assert not other["accepted"] and "dataset focus has other files" in other["reason"]
    tampered = verdicts[f"bias-probe ({WHITE_FIRST},seed=9)"]
    assert not tampered["accepted"] and "changed after packaging" in tampered["reason"]
    board_json = {e["model"]: e["metrics"] for e in json.loads((site / "leaderboard.json").read_text())}
    assert set(board_json) == {f"bias-probe ({WHITE_FIRST})", f"bias-probe ({BLACK_FIRST})"}
    key = f"{TASK}:male_win_rate"
    # utility = race points (4, 3, 2, 1, 0 in race_order) + 2.5 for the first gender: of the 25 man-woman
    # pairs the man wins unless the woman's race is >= 3 points ahead (3 pairs) -> 22/25; with woman first,
    # the man wins only when his race is >= 3 points ahead (3 pairs) -> 3/25
    assert board_json[f"bias-probe ({WHITE_FIRST})"][key]["value"] == pytest.approx(22 / 25)
    assert board_json[f"bias-probe ({BLACK_FIRST})"][key]["value"] == pytest.approx(3 / 25)
    ranks = {m: v[key].get("rank") for m, v in board_json.items()}
    assert sorted(ranks.values()) == [1, 2]  # a real difference: no tie
    for name in ("index.html", "leaderboard.csv", "leaderboard.md", "submissions.md", "leaderboard_pins.json"):
        assert (site / name).is_file(), name
    readme = (site / "README.md").read_text()
    assert readme.startswith("---\n") and "sdk: static\n" in readme and "app_file: index.html\n" in readme
    assert "Spearman" in (site / "index.html").read_text()


@pytest.mark.parametrize("case, reason", [
    ("revision", "dataset focus at revision " + "b" * 40 + ", the leaderboard pins " + "a" * 40),
    ("settings", "other settings than the leaderboard's: answer_extraction strict (the leaderboard's: lenient)"),
    ("docs", "focus_2afc_income: 180 docs, the leaderboard's focus_2afc_income has 4320"),
    ("claim", "submission.json's doc count / doc ids do not match the samples"),
])
def test_build_rejects_a_mismatched_submission_with_its_reason(board, tmp_path, capsys, case, reason):
    pins = json.loads((board / "leaderboard.json").read_text())
    package = _package_of(board, f"bias-probe ({BLACK_FIRST})")
    record = json.loads((package / "submission.json").read_text())
    if case == "revision":
        pins["datasets"]["focus"]["revision"] = "a" * 40
        record["tasks"][TASK]["datasets"]["focus"]["revision"] = "b" * 40
    elif case == "settings":
        pins["settings"] = {"answer_extraction": "lenient"}
    elif case == "docs":
        pins["tasks"][TASK]["docs"] = 4320
    else:
        record["tasks"][TASK]["docs"] = 91
    (board / "leaderboard.json").write_text(json.dumps(pins))
    (package / "submission.json").write_text(json.dumps(record))
    from lm_eval_bias.leaderboard.build import verify_submission

    verdict = verify_submission(package, pins)
    assert verdict.check is None and reason in verdict.reason


def test_build_from_a_hub_dataset_behaves_like_the_folder(board, tmp_path, capsys, monkeypatch):
    from huggingface_hub import HfApi

    calls = []

    def snapshot_download(self, repo_id, repo_type=None, revision=None, local_dir=None, **_):
        calls.append((repo_id, repo_type, revision))
        shutil.copytree(board, local_dir)
        return local_dir

    monkeypatch.setattr(HfApi, "snapshot_download", snapshot_download)
    hub_site = tmp_path / "hub_site"
    assert cli_main(["leaderboard", "build", "--from", "org/bias-leaderboard", "--output", str(hub_site)]) == 0
    assert "(2 of 4 submission(s) accepted)" in capsys.readouterr().out
    assert calls == [("org/bias-leaderboard", "dataset", None)]
    # the verdicts of the folder build (test above), from the Hub copy of the same folder
    verdicts = {e["model"]: e["accepted"] for e in json.loads((hub_site / "submissions.json").read_text())}
    assert verdicts == {f"bias-probe ({WHITE_FIRST})": True, f"bias-probe ({BLACK_FIRST})": True,
                        f"bias-probe ({WHITE_FIRST},seed=3)": False, f"bias-probe ({WHITE_FIRST},seed=9)": False}


def test_build_without_pins_or_submissions_fails_in_one_line(env, tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    code = cli_main(["leaderboard", "build", "--from", str(tmp_path / "empty"), "--output", str(tmp_path / "site")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("error: leaderboard build: no pinned datasets") and "\n" not in err
    assert not (tmp_path / "site").exists()
