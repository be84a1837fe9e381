"""The optional third gender presentation (REFLECT App. C.8, exploratory androgynous pilot): the FOCUS
layout ``<Race>_androgynous.jpg`` through the builder, the tasks and the per-presentation MCQ keys.

Hand-computed values come from the paper's definitions (Sec. 4.2: JSD in log base 2, relative mean gap;
App. C.8: the pairs compared); the planted effects come from the bias-probe's documented rule, derived
here independently of lm_eval_bias.stats."""

from __future__ import annotations

import itertools
import math
import os
from pathlib import Path

import numpy as np
import pytest

from tests.reflect.test_reflect_pipeline import metrics_of

from lm_eval_bias.reflect.schema import GROUP_INDEX, GROUPS
from lm_eval_bias.reflect import presentation as ps

OCCUPATIONS = ("ceo", "nurse")
TEMPLATES = (1, 2, 3)
#: three races with all three presentations, as the App. C.8 subset (the other two races man/woman only)
ANDRO_RACES = ("White", "Latino", "Black")
SALARY_MIDPOINTS = {"A": 10_000, "B": 30_000, "C": 50_000, "D": 70_000, "E": 90_000, "F": 110_000}  # Sec. 4.2


def _rec(template, race, presentation, choice, status="valid"):
    return ps.PresentationRecord(template, template.split("/")[0], race, presentation, status, choice)


def _kl2(p, q):
    return sum(a * math.log2(a / b) for a, b in zip(p, q) if a > 0)


def _jsd(p, q):
    m = [(a + b) / 2 for a, b in zip(p, q)]
    return 0.5 * _kl2(p, m) + 0.5 * _kl2(q, m)


# -- statistics on a tiny table, by hand -----------------------------------------------------------------
def test_hand_computed_gap_jsd_counts_and_matching():
    values = {"A": 1, "B": 2, "C": 3, "D": 4}
    records = [
        _rec("ceo/1", "Black", "man", "D"), _rec("ceo/1", "Black", "androgynous", "B"),
        _rec("ceo/2", "Black", "man", "D"), _rec("ceo/2", "Black", "androgynous", "D"),
        _rec("ceo/1", "White", "man", "A"),  # no White androgynous image: not matched with androgynous
        _rec("ceo/1", "Black", "woman", "A"), _rec("ceo/2", "Black", "woman", None, "refusal"),
    ]
    s = ps.presentation_summary(records, "ABCD", values, n_boot=0, n_null=0)
    e = s.estimates
    # man vs androgynous on the matched Black cells: man D, D; androgynous B, D
    assert e["n_matched_man_vs_androgynous"] == 2
    assert e["jsd_man_vs_androgynous"] == pytest.approx(_jsd([0, 0, 0, 1], [0, 0.5, 0, 0.5]))
    assert e["jsd_man_vs_androgynous"] == pytest.approx(0.5 * (math.log2(4 / 3)) + 0.25 * (1 + math.log2(2 / 3)))
    assert e["gap_man_vs_androgynous"] == pytest.approx((4 - 3) / 3)
    # every image of a presentation counts in its own valid rate and mean answer (the White man too)
    assert e["mean_answer_man"] == pytest.approx((4 + 4 + 1) / 3)
    assert (e["n_calls_man"], e["n_valid_man"], e["valid_rate_man"]) == (3, 3, 1.0)
    assert (e["n_calls_woman"], e["n_valid_woman"], e["valid_rate_woman"]) == (2, 1, 0.5)
    # woman vs androgynous: woman A (the refused call has no answer) vs androgynous B, D
    assert e["gap_woman_vs_androgynous"] == pytest.approx((1 - 3) / 3)
    assert e["jsd_woman_vs_androgynous"] == pytest.approx(_jsd([1, 0, 0, 0], [0, 0.5, 0, 0.5])) == pytest.approx(1.0)
    assert e["gap_man_vs_woman"] == pytest.approx((4 - 1) / 1)
    assert s.presentations == ("man", "woman", "androgynous") and s.reason == ""


def test_swap_null_matches_exact_enumeration():
    # two matched cells; under the null each cell's two images swap labels with probability 1/2
    cells = np.array([[[3, 1, 0, 0], [0, 0, 2, 2]], [[0, 4, 0, 0], [1, 1, 1, 1]]], dtype=float)
    exact = []
    for flips in itertools.product((0, 1), repeat=2):
        a = sum(c[f] for c, f in zip(cells, flips))
        b = sum(c[1 - f] for c, f in zip(cells, flips))
        exact.append(_jsd(a / a.sum(), b / b.sum()))
    null = ps.jsd_swap_null(cells, 4000, seed=7)
    assert null.mean() == pytest.approx(np.mean(exact), abs=0.01)
    assert set(np.round(null, 10)) <= set(np.round(exact, 10))


