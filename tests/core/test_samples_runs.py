"""`samples.load_records` reads one run: several runs in one output folder are never concatenated
(the newest is used with a warning naming the others, `run=` picks one, runs of several models are an
error), shards of one sharded run merge, and strict / lenient answer extraction never mix.

Folders are laid out as lm-eval 0.4.13 writes them: `<output_path>/<model_name_sanitized>/` holding
`results_<stamp>.json` and `samples_<task>_<stamp>.jsonl`, stamp = `datetime.isoformat()` with `-` for
`:`; the results JSON's `config.model_args` and `configs.<task>.metadata` (model_args merged in, plus
`shard` when `--metadata '{"shard": "i/n"}'`). The last test checks that layout on real runs."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import pytest

from lm_eval_bias import samples
from lm_eval_bias.samples import RunSelectionWarning

TASK = "focus_mcq_education"
OLD, NEW = "2025-01-31T10-00-00.000001", "2025-02-01T09-30-15.123456"


def fake_run(root: Path, stamp: str, docs, *, task: str = TASK, model: str = "bias-probe", model_args=None,
             shard: str | None = None, extraction: str | None = None, folder: str | None = None,
             with_results: bool = True, gen_kwargs=None, seed: int | None = None) -> Path:
    """One lm-eval run of ``task`` over ``docs`` (plugin doc ids), written as lm-eval writes it."""
    model_args = {"seed": 1} if model_args is None else model_args
    key = samples._record_key(task)  # the result key under which each sample carries its record
    out = root / (folder or "abcd1234")  # lm-eval's model_name_sanitized (a random id for bias-probe)
    out.mkdir(parents=True, exist_ok=True)
    meta = {"version": 1.0, **model_args, "config_source": f"/somewhere/task_yamls/{task}.yaml"}
    if shard:
        meta["shard"] = shard
    if with_results:
        results = {
            "results": {task: {"alias": task, f"{key},none": 1.0}},
            "configs": {task: {"task": task, "generation_kwargs": {"until": ["\n\n"], "max_gen_toks": 8},
                               "metadata": meta}},
            "versions": {task: 1.0}, "n-shot": {task: 0},
            "n-samples": {task: {"original": 20, "effective": len(docs)}},
            "config": {"model": model, "model_args": model_args, "batch_size": 1, "device": "cpu", "limit": None,
                       "gen_kwargs": gen_kwargs or {},
                       **({} if seed is None else {"random_seed": seed, "numpy_seed": seed, "torch_seed": seed,
                                                   "fewshot_seed": seed})},
            "model_name": out.name, "model_name_sanitized": out.name, "chat_template_sha": None,
            "system_instruction_sha": None, "fewshot_as_multiturn": None,
        }
        (out / f"results_{stamp}.json").write_text(json.dumps(results, indent=2))
    lines = []
    for n, doc in enumerate(docs):
        record = {"doc_id": doc, "status": "valid", "run": stamp}
        if extraction:
            record["extraction"] = extraction
        lines.append(json.dumps({"doc_id": n, "doc": {"doc_id": doc, "variant": "education"}, "target": "",
                                 "resps": [["A"]], "filtered_resps": ["A"], "doc_hash": f"h{doc}", key: record}))
    path = out / f"samples_{task}_{stamp}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_two_runs_newest_with_a_warning_and_run_selects(tmp_path):
    fake_run(tmp_path, OLD, ["a", "b"], folder="x1")
    fake_run(tmp_path, NEW, ["a", "b", "c"], folder="x2")
    with pytest.warns(RunSelectionWarning) as caught:
        records = samples.load_records(tmp_path, TASK)
    assert [r["run"] for r in records] == [NEW] * 3  # not 5 records of two runs
    message = str(caught[0].message)
    assert OLD in message and "newest" in message and "run=" in message
    assert caught[0].filename == __file__  # points at the caller's line

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [r["run"] for r in samples.load_records(tmp_path, TASK, run=OLD)] == [OLD] * 2
        older_results = tmp_path / "x1" / f"results_{OLD}.json"
        assert [r["run"] for r in samples.load_records(tmp_path, TASK, run=older_results)] == [OLD] * 2
        assert samples.sample_files(tmp_path, TASK, run=NEW) == [tmp_path / "x2" / f"samples_{TASK}_{NEW}.jsonl"]
    with pytest.raises(ValueError, match="matches none of the runs"):
        samples.load_records(tmp_path, TASK, run="2024-01-01T00-00-00")
    with pytest.raises(ValueError, match="not one run or the shards of one sharded run"):
        samples.load_records(tmp_path, TASK, run=[OLD, NEW])


def test_shards_of_one_run_merge(tmp_path):
    stamps = ["2025-03-01T10-00-00.000001", "2025-03-01T11-00-00.000002", "2025-03-02T08-00-00.000003"]
    docs = [["a", "d"], ["b", "e"], ["c"]]
    for i, (stamp, part) in enumerate(zip(stamps, docs)):
        # shards may run on different machines / servers: other folders, other base_url
        fake_run(tmp_path / f"shard{i}", stamp, part, model="local-chat-completions",
                 model_args={"model": "qwen", "base_url": f"http://10.0.0.{i}:8000/v1"}, shard=f"{i}/3", folder="qwen")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        records = samples.load_records(tmp_path, TASK)
    assert sorted(r["doc_id"] for r in records) == ["a", "b", "c", "d", "e"]
    assert len(samples.sample_files(tmp_path, TASK)) == 3
    # explicitly: all shards, by stamp
    assert len(samples.load_records(tmp_path, TASK, run=stamps)) == 5
    # a missing shard is said
    (tmp_path / "shard2" / "qwen" / f"samples_{TASK}_{stamps[2]}.jsonl").unlink()
    with pytest.warns(RunSelectionWarning, match="only 2 of 3 shards"):
        assert len(samples.load_records(tmp_path, TASK)) == 4


def test_shards_with_other_settings_are_separate_runs(tmp_path):
    fake_run(tmp_path, OLD, ["a"], shard="0/2", folder="p")
    fake_run(tmp_path, NEW, ["b"], shard="1/2", folder="q", model_args={"seed": 2})  # another planted model
    with pytest.raises(ValueError, match="ambiguous: runs of 2 models"):
        samples.load_records(tmp_path, TASK)


def test_runs_of_different_models_are_an_error_listing_them(tmp_path):
    for stamp, name in ((OLD, "model-a"), (NEW, "model-b")):
        fake_run(tmp_path, stamp, ["a", "b"], model="hf-multimodal", model_args={"pretrained": f"org/{name}"},
                 folder=f"org__{name}")
    with pytest.raises(ValueError) as err:
        samples.load_records(tmp_path, TASK)
    message = str(err.value)
    assert "ambiguous" in message and "org/model-a" in message and "org/model-b" in message
    assert OLD in message and NEW in message
    # one model's folder, or run=, is fine
    assert len(samples.load_records(tmp_path / "org__model-b", TASK)) == 2
    assert [r["run"] for r in samples.load_records(tmp_path, TASK, run=OLD)] == [OLD, OLD]


def test_strict_and_lenient_records_never_merge(tmp_path):
    fake_run(tmp_path, OLD, ["a"], shard="0/2", folder="p")  # no "extraction": strict
    fake_run(tmp_path, NEW, ["b"], shard="1/2", folder="p", extraction="lenient")
    with pytest.raises(ValueError, match="different answer extraction") as err:
        samples.load_records(tmp_path, TASK)
    assert "strict" in str(err.value) and "lenient" in str(err.value)
    # explicit "strict" is the same as missing
    (tmp_path / "p" / f"samples_{TASK}_{NEW}.jsonl").unlink()
    fake_run(tmp_path, NEW, ["b"], shard="1/2", folder="p", extraction="strict")
    assert len(samples.load_records(tmp_path, TASK)) == 2


def test_a_doc_in_two_shards_is_an_error(tmp_path):
    fake_run(tmp_path, OLD, ["a", "b"], shard="0/2", folder="p")
    fake_run(tmp_path, NEW, ["b", "c"], shard="1/2", folder="p")
    with pytest.raises(ValueError, match="doc_id b occurs in"):
        samples.load_records(tmp_path, TASK)


def test_a_shard_present_twice_is_ambiguous(tmp_path):
    fake_run(tmp_path, OLD, ["a"], shard="0/2", folder="p")
    fake_run(tmp_path, NEW, ["a"], shard="0/2", folder="p")
    fake_run(tmp_path, "2025-02-02T00-00-00.5", ["b"], shard="1/2", folder="p")
    with pytest.raises(ValueError, match="shard 0/2 found in several runs"):
        samples.load_records(tmp_path, TASK)
    assert len(samples.load_records(tmp_path, TASK, run=[NEW, "2025-02-02T00-00-00.5"])) == 2


def test_runs_that_cannot_be_ordered_are_an_error(tmp_path):
    fake_run(tmp_path, "first", ["a"], folder="p")
    fake_run(tmp_path, "second", ["a"], folder="q")
    with pytest.raises(ValueError, match="cannot be ordered"):
        samples.load_records(tmp_path, TASK)


def test_files_without_results_json(tmp_path):
    # hand-copied shard files (tests/core/test_sharding.py writes these): merged, with a warning
    fake_run(tmp_path / "s0", "x", ["a"], with_results=False)
    fake_run(tmp_path / "s1", "x", ["b"], with_results=False)
    with pytest.warns(RunSelectionWarning, match="without results JSON merged"):
        assert len(samples.load_records(tmp_path, TASK)) == 2
    # ... but two runs over the same docs are refused, and a single file is just read
    fake_run(tmp_path / "s2", "x", ["a"], with_results=False)
    with pytest.raises(ValueError, match="doc_id a occurs in"), pytest.warns(RunSelectionWarning):
        samples.load_records(tmp_path, TASK)
    only = tmp_path / "s2" / "abcd1234" / f"samples_{TASK}_x.jsonl"
    assert len(samples.load_records(only, TASK)) == 1
    # next to identified runs they are ambiguous
    fake_run(tmp_path / "s3", NEW, ["c"])
    with pytest.raises(ValueError, match="ambiguous: some samples files have no results JSON"):
        samples.load_records(tmp_path, TASK)


def test_another_tasks_samples_are_not_picked_up(tmp_path):
    """`samples_vignette_decision_*` also matches vignette_decision_textonly's files."""
    fake_run(tmp_path, OLD, ["a"], task="vignette_decision")
    fake_run(tmp_path, NEW, ["b"], task="vignette_decision_textonly")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [r["doc_id"] for r in samples.load_records(tmp_path, "vignette_decision")] == ["a"]


