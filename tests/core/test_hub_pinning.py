"""Hub copies of a dataset: resolved to a commit, recorded in every doc, checked against the builder's
card, pinned with --metadata. Offline: the Hub calls are recorded on huggingface_hub's HfApi object,
whose snapshot_download hands out a copy of a dataset built here by the real builder."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

import lm_eval_bias
from lm_eval_bias.core import data

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def fake_hub(small_focus_data, tmp_path, monkeypatch):
    """A Hub that holds `org/focus` (the small synthetic FOCUS build) at COMMIT; returns the call log
    and the folder its snapshots are copied from (tests may damage it)."""
    import huggingface_hub
    from huggingface_hub import HfApi

    source = tmp_path / "repo"
    shutil.copytree(small_focus_data / "focus", source)
    calls: list[tuple] = []

    def dataset_info(self, repo_id, revision=None, timeout=None, **_):
        calls.append(("dataset_info", repo_id, revision))
        if repo_id != "org/focus":
            import httpx
            from huggingface_hub.errors import RepositoryNotFoundError

            url = f"https://huggingface.co/api/datasets/{repo_id}"
            raise RepositoryNotFoundError(f"404 {repo_id}", response=httpx.Response(404, request=httpx.Request("GET", url)))
        return SimpleNamespace(sha=COMMIT if revision in (None, "main", "v1") else "f" * 40, id=repo_id)

    def snapshot_download(self, repo_id, repo_type=None, revision=None, local_files_only=False, **_):
        calls.append(("snapshot_download", repo_id, revision, repo_type))
        target = tmp_path / "snapshots" / str(revision)
        if not target.exists():
            shutil.copytree(source, target)
        return str(target)

    monkeypatch.setattr(HfApi, "dataset_info", dataset_info)
    monkeypatch.setattr(HfApi, "snapshot_download", snapshot_download)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE", "LM_EVAL_BIAS_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf_cache"))  # nothing cached: every read asks the Hub
    for cache in ("_RESOLVED", "_VERIFIED", "_HUB_CHECKED", "_SPLIT_CACHE", "_STORES", "_PINS"):
        monkeypatch.setattr(data, cache, {})
    monkeypatch.setattr(data, "_in_local_hf_cache", lambda repo_id: False)
    monkeypatch.setattr(data, "_hub_offline", lambda: False)  # conftest sets HF_HUB_OFFLINE; this Hub is local
    return SimpleNamespace(calls=calls, source=source)


def test_a_hub_dataset_is_resolved_to_a_commit_recorded_in_every_doc(fake_hub):
    import lm_eval

    from lm_eval_bias.core.registration import register_plugin

    register_plugin()
    out = lm_eval.simple_evaluate(model="bias-probe", tasks=["focus_2afc_income"], limit=4, log_samples=True,
                                  task_manager=lm_eval_bias.task_manager(metadata={"hub_id": "org/focus"}))
    docs = [s["doc"] for s in out["samples"]["focus_2afc_income"]]
    assert len(docs) == 4 and {d["images_from"] for d in docs} == {f"org/focus@{COMMIT}"}
    assert ("dataset_info", "org/focus", None) in fake_hub.calls
    # files are fetched at the resolved commit, never at a moving branch
    assert {c[2] for c in fake_hub.calls if c[0] == "snapshot_download"} == {COMMIT}
    assert out["results"]["focus_2afc_income"]["retained_rate,none"] == 1.0


def test_metadata_hub_revision_pins_the_revision(fake_hub):
    from lm_eval.tasks import TaskManager

    from lm_eval_bias.core.registration import register_plugin

    register_plugin()
    TaskManager(include_path=[str(lm_eval_bias.tasks_dir())], include_defaults=False,
                metadata={"hub_id": "org/focus", "hub_revision": "v1"})
    assert data.resolve_dataset_location("focus", "org/focus") == f"org/focus@{COMMIT}"
    assert ("dataset_info", "org/focus", "v1") in fake_hub.calls
    # an `@revision` in the id pins too; a full commit sha is used as is (no call)
    assert data.resolve_dataset_location("focus", "org/focus@other") == f"org/focus@{'f' * 40}"
    n = len(fake_hub.calls)
    assert data.resolve_dataset_location("focus", f"org/focus@{'a' * 40}") == f"org/focus@{'a' * 40}"
    assert [c for c in fake_hub.calls[n:] if c[0] == "dataset_info"] == []


def test_the_files_match_the_builders_card(fake_hub):
    ds = data.load_split("focus", "org/focus")
    assert len(ds) == 40  # 2 occupations x 2 templates x 10 race-gender cells
    listed = data.card_file_manifest(fake_hub.source)
    assert listed == data.file_manifest(fake_hub.source) and all(p.startswith("data/") for p in listed)
    identity = data.dataset_identity(f"org/focus@{COMMIT}")
    assert identity == {"hub_id": "org/focus", "revision": COMMIT, "manifest_sha256": data.manifest_digest(listed)}


def _one_line_refusal(exc: pytest.ExceptionInfo) -> str:
    text = str(exc.value)
    assert "\n" not in text
    return text


def test_a_repository_without_a_builder_card_is_refused(fake_hub):
    (fake_hub.source / "README.md").write_text("# someone's dataset\n")
    with pytest.raises(data.DataSourceError) as exc:
        data.load_split("focus", "org/focus")
    assert f"Hub dataset org/focus@{COMMIT}: refused: no lm-eval-bias builder card" in _one_line_refusal(exc)


def test_a_changed_file_is_refused(fake_hub):
    (shard,) = (fake_hub.source / "data").glob("*.parquet")
    shard.write_bytes(shard.read_bytes() + b"\0")
    with pytest.raises(data.DataSourceError) as exc:
        data.load_split("focus", "org/focus")
    assert "refused: 1 data file(s) sha256 differs from the card: data/test-" in _one_line_refusal(exc)


def test_an_unlisted_file_is_refused(fake_hub):
    (fake_hub.source / "data" / "test-extra.parquet").write_bytes(b"PAR1")
    with pytest.raises(data.DataSourceError) as exc:
        data.load_split("focus", "org/focus")
    assert "refused: 1 data file(s) not listed in the card: data/test-extra.parquet" in _one_line_refusal(exc)


def test_a_missing_repository_fails_with_the_way_out(fake_hub):
    with pytest.raises(data.DataSourceError) as exc:
        data.resolve_dataset_location("focus", "org/nothing")
    text = _one_line_refusal(exc)
    assert "'org/nothing'" in text and "does not exist on the Hub" in text and "lm-eval-bias build focus" in text