def test_without_a_third_presentation_keys_are_nan_with_a_reason():
    s = ps.presentation_summary([_rec("ceo/1", "Black", "man", "D"), _rec("ceo/1", "Black", "woman", "A")],
                                "ABCD", {"A": 1, "B": 2, "C": 3, "D": 4}, n_boot=0, n_null=0)
    assert math.isnan(s.estimates["gap_man_vs_androgynous"]) and math.isnan(s.estimates["jsd_woman_vs_androgynous"])
    assert s.estimates["gap_man_vs_woman"] == pytest.approx(3.0)
    assert "no androgynous image" in s.reason


# -- builder and fixture ---------------------------------------------------------------------------------------
def _source(root: Path, androgynous: bool) -> Path:
    from lm_eval_bias.reflect.synthetic import make_synthetic_focus

    return make_synthetic_focus(root, occupations=OCCUPATIONS, templates=TEMPLATES, size=(48, 48),
                                androgynous=androgynous, androgynous_races=ANDRO_RACES)


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    from lm_eval_bias.datasets_builder.focus import build_focus

    root = tmp_path_factory.mktemp("presentation")
    out = {}
    for name, andro in (("binary", False), ("andro", True)):
        src = _source(root / f"src_{name}", andro)
        out[name] = (build_focus(src, root / name / "focus"), root / name)
    return out


def test_builder_records_the_third_presentation_and_keeps_binary_rows(sources):
    from lm_eval_bias.datasets_builder.focus import collect_focus_rows
    from lm_eval_bias.reflect.schema import read_group_marker

    binary, _ = sources["binary"]
    andro, _ = sources["andro"]
    n_binary = len(OCCUPATIONS) * len(TEMPLATES) * 10
    assert (binary.n_images, binary.n_androgynous) == (n_binary, 0)
    assert (andro.n_images, andro.n_androgynous) == (n_binary + 18, 18)  # 6 templates x 3 races
    card_b = (binary.output / "README.md").read_text()
    card_a = (andro.output / "README.md").read_text()
    assert "androgynous" not in card_b and "androgynous images" in card_a
    rb = collect_focus_rows(binary.output.parent.parent / "src_binary")
    ra = collect_focus_rows(andro.output.parent.parent / "src_andro")
    # the ten groups' rows are the same (same files, same order); the androgynous rows follow each template's
    assert [r["sha256"] for r in rb] == [r["sha256"] for r in ra if r["gender"] != "androgynous"]
    extra = [r for r in ra if r["gender"] == "androgynous"]
    assert sorted({r["race"] for r in extra}) == sorted(ANDRO_RACES)
    assert [r["image_id"] for r in extra[:3]] == [f"ceo/1/{r}_androgynous" for r in ("Black", "Latino", "White")]
    # the marker of an androgynous image reads as its cell with presentations=True, as no group otherwise
    from io import BytesIO

    from PIL import Image

    image = Image.open(BytesIO(extra[0]["image"]["bytes"]))
    assert read_group_marker(image) is None
    assert tuple(read_group_marker(image, presentations=True)) == ("Black", "androgynous")


def test_binary_build_unchanged_by_the_option(tmp_path):
    """The option leaves no trace on the ten groups: a source generated with androgynous variants and then
    stripped of them builds byte for byte what a source generated without the option builds."""
    from lm_eval_bias.datasets_builder.focus import build_focus

    plain = _source(tmp_path / "x" / "src", False)
    stripped = _source(tmp_path / "y" / "src", True)
    assert not list(plain.rglob("*androgynous*"))
    for path in stripped.rglob("*_androgynous.jpg"):
        path.unlink()
    a, b = build_focus(plain, tmp_path / "x" / "focus"), build_focus(stripped, tmp_path / "y" / "focus")
    assert (a.n_androgynous, b.n_androgynous) == (0, 0)
    files = sorted(p.relative_to(a.output) for p in a.output.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(b.output) for p in b.output.rglob("*") if p.is_file())
    for rel in files:
        assert (a.output / rel).read_bytes() == (b.output / rel).read_bytes(), rel


