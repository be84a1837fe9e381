"""The fast subset of scripts/fuzz_commands.py: broken inputs of report, reflect-compare, vignette-import,
score fact-or-fair-t2i, run (misspelled model arguments), submit, replicate, build vignette-pata, generate
vignette and generate cf-vqa go through the real commands in-process,
and each must end in one ``error:`` line with nothing written, or succeed (with a ``warning`` when the
input was suspicious but usable) — never a traceback. Plus the stated rules, value by value: the
samples reader's deduplication, truncation and empty-file rules, and the report's notes for them."""

from __future__ import annotations

import importlib.util
import json
import sys
import warnings
from pathlib import Path

import pytest

from lm_eval_bias import samples
from lm_eval_bias.core.safe_io import InputError, read_jsonl_objects, read_text_file, staged_folder

ROOT = Path(__file__).resolve().parents[2]


def _fuzz_module():
    spec = importlib.util.spec_from_file_location("fuzz_commands", ROOT / "scripts" / "fuzz_commands.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("fuzz_commands", module)  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_quick_fuzz_of_every_command_meets_the_rule(tmp_path, monkeypatch):
    monkeypatch.setenv("LM_EVAL_BIAS_BOOTSTRAP_ITERS", "20")
    monkeypatch.setenv("LM_EVAL_BIAS_DATA_DIR", str(tmp_path / "unused"))  # make_inputs points it at its own data
    fuzz = _fuzz_module()
    outcomes = fuzz.fuzz(tmp_path, quick=True, verbose=False)
    bad = [f"{o.case.command} {o.case.name}: {o.detail}" for o in outcomes if o.kind == "mishandled"]
    assert not bad, "\n".join(bad)
    by = {(o.case.command, o.case.name): o for o in outcomes}
    assert {o.case.command for o in outcomes} == {"report", "reflect-compare", "vignette-import", "score", "run",
                                                  "submit", "replicate", "build vignette-pata", "generate vignette",
                                                  "generate cf-vqa"}
    assert len(outcomes) >= 29
    # the suspicious-but-usable inputs were used, and said so
    truncated = next(o for (c, n), o in by.items() if c == "report" and n.endswith(":last_line_cut"))
    assert truncated.kind == "warned"
    dropped = next(o for (c, n), o in by.items() if c == "reflect-compare" and n.endswith(":last_lines_dropped"))
    assert dropped.kind == "warned"
    # a misspelled model argument is the user's input: one specific line, with the suggestion
    probe = next(o for (c, n), o in by.items() if c == "run" and n.startswith("bias-probe"))
    assert probe.kind == "error" and probe.detail.startswith("error: --model_args: bias-probe: unknown model argument "
                                                             "'refusal_rat' (did you mean 'refusal_rate'?)")
    hf = next(o for (c, n), o in by.items() if c == "run" and n.startswith("hf-multimodal"))
    assert hf.kind == "error" and "did you mean 'pretrained' (--model_args has 'pretrainde')?" in hf.detail
    empty = next(o for (c, n), o in by.items() if c == "report" and n.endswith(":empty"))
    assert empty.kind == "error" and "no samples (the file is empty)" in empty.detail
    # the commands added later: specific error lines where the last-resort catch used to answer
    listed = next(o for (c, n), o in by.items() if c == "submit" and n.endswith(":list_line"))
    assert listed.kind == "error" and ": expected a JSON object, got [1, 2] (an edited samples file)" in listed.detail
    results = next(o for (c, n), o in by.items() if c == "submit" and n.endswith(":results_list"))
    assert results.kind == "error" and "not a results JSON (an object whose 'results' is an object)" in results.detail
    duplicated = next(o for (c, n), o in by.items() if c == "replicate" and n.endswith(":line_duplicated"))
    assert duplicated.kind == "warned"
    unreachable = by[("generate vignette", "backend:unreachable")]  # nothing made: no folder left holding a lock file
    assert unreachable.kind == "error" and unreachable.detail.startswith("error: generate vignette: 2 images failed")
    assert by[("generate vignette", "output:existing_file")].detail.endswith("is a file, expected a folder (choose "
                                                                             "another path)")
    assert by[("generate cf-vqa", "attributes.jsonl:null_line")].kind == "error"  # and no empty --workdir left behind
    assert "work folder not found; start with the attributes stage" in by[("generate cf-vqa",
                                                                            "describe:empty_workdir")].detail


# -- the rules, one by one -------------------------------------------------------------------------------------
def _sample(doc_id: str, status: str = "valid") -> dict:
    return {"doc_id": 0, "doc": {"doc_id": doc_id}, "resps": [["A"]], "valid_rate": {"status": status, "chosen": "A"}}


def test_text_rules(tmp_path):
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + b'{"a": 1}\n')
    assert read_text_file(path) == '{"a": 1}\n'
    path.write_bytes('{"a": 1}\n'.encode("utf-16"))
    with pytest.raises(InputError, match="is UTF-16 text; save it as UTF-8"):
        read_text_file(path)
    path.write_bytes(b'{"a": "\xff"}\n')
    with pytest.raises(InputError, match=r"not UTF-8 \(byte 7"):
        read_text_file(path)
    path.write_text('{"a": 1}\nnull\n')
    with pytest.raises(InputError, match=r"f.jsonl:2: expected a JSON object, got null"):
        read_jsonl_objects(path)
    path.write_text('{"a": 1}\n{"a": 2')
    assert read_jsonl_objects(path, allow_truncated_last=True).truncated == 2
    with pytest.raises(InputError, match=r"f.jsonl:2: not JSON \(truncated"):
        read_jsonl_objects(path)
    assert tmp_path.is_dir()
    with pytest.raises(InputError, match="is a file, expected a folder"):
        with staged_folder(path / "sub"):
            pass
    with pytest.raises(RuntimeError):
        with staged_folder(tmp_path / "out") as stage:
            (stage / "half.csv").write_text("a,b\n")
            raise RuntimeError("interrupted")
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".out.*"))


