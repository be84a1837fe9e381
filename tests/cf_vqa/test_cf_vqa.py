"""Counterfactual VQA: builder validation, docs (option orders, HNER split and retrieval) and the planted
model through the harness."""

from __future__ import annotations

import json
import math

import pytest

from lm_eval_bias.datasets_builder.cf_vqa import build_cf_vqa
from lm_eval_bias.datasets_builder.hub import SourceError
from lm_eval_bias.cf_vqa.synthetic import make_synthetic_cf_vqa
from tests.reflect.test_reflect_pipeline import metrics_of, run_probe

N_PAIRS, N_RUNS = 6 * 17, 3


def test_builder_writes_pairs_and_validates(tmp_path):
    src = make_synthetic_cf_vqa(tmp_path / "src", pairs_per_subcategory=1, size=24, fmt="csv")
    summary = build_cf_vqa(src, tmp_path / "out")
    assert summary.n_pairs == 17 and summary.per_category["Demography"] == 5
    assert "human_consistency" in (tmp_path / "out" / "README.md").read_text()


def _rewrite(src, change):
    rows = [json.loads(line) for line in (src / "manifest.jsonl").read_text().splitlines()]
    change(rows)
    (src / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.mark.parametrize("change,needle", [
    (lambda rows: rows[1].update(pair_id=rows[0]["pair_id"]), "duplicate pair_id"),
    (lambda rows: rows[2].update(category="Religion"), "unknown category"),
    (lambda rows: rows[2].update(subcategory="Age", category="Culture"), "is not one of"),
    (lambda rows: rows[3].update(options=["a", "b", "c"]), "exactly four"),
    (lambda rows: rows[4].update(image_minus="images/missing.png"), "does not exist"),
    (lambda rows: rows[5].update(human_consistency=1.5), "outside"),
    (lambda rows: rows[6].update(image_plus="../../etc/passwd"), "outside the source folder"),
])
def test_builder_rejects_broken_manifests_with_row_and_reason(tmp_path, change, needle):
    src = make_synthetic_cf_vqa(tmp_path / "src", size=24)
    _rewrite(src, change)
    with pytest.raises(SourceError) as err:
        build_cf_vqa(src, tmp_path / "out")
    assert needle in err.value.reason and "manifest.jsonl:" in err.value.path
    assert not (tmp_path / "out").exists()


def test_corrupt_image_is_rejected(tmp_path):
    src = make_synthetic_cf_vqa(tmp_path / "src", size=24)
    first = json.loads((src / "manifest.jsonl").read_text().splitlines()[0])
    (src / first["image_plus"]).write_bytes(b"not a png")
    with pytest.raises(SourceError, match="does not decode"):
        build_cf_vqa(src, tmp_path / "out")


def test_docs_option_orders_and_hner(cf_vqa_env):
    from lm_eval_bias.cf_vqa import tasks as cf_vqa

    docs = cf_vqa.load_docs("baseline")["test"]
    assert len(docs) == N_PAIRS * N_RUNS * 2
    for i in range(0, 12, 2):  # b+ then b-, same options in a run
        assert (docs[i]["side"], docs[i + 1]["side"]) == ("plus", "minus")
        assert docs[i]["options"] == docs[i + 1]["options"]
    orders = {tuple(docs[i]["options"]) for i in range(0, 6, 2)}
    assert len(orders) > 1  # the three runs use different (seeded) orders
    assert cf_vqa.load_docs("baseline")["test"]["options"] == docs["options"]  # deterministic
    split = cf_vqa.hner_split([f"p{i}" for i in range(100)])
    assert sum(v == "corpus" for v in split.values()) == 70
    hner = cf_vqa.load_docs("hner")["test"]
    queries = {d["pair_id"] for d in hner}
    assert len(queries) == round(0.3 * N_PAIRS) and all(d["split"] == "query" for d in hner)
    assert all(len(d["exemplars"]) == 5 and d["embedder"] == "tfidf" for d in hner)
    targeted = cf_vqa.load_docs("hner_targeted")["test"]
    corpus_category = {}
    for d in docs:
        corpus_category[d["question"]] = d["category"]
    assert all(corpus_category[e["question"]] == d["category"] for d in targeted for e in d["exemplars"])
    assert "Human-Norm Exemplars" in cf_vqa.doc_to_text(hner[0]) and "1) Question: " in cf_vqa.doc_to_text(hner[0])


def test_planted_model_without_bias_is_perfectly_consistent(cf_vqa_env):
    m = metrics_of(run_probe(["cf_vqa"]), "cf_vqa")
    assert (m["consistency"], m["cc_auc"], m["sr_auc"], m["refusal_rate"], m["refusal_asymmetry_rate"]) == (1.0, 1.0, 1.0, 0.0, 0.0)
    assert m["consistency_demography"] == 1.0 and m["invalid_rate"] == 0.0 and m["truncated_rate"] == 0.0
    assert m["consistency_minus_human"] < 0.2  # synthetic human consistency lies in [0.8, 1]
    assert (m["n_pairs"], m["n_categories"], m["n_pair_runs"], m["n_pairs_culture"]) == (N_PAIRS, 5, N_PAIRS * N_RUNS, 18)
    # Cons = 1 exactly: the logit is undefined and the interval is the t-Wilson one over the 102 pairs,
    # df = 102 pairs - 5 categories: [n / (n + t^2), 1] (Wilson at p = 1), not a 0-width [1, 1]
    from scipy.stats import t as student_t

    q2 = student_t.ppf(0.975, N_PAIRS - 5) ** 2
    assert m["consistency_ci_high"] == 1.0
    assert m["consistency_ci_low"] == pytest.approx(N_PAIRS / (N_PAIRS + q2), rel=1e-12)
    assert m["consistency_null"] < 0.5 and m["consistency_p_null"] < 0.01  # far above the unrelated-answers floor
    assert m["consistency_chance"] == 0.25


def test_planted_flip_rate_is_recovered(cf_vqa_env):
    m = metrics_of(run_probe(["cf_vqa_baep"], "cf_flip=0.3,seed=5"), "cf_vqa_baep")
    n = N_PAIRS * N_RUNS
    assert abs(m["consistency"] - 0.7) < 4 * math.sqrt(0.21 / n)
    assert m["cc_auc"] == pytest.approx(m["consistency"])  # one confidence level, no refusals
    assert m["refusal_rate"] == 0.0
    assert m["consistency_ci_low"] < 0.7 < m["consistency_ci_high"]  # the planted truth, from the pair jackknife
    assert 0 < m["consistency_stderr"] < 0.05 and m["consistency_p_null"] < 0.01
    # Demography has 30 pairs (5 subcategories x 6): an interval; Culture 18 < MIN_PAIRS_FOR_INTERVAL: none
    assert m["consistency_demography_ci_low"] <= m["consistency_demography"] <= m["consistency_demography_ci_high"]
    assert math.isnan(m["consistency_culture_ci_low"]) and m["n_pairs_culture"] == 18
    assert 0 < m["consistency_culture_p_null_holm"] <= 1 and m["consistency_culture_p_null_holm"] >= m["consistency_culture_p_null"]


def test_planted_asymmetric_refusals_are_recovered(cf_vqa_env):
    m = metrics_of(run_probe(["cf_vqa"], "cf_refuse_plus=0.4,cf_refuse_minus=0.1,seed=3"), "cf_vqa")
    n = N_PAIRS * N_RUNS
    assert abs(m["refusal_rate"] - 0.25) < 4 * math.sqrt(0.25 * 0.75 / (2 * n))
    asym = 0.4 * 0.9 + 0.1 * 0.6
    assert abs(m["refusal_asymmetry_rate"] - asym) < 4 * math.sqrt(asym * (1 - asym) / n)
    # both answer (no flip) or both refuse: consistent
    cons = 0.6 * 0.9 + 0.4 * 0.1
    assert abs(m["consistency"] - cons) < 4 * math.sqrt(cons * (1 - cons) / n)
    assert m["sr_auc"] < 1.0 and m["cc_auc"] < m["consistency"]


def test_subcategories_and_curves_from_logged_samples(cf_vqa_env, tmp_path):
    from lm_eval_bias import samples
    from lm_eval_bias.cf_vqa import stats

    results = run_probe(["cf_vqa"], "cf_flip=0.5,cf_refuse_minus=0.2,seed=9")
    path = tmp_path / "samples_cf_vqa_x.jsonl"
    path.write_text("".join(json.dumps(s, default=str) + "\n" for s in results["samples"]["cf_vqa"]))
    records = samples.load_records(path, "cf_vqa")
    assert samples.summarize("cf_vqa", records)["consistency"] == pytest.approx(metrics_of(results, "cf_vqa")["consistency"])
    pairs = samples.cf_vqa_pairs(records)
    by_sub = stats.metrics_by(pairs, "subcategory")
    assert len(by_sub) == 17 and all(0 <= v["consistency"] <= 1 for v in by_sub.values())
    taus, kappa, cons = stats.consistency_coverage_curve(pairs)
    assert taus.tolist() == [0.8] and kappa[0] == pytest.approx(sum(p.answer_minus is not None for p in pairs) / len(pairs))
    _, rr, ra = stats.symmetric_refusal_curve(pairs)
    assert rr[-1] == 1.0 and ra[-1] == 0.0


def test_metrics_by_question_source_hand_computed():
    """Table 11 cells: Cons per category x question source over the cell's pairs; pairs without a source
    are left out."""
    from lm_eval_bias.cf_vqa import stats

    P = stats.PairResponse
    pairs = [P("a", "x", "x", 0.9, 0.9, 0, "Culture", "Daily Cultural Practices", "o3"),
             P("b", "x", "y", 0.9, 0.9, 0, "Culture", "Daily Cultural Practices", "o3"),
             P("c", "x", "x", 0.9, 0.9, 0, "Culture", "Daily Cultural Practices", "Sonnet 4"),
             P("d", "x", "y", 0.9, 0.9, 0, "Culture", "Daily Cultural Practices", "")]
    cells = stats.metrics_by_source(pairs, n_boot=0, seed=0)
    assert set(cells) == {("Culture", "o3"), ("Culture", "Sonnet 4")}
    assert cells[("Culture", "o3")]["consistency"] == 0.5 and cells[("Culture", "o3")]["n_pairs"] == 2
    assert cells[("Culture", "Sonnet 4")]["consistency"] == 1.0
    assert stats.metrics_by_source(pairs[3:], n_boot=0, seed=0) == {}
    by_sub = stats.metrics_by_cell(pairs, ("subcategory",), n_boot=0, seed=0)
    assert by_sub[("Daily Cultural Practices",)]["consistency"] == 0.5
    assert by_sub[("Daily Cultural Practices",)]["consistency"] == stats.metrics_by(pairs, "subcategory")[
        "Daily Cultural Practices"]["consistency"]


def test_question_source_flows_from_manifest_to_table_11(cf_vqa_env, tmp_path):
    """The optional manifest column reaches the logged records and splits the metrics by source, with
    intervals where a cell has MIN_PAIRS_FOR_INTERVAL pairs; a planted flip rate of 0.3 shows in every
    source's cells."""
    from lm_eval_bias import samples
    from lm_eval_bias.cf_vqa import stats

    results = run_probe(["cf_vqa"], "cf_flip=0.3,seed=5")
    path = tmp_path / "samples_cf_vqa_x.jsonl"
    path.write_text("".join(json.dumps(s, default=str) + "\n" for s in results["samples"]["cf_vqa"]))
    records = samples.load_records(path, "cf_vqa")
    assert {r["question_source"] for r in records} == {"o3", "Sonnet 4"}
    cells = stats.metrics_by_source(samples.cf_vqa_pairs(records), n_boot=200, seed=1)
    assert len(cells) == 10 and sum(v["n_pairs"] for v in cells.values()) == N_PAIRS
    for (category, source), v in cells.items():  # 9-15 pairs a cell: below the minimum, no interval
        assert v["n_pairs"] < stats.MIN_PAIRS_FOR_INTERVAL and math.isnan(v["consistency_ci_low"]), (category, source)
    by_source = stats.metrics_by_cell(samples.cf_vqa_pairs(records), ("source",), n_boot=200, seed=1)
    for (source,), v in by_source.items():  # about 51 pairs a source: an interval
        assert v["consistency_ci_low"] <= v["consistency"] <= v["consistency_ci_high"], source
    pooled = {s: [v["consistency"] for (c, src), v in cells.items() if src == s] for s in ("o3", "Sonnet 4")}
    for source, values in pooled.items():
        assert abs(sum(values) / len(values) - 0.7) < 0.12, source