def test_2afc_and_salary_leave_androgynous_images_out_with_a_warning(sources, monkeypatch, caplog):
    from lm_eval_bias.datasets_builder.focus_bios import build_focus_bios
    from lm_eval_bias.reflect import tasks as reflect
    from lm_eval_bias.reflect.synthetic import make_synthetic_bios

    _, data = sources["andro"]
    bios = make_synthetic_bios(data.parent / "bios_andro.jsonl", per_occupation=2, occupations=OCCUPATIONS)
    if not (data / "focus_bios").exists():
        build_focus_bios(bios, data / "focus_bios", per_occupation=2)
    monkeypatch.setenv("LM_EVAL_BIAS_DATA_DIR", str(data))
    with caplog.at_level("WARNING", logger="lm_eval_bias"):
        pairs = reflect.load_2afc_docs("income")["test"]
        salary = reflect.load_salary_docs()["test"]
        logprob = reflect.load_mcq_logprob_docs("salary")["test"]
        mcq = reflect.load_mcq_docs("salary")["test"]
    n_templates = len(OCCUPATIONS) * len(TEMPLATES)
    assert len(pairs) == n_templates * 90 and max(pairs["group_a"]) < len(GROUPS)
    assert len(salary) == n_templates * 10 * 2 and max(salary["group"]) < len(GROUPS)
    assert len(logprob) == n_templates * 10
    assert len(mcq) == n_templates * 13 and set(mcq["presentation"]) == {"man", "woman", "androgynous"}
    assert caplog.text.count("18 androgynous image(s) left out") == 3


# -- through the harness with the planted probe ------------------------------------------------------------
def _run(task, model_args, data, monkeypatch):
    from lm_eval import simple_evaluate

    import lm_eval_bias

    monkeypatch.setenv("LM_EVAL_BIAS_DATA_DIR", str(data))
    monkeypatch.setenv("LM_EVAL_BIAS_BOOTSTRAP_ITERS", "400")
    monkeypatch.setenv("LM_EVAL_BIAS_NULL_ITERS", "200")
    results = simple_evaluate(model="bias-probe", model_args=model_args, tasks=[task],
                              task_manager=lm_eval_bias.task_manager(), bootstrap_iters=0, log_samples=True)
    return metrics_of(results, task)  # the headline and the analysis of the samples (App. C.8 keys live there)


def _planted_means(androgynous_as: str):
    """Mean salary-bin midpoint of each presentation over the three androgynous races, from the probe's
    rule: MCQ option index round(rank / 9 * 5) of the group's utility rank; androgynous read as
    ``androgynous_as`` of the same race."""
    from lm_eval_bias.models.bias_probe import BiasProbeLM

    probe = BiasProbeLM(gender_order="man>woman")
    letter = lambda g: "ABCDEF"[round(probe.utility_rank[g] / 9 * 5)]  # noqa: E731
    mean = lambda gender: np.mean([SALARY_MIDPOINTS[letter(GROUP_INDEX[(r, gender)])] for r in ANDRO_RACES])  # noqa: E731
    return {"man": mean("man"), "woman": mean("woman"), "androgynous": mean(androgynous_as)}


def test_planted_presentation_effect_recovered_exactly_without_noise(sources, monkeypatch):
    _, data = sources["andro"]
    m = _run("focus_mcq_salary", "gender_order=man>woman,androgynous_as=woman", data, monkeypatch)
    mu = _planted_means("woman")
    assert m["gap_man_vs_androgynous"] == pytest.approx((mu["man"] - mu["androgynous"]) / mu["androgynous"])
    assert m["gap_man_vs_androgynous"] > 0.5
    assert m["gap_woman_vs_androgynous"] == 0.0 and m["jsd_woman_vs_androgynous"] == 0.0
    assert m["jsd_man_vs_androgynous"] > 0.5 and m["jsd_man_vs_androgynous_p_null"] < 0.05
    assert m["jsd_man_vs_androgynous_null"] < m["jsd_man_vs_androgynous"]
    assert m["mean_answer_androgynous"] == pytest.approx(mu["androgynous"])
    n_templates = len(OCCUPATIONS) * len(TEMPLATES)
    assert m["n_calls_androgynous"] == m["n_valid_androgynous"] == n_templates * 3
    assert m["n_calls_man"] == n_templates * 5 and m["n_matched_man_vs_androgynous"] == n_templates * 3
    assert m["valid_rate_androgynous"] == 1.0


def test_planted_gap_interval_excludes_zero_and_no_effect_interval_covers_it(sources, monkeypatch):
    _, data = sources["andro"]
    planted = _run("focus_mcq_salary", "gender_order=man>woman,androgynous_as=woman,mcq_noise=0.3", data, monkeypatch)
    assert planted["gap_man_vs_androgynous"] > 0
    assert 0 < planted["gap_man_vs_androgynous_ci_low"] < planted["gap_man_vs_androgynous"] < planted["gap_man_vs_androgynous_ci_high"]
    none = _run("focus_mcq_salary", "gender_order=man>woman,androgynous_as=man,mcq_noise=0.3", data, monkeypatch)
    assert none["gap_man_vs_androgynous"] != 0.0  # the noise moves the estimate ...
    assert none["gap_man_vs_androgynous_ci_low"] < 0 < none["gap_man_vs_androgynous_ci_high"]  # ... not the interval
    assert none["gap_woman_vs_androgynous_ci_high"] < 0  # now androgynous answers as the man: woman lower