def test_sample_reading_rules(tmp_path):
    task = "vignette_stereotype_authors"  # any task whose records sit under valid_rate
    file = tmp_path / f"samples_{task}_x.jsonl"
    a, b = json.dumps(_sample("a")), json.dumps(_sample("b"))
    file.write_text(f"{a}\n{b}\n{a}\n{b[:-5]}")  # a duplicated line, then a truncated last line
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        records = samples.read_records([file], task)
    assert len(records) == 2
    said = [str(w.message) for w in caught if issubclass(w.category, samples.SampleFileWarning)]
    assert said == [f"{file}: 1 duplicated sample lines (same doc, same content) counted once; 1 truncated last line "
                    "(line 4) ignored"]
    file.write_text(f"{a}\n{json.dumps(_sample('a', 'invalid'))}\n")
    with pytest.raises(ValueError, match="doc_id a occurs twice in the file with different content"):
        samples.read_records([file], task)
    file.write_text("")
    with pytest.raises(ValueError, match=r"no samples \(the file is empty\)"):
        samples.read_records([file], task)
    file.write_text(f"{a}\nnull\n")
    with pytest.raises(ValueError, match=":2: expected a JSON object"):
        samples.read_records([file], task)


def test_report_notes_mixed_versions_and_the_results_json_fallback(tmp_path):
    """Two tasks of one model, run under two lm-eval versions, without samples files: one card whose
    header lists both versions, a note per task, and console warnings for both facts."""
    from lm_eval_bias.report.runs import load_runs

    for k, (task, version) in enumerate((("focus_mcq_education", "0.4.12"), ("focus_mcq_income", "0.4.13"))):
        stamp = f"2026-01-0{k + 1}T10-00-00.000001"
        results = {"results": {task: {"alias": task, "valid_rate,none": 1.0}}, "lm_eval_version": version,
                   "configs": {task: {"task": task, "metadata": {"version": 1.0}}}, "versions": {task: 1.0},
                   "n-samples": {task: {"original": 20, "effective": 20}},
                   "config": {"model": "hf-multimodal", "model_args": {"pretrained": "org/m"}, "limit": None}}
        (tmp_path / f"results_{stamp}.json").write_text(json.dumps(results), encoding="utf-8")
    [model] = load_runs([tmp_path])
    assert model.meta["lm_eval"] == ("0.4.12, 0.4.13 (mixed versions: 0.4.12: focus_mcq_education; 0.4.13: "
                                     "focus_mcq_income)")
    assert "runs under 2 lm-eval versions merged into one card (0.4.12: focus_mcq_education; 0.4.13: focus_mcq_income)" \
        in model.warnings
    assert "focus_mcq_income: no --log_samples files: figures and tables need them; headline numbers from the results " \
           "JSON" in model.warnings
    assert "run under lm-eval 0.4.12; other tasks of this card under another version" in \
        model.tasks["focus_mcq_education"].notes
    (tmp_path / "results_2026-01-01T10-00-00.000001.json").write_text('{"results": [1]}', encoding="utf-8")
    with pytest.raises(ValueError, match="not an lm-eval results JSON"):
        load_runs([tmp_path])


def test_any_unexpected_failure_is_one_redacted_line_unless_debug(monkeypatch, capsys):
    from lm_eval_bias import cli

    def broken(argv):
        raise RuntimeError("backend said 401 for url: https://bob:pw9876@api.example/v1?key=KEY12345\n(retry)")

    monkeypatch.setattr(cli, "_tasks_dir_main", broken)
    assert cli.main(["tasks-dir"]) == 1
    err = capsys.readouterr().err
    assert err == (f"error: tasks-dir: RuntimeError: backend said 401 for url: https://<redacted>@api.example/v1?key="
                   "<redacted> (retry) (rerun with --debug for the traceback)\n")
    with pytest.raises(RuntimeError, match="backend said 401") as raised:
        cli.main(["--debug", "tasks-dir"])
    assert "KEY12345" not in str(raised.value) and "pw9876" not in str(raised.value)