@pytest.mark.slow
def test_real_lm_eval_output_folders(focus_env, tmp_path, monkeypatch):
    """Two runs and a two-shard run written by the real CLI into shared --output_path folders."""
    from lm_eval_bias.cli import main

    monkeypatch.setenv("LM_EVAL_BIAS_BOOTSTRAP_ITERS", "10")
    base = ["run", "--model", "bias-probe", "--model_args", "seed=1", "--tasks", TASK, "--limit", "4",
            "--device", "cpu", "--log_samples"]
    for _ in range(2):
        main(base + ["--output_path", str(tmp_path / "twice")])
    for i in range(2):
        main(base + ["--output_path", str(tmp_path / "sharded"), "--metadata", json.dumps({"shard": f"{i}/2"})])
    layout = sorted(p.relative_to(tmp_path / "twice").as_posix() for p in (tmp_path / "twice").rglob("*.json*"))
    assert len(layout) == 4 and all(re.fullmatch(r"\w+/(results|samples_" + TASK + r")_[\dT.-]+\.jsonl?", p) for p in layout)

    runs = samples.find_runs(tmp_path / "twice", TASK)
    assert len(runs) == 2 and runs[0].when < runs[1].when and runs[0].model == runs[1].model == "bias-probe (seed=1)"
    with pytest.warns(RunSelectionWarning, match=re.escape(runs[0].stamp)):
        assert len(samples.load_records(tmp_path / "twice", TASK)) == 4  # not 8
    assert len(samples.load_records(tmp_path / "twice", TASK, run=runs[0].stamp)) == 4

    shards = samples.find_runs(tmp_path / "sharded", TASK)
    assert sorted(r.shard for r in shards) == [(0, 2), (1, 2)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        merged = samples.load_records(tmp_path / "sharded", TASK)
    assert len(merged) == 8 and len({(r["template"], r["group"]) for r in merged}) == 8


def test_lenient_runs_carry_their_own_model_label():
    from lm_eval_bias.samples import model_label

    base = {"config": {"model": "hf-multimodal", "model_args": "pretrained=org/vlm"},
            "configs": {"focus_2afc_income": {"metadata": {"version": 1.0}}}}
    lenient = {**base, "configs": {"focus_2afc_income": {"metadata": {"answer_extraction": "lenient"}}}}
    assert model_label(base) == "org/vlm"
    assert model_label(lenient) == "org/vlm [lenient]"


SAMPLING = {"do_sample": True, "temperature": 0.7}


def test_runs_differing_only_in_seed_with_sampling_merge_as_replicates(tmp_path):
    """App. C.5: repeated sampling across runs. Two sampled runs that differ only in their seeds merge,
    each record marked with its replicate; the same doc may occur once per run."""
    fake_run(tmp_path, OLD, ["a", "b"], folder="x1", gen_kwargs=SAMPLING, seed=1)
    fake_run(tmp_path, NEW, ["a", "b"], folder="x2", gen_kwargs=SAMPLING, seed=2)
    with pytest.warns(RunSelectionWarning, match="differing only in their seeds"):
        records = samples.load_records(tmp_path, TASK)
    assert [(r["run"], r["replicate"]) for r in records] == [(OLD, 0), (OLD, 0), (NEW, 1), (NEW, 1)]
    with pytest.warns(RunSelectionWarning, match="merged as repeated samples"):
        assert len(samples.load_records(tmp_path, TASK, run=[OLD, NEW])) == 4


@pytest.mark.parametrize("second", [
    {"gen_kwargs": SAMPLING, "seed": 1},  # same seed: a re-run, not a replicate
    {"gen_kwargs": {}, "seed": 2},  # greedy decoding: more samples carry no information
    {"gen_kwargs": {**SAMPLING, "temperature": 0.9}, "seed": 2},  # other settings
])
def test_runs_that_are_not_seed_replicates_are_never_merged(tmp_path, second):
    fake_run(tmp_path, OLD, ["a", "b"], folder="x1", gen_kwargs=SAMPLING, seed=1)
    fake_run(tmp_path, NEW, ["a", "b"], folder="x2", **second)
    with pytest.warns(RunSelectionWarning, match="newest"):
        records = samples.load_records(tmp_path, TASK)
    assert [r["run"] for r in records] == [NEW, NEW] and all("replicate" not in r for r in records)


def test_replicate_records_count_as_samples_in_the_statistics():
    """Two replicates of a 2AFC pair: AB of one replicate pairs with BA of the same replicate only."""
    from lm_eval_bias.reflect import tasks as reflect

    def call(order, choice, replicate):
        return {"template": "ceo/1", "occupation": "ceo", "pair_id": "ceo/1:0-1", "order": order,
                "group_a": 0 if order == "AB" else 1, "group_b": 1 if order == "AB" else 0, "status": "valid",
                "choice": choice, "replicate": replicate}

    # replicate 0 consistent (picks group 0 both times), replicate 1 consistent (group 1)
    records = [call("AB", "A", 0), call("BA", "B", 0), call("AB", "B", 1), call("BA", "A", 1)]
    expanded = reflect.expand_samples(records)
    assert sorted({r["pair_id"] for r in expanded}) == ["ceo/1:0-1#0.0", "ceo/1:0-1#1.0"]
    from lm_eval_bias.reflect.twoafc import TwoAFCCall, resolve_swaps

    outcomes = resolve_swaps([TwoAFCCall.from_dict(r) for r in expanded])
    assert [o.outcome for o in outcomes] == ["retained", "retained"]
    assert sorted(o.winner for o in outcomes) == [0, 1]


def test_records_of_different_prompt_settings_never_merge(tmp_path):
    """REFLECT framings (App. C.1) and MCQ response formats (App. C.4) are separate results even when
    their files are handed over as shards."""
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    key = samples._record_key(TASK)
    for path, doc, fmt in ((a, "x", "letter"), (b, "y", "explained")):
        path.write_text(json.dumps({"doc": {"doc_id": doc}, key: {"status": "valid", "response_format": fmt}}) + "\n")
    with pytest.raises(ValueError, match="different response_format"):
        samples.read_records([a, b], TASK)
    assert len(samples.read_records([a], TASK)) == 1