def test_ten_group_keys_unchanged_and_presentation_keys_absent_for_binary(sources, monkeypatch):
    _, binary_data = sources["binary"]
    _, andro_data = sources["andro"]
    args = "gender_order=man>woman,mcq_noise=0.2"
    b = _run("focus_mcq_education", args, binary_data, monkeypatch)
    a = _run("focus_mcq_education", args, andro_data, monkeypatch)
    assert not any("androgynous" in k or "_vs_" in k for k in b)
    for key in ("valid_rate", "gap_male", "gap_black", "jsd_male", "jsd_male_p_null", "gap_male_ci_low", "n_missing_images",
                "gap_male_ceo"):
        assert a[key] == b[key] or (np.isnan(a[key]) and np.isnan(b[key])), key
    assert "jsd_woman_vs_androgynous" in a


def test_logged_samples_recompute_the_presentation_keys(sources, monkeypatch, tmp_path):
    """Merged shards and the report recompute every key from the logged samples: the App. C.8 keys
    come out as the harness aggregated them (tables=True), and only then."""
    import json

    from lm_eval import simple_evaluate

    import lm_eval_bias
    from lm_eval_bias import samples

    _, data = sources["andro"]
    monkeypatch.setenv("LM_EVAL_BIAS_DATA_DIR", str(data))
    monkeypatch.setenv("LM_EVAL_BIAS_BOOTSTRAP_ITERS", "200")
    monkeypatch.setenv("LM_EVAL_BIAS_NULL_ITERS", "100")
    task = "focus_mcq_salary"
    results = simple_evaluate(model="bias-probe", model_args="gender_order=man>woman,androgynous_as=woman,mcq_noise=0.3",
                              tasks=[task], task_manager=lm_eval_bias.task_manager(), bootstrap_iters=0, log_samples=True)
    harness = metrics_of(results, task)  # App. C.8 keys: the in-memory analysis of the samples
    path = tmp_path / f"samples_{task}_x.jsonl"
    path.write_text("".join(json.dumps(s, default=str) + "\n" for s in results["samples"][task]))
    records = samples.load_records(path, task)
    values = samples.result_values(task, records, tables=True)
    for key in ("gap_man_vs_androgynous", "gap_man_vs_androgynous_ci_low", "jsd_woman_vs_androgynous",
                "jsd_man_vs_androgynous_p_null", "valid_rate_androgynous", "n_matched_man_vs_androgynous"):
        assert values[key] == pytest.approx(harness[key], nan_ok=True), key
    assert "gap_man_vs_androgynous" not in samples.result_values(task, records)


def test_report_table_of_the_presentation_keys(tmp_path):
    """The REFLECT MCQ section lists the App. C.8 keys with their intervals and the JSD null floor, and
    adds nothing for a binary source."""
    import pandas as pd

    from lm_eval_bias.reflect.report import _presentations
    from lm_eval_bias.report.render import Part, Writer
    from lm_eval_bias.report.runs import TaskRun

    metrics = {"valid_rate_androgynous": 0.9, "valid_rate_androgynous_ci_low": 0.8, "valid_rate_androgynous_ci_high": 1.0,
               "gap_man_vs_androgynous": 0.25, "gap_man_vs_androgynous_ci_low": 0.05,
               "gap_man_vs_androgynous_ci_high": 0.47, "jsd_woman_vs_androgynous": 0.0008,
               "jsd_woman_vs_androgynous_ci_low": 0.0, "jsd_woman_vs_androgynous_ci_high": 0.01,
               "jsd_woman_vs_androgynous_null": 0.002, "jsd_woman_vs_androgynous_p_null": 0.6}
    part = Part()
    _presentations(TaskRun("focus_mcq_salary", metrics, [], 10, []), Writer(tmp_path, "m"), part)
    table = pd.read_csv(tmp_path / "tables" / "m" / "focus_mcq_salary_presentations.csv", index_col=0)
    assert list(table.index) == ["valid_rate_androgynous", "gap_man_vs_androgynous", "jsd_woman_vs_androgynous"]
    assert table.loc["gap_man_vs_androgynous", "95 % CI"] == "[0.050, 0.470]"
    assert table.loc["jsd_woman_vs_androgynous", "null floor"] == 0.002
    assert table.loc["jsd_woman_vs_androgynous", "p_null"] == 0.6
    empty = Part()
    _presentations(TaskRun("focus_mcq_salary", {"gap_male": 0.1}, [], 10, []), Writer(tmp_path, "b"), empty)
    assert not empty.details
