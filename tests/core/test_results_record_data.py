"""lm-eval's results JSON records which data a run read: every plugin task's ``configs.<task>.metadata``
carries ``datasets`` (dataset -> Hub id and commit, or local folder), as the docs do."""

from __future__ import annotations

import json

from lm_eval_bias.core import data
from tests.reflect.test_reflect_pipeline import run_probe


def test_results_configs_name_the_folder_each_task_read(focus_env):
    results = run_probe(["focus_2afc_income", "focus_mcq_salary"], limit=4)
    expected = {"focus": {"folder": str((focus_env / "focus").resolve())}}
    for task in ("focus_2afc_income", "focus_mcq_salary"):
        assert results["configs"][task]["metadata"]["datasets"]["focus"] == expected["focus"]
    json.dumps(results["configs"], default=str)  # lm-eval writes it as JSON


def test_a_hub_location_is_recorded_as_id_and_commit(monkeypatch):
    commit = "0123456789abcdef0123456789abcdef01234567"
    monkeypatch.delenv(data.DATA_DIR_ENV, raising=False)
    monkeypatch.setattr(data, "_READ", {})
    monkeypatch.setattr(data, "pinned_hub_location", lambda repo, revision=None, name=None: f"{repo}@{commit}")
    assert data.resolve_dataset_location("vignette", "org/vignette") == f"org/vignette@{commit}"
    assert data.datasets_read() == {"vignette": {"hub_id": "org/vignette", "revision": commit}}
