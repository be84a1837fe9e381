"""The headline convention of ``lm_eval_bias.core.aggregation``: every doc returns its compact record
under every headline key; every key's aggregation reads one summary of all records, computed once per
*content* (never per object identity or key order), the same after a JSON round trip, a pickle-cache
rerun or a gather of two ranks (what lm-eval does with ``--cache_requests`` and across processes)."""

from __future__ import annotations

import json
import pickle
from collections import defaultdict

import pytest

from lm_eval_bias.core import aggregation
from lm_eval_bias.core.aggregation import HeadlineFamily, RecordCodec

CODEC = RecordCodec(("template", "x", "status"), sample_fields=("status",))


def _family(calls: list, name: str = "toy") -> HeadlineFamily:
    def summarize(records):
        calls.append(len(records))
        valid = [r for r in records if r["status"] == "valid"]
        return {"n": len(records), "total": sum(r["x"] for r in records), "valid_rate": len(valid) / len(records),
                "templates": len({r["template"] for r in records})}

    keys = {k: (lambda s, k=k: s[k]) for k in ("n", "total", "valid_rate", "templates")}
    return HeadlineFamily(name, summarize, keys, headline=("n", "total", "valid_rate"), codec=CODEC)


def _records(xs):
    return [{"template": f"t{k % 3}", "x": x, "status": "valid" if x % 2 else "refusal", "reason": "unused"}
            for k, x in enumerate(xs)]


def _lm_eval(family, records):
    """What lm-eval does with one task: ``process_results`` per doc, the values appended per key, then
    every key's aggregation over its list (lm-eval 0.4.13 ``_compute_task_aggregations``)."""
    raw = defaultdict(list)
    per_doc = []
    for record in records:
        metrics = family.records_for(record)
        per_doc.append(metrics)
        for key, value in metrics.items():
            raw[key].append(value)
    return raw, per_doc


def _aggregate(family, raw):
    return {key: family.function(key)(items) for key, items in raw.items()}


def setup_function():
    aggregation._memo.clear()


def test_every_doc_returns_every_headline_key_with_one_compact_string():
    calls = []
    family = _family(calls)
    raw, per_doc = _lm_eval(family, _records([3, 1, 4, 1, 5, 9, 2, 6]))
    assert all(list(m) == ["n", "total", "valid_rate"] for m in per_doc)  # the headline, in order, on every doc
    first = per_doc[0]["n"]
    assert first == '["t0",3,"valid",null]'  # JSON; the unused field left out; null: no k samples
    assert {v for m in per_doc for v in m.values()} == {v for v in raw["n"]}
    # hand-computed: 8 docs, x sums to 31, odd x are valid (3, 1, 1, 5, 9): 5 of 8
    assert _aggregate(family, raw) == {"n": 8.0, "total": 31.0, "valid_rate": 5 / 8}
    assert calls == [8]  # one summary for the three keys


def test_the_summary_is_memoised_on_content_not_on_objects():
    """A second run with equal values as new objects (``--cache_requests``: requests and docs come back
    from a pickle) reads the memoised summary; values read back from JSON too; other content recomputes."""
    calls = []
    family = _family(calls)
    raw, _ = _lm_eval(family, _records([3, 1, 4]))
    first = _aggregate(family, raw)
    copies = {k: [json.loads(json.dumps(v)) for v in items] for k, items in pickle.loads(pickle.dumps(raw)).items()}
    assert _aggregate(family, copies) == first and calls == [3]
    other, _ = _lm_eval(family, _records([3, 1, 5]))
    assert _aggregate(family, other)["total"] == 9.0 and calls == [3, 3]


def test_equal_hashes_of_different_content_never_share_a_summary(monkeypatch):
    calls = []
    family = _family(calls)
    monkeypatch.setattr(aggregation, "hash", lambda values: 0, raising=False)  # every content collides
    a, _ = _lm_eval(family, _records([1, 2]))
    b, _ = _lm_eval(family, _records([5, 7]))
    assert family.function("total")(a["total"]) == 3.0
    assert family.function("total")(b["total"]) == 12.0
    assert calls == [2, 2]


def test_two_ranks_gathered_by_pickling_give_the_one_rank_numbers():
    """lm-eval's ``gather_object``: each rank pickles its per-key value lists; rank 0 concatenates them."""
    calls = []
    family = _family(calls)
    records = _records([3, 1, 4, 1, 5, 9, 2, 6, 5])
    one_rank = _aggregate(family, _lm_eval(family, records)[0])
    ranks = [_lm_eval(family, records[r::2])[0] for r in range(2)]
    gathered = defaultdict(list)
    for rank in (pickle.loads(pickle.dumps(dict(r))) for r in ranks):
        for key, items in rank.items():
            gathered[key].extend(items)
    assert _aggregate(family, gathered) == one_rank


def test_codec_round_trips_k_samples_and_mappings():
    record = {"template": "t", "x": [1, 2], "status": None,
              "samples": [{"sample": 0, "status": "valid", "reason": ""}, {"sample": 1, "status": "refusal"}]}
    decoded = CODEC.decode(CODEC.encode(record))
    assert decoded == {"template": "t", "x": [1, 2], "status": None,
                       "samples": [{"sample": 0, "status": "valid"}, {"sample": 1, "status": "refusal"}]}
    single = CODEC.decode(CODEC.encode({"template": "t", "x": 1, "status": "valid"}))
    assert single == {"template": "t", "x": 1, "status": "valid"}  # no samples key for a doc asked once
    probs = RecordCodec(("probs", "mass"), mapping_fields=("probs",), defaults={"doc_id": None})
    text = probs.encode({"probs": {"B": 0.25, "A": 0.75}, "mass": 0.5})
    assert text == '[[["A",0.75],["B",0.25]],0.5]'
    assert probs.decode(text) == {"doc_id": None, "probs": {"A": 0.75, "B": 0.25}, "mass": 0.5}


def test_headline_keys_must_be_keys_of_the_family():
    with pytest.raises(ValueError, match="headline keys \\['missing'\\]"):
        HeadlineFamily("bad", lambda r: {}, {"n": lambda s: 0.0}, headline=("n", "missing"))


def test_the_lead_doc_scheme_is_gone():
    for name in ("LeadDocFilter", "LeadRecord", "lead_role", "mark_lead_run", "ALL_KEYS_ENV"):
        assert not hasattr(aggregation, name)


def test_a_view_key_reads_only_its_part_and_other_docs_return_an_empty_string():
    """VIGNETTE's per-dimension keys: a doc's record under its own part's key, ``""`` under the others."""
    from lm_eval_bias.core.aggregation import HeadlineView

    calls = []
    family = _family(calls)
    odd = HeadlineView("odd", RecordCodec(("x",)), lambda records: {"n": len(records), "total": sum(r["x"] for r in records)},
                       include=lambda r: r["x"] % 2 == 1)
    family = HeadlineFamily("viewed", family.summarize, family.keys, headline=("n", "total"), codec=CODEC,
                            views={"total": odd})
    raw, per_doc = _lm_eval(family, _records([3, 1, 4, 1, 5, 9, 2, 6]))
    assert [m["total"] for m in per_doc] == ["[3]", "[1]", "", "[1]", "[5]", "[9]", "", ""]
    assert all(isinstance(m["n"], str) and m["n"] for m in per_doc)  # the family's record on every doc
    assert _aggregate(family, raw) == {"n": 8.0, "total": 3 + 1 + 1 + 5 + 9}


def test_vignette_decision_codec_is_lossless_and_short():
    from lm_eval_bias.vignette.tasks import DECISION_CODEC

    record = {"pair_id": "identity:12:female:old woman@Programming|young woman@Programming", "dimension": "age",
              "left": "old woman", "right": "young woman", "context": "Programming", "status": "valid",
              "chosen_identity": "young woman", "question_type": "identity_choice", "doc_id": "unused"}
    text = DECISION_CODEC.encode(record)
    assert text == '["identity:12:female",1,"old woman","young woman","Programming",0,1,0]'
    decoded = DECISION_CODEC.decode(text)
    assert {k: decoded[k] for k in record if k != "doc_id"} == {k: v for k, v in record.items() if k != "doc_id"}
    assert (decoded["gender"], decoded["pair_kind"], decoded["doc_id"]) == ("female", "identity", None)
    odd = {**record, "pair_id": "identity:3:male:a@X|b@Y", "chosen_identity": None, "status": "refusal"}
    assert DECISION_CODEC.decode(DECISION_CODEC.encode(odd))["pair_id"] == "identity:3:male:a@X|b@Y"


def test_the_same_records_under_other_resampling_settings_are_summarised_again(monkeypatch):
    calls = []
    family = _family(calls)
    raw, _ = _lm_eval(family, _records([3, 1, 4]))
    monkeypatch.setenv(aggregation.BOOTSTRAP_ITERS_ENV, "10")
    _aggregate(family, raw)
    monkeypatch.setenv(aggregation.BOOTSTRAP_ITERS_ENV, "20")
    _aggregate(family, raw)
    monkeypatch.setenv(aggregation.NULL_ITERS_ENV, "5")
    _aggregate(family, raw)
    assert calls == [3, 3, 3]


def test_vignette_decision_rates_are_one_number_per_doc_and_equal_the_analysis():
    from lm_eval_bias.vignette import tasks as vignette

    family = vignette.FAMILIES["decision"]
    base = {"pair_id": "identity:0:male:a@X|b@X", "dimension": "age", "left": "a", "right": "b", "context": "X",
            "chosen_identity": None, "question_type": "identity_choice"}
    records = [{**base, "status": s} for s in ("valid", "valid", "refusal", "invalid", "valid")]
    per_doc = [family.records_for(r) for r in records]
    assert [m["valid_rate"] for m in per_doc] == [1, 1, 0, 0, 1]
    assert family.function("valid_rate")([m["valid_rate"] for m in per_doc]) == 3 / 5
    assert vignette.rate_keys(records)["valid_rate"] == 3 / 5
    assert [m["selection_spread_religion"] for m in per_doc] == [""] * 5  # no religion pair


def test_no_task_headline_shows_a_count_of_significant_tests():
    """A count of significant tests is shown only beside its power statement (``_can_reject``,
    ``_min_attainable_p``, ``_mde``: issue 31), which the headline has no room for: every count is an
    analysis key, and the analysis of every family that has one also has its power keys."""
    from lm_eval_bias import analysis, tasks_dir

    names = sorted(p.stem for p in tasks_dir().rglob("*.yaml") if not p.stem.startswith("_"))
    assert len(names) > 40
    counts = ("n_identities_significant", "n_polarity_cells_significant", "n_paircomp_cells_significant",
              "n_dimensions_heterogeneous", "n_activities_significant")
    shown = {(t, k) for t in names for k in analysis.headline_keys(t) if k.startswith(counts)}
    assert not shown
    from lm_eval_bias.vignette.analysis import result_keys

    for paradigm in ("perception", "stereotype", "decision"):
        keys = set(result_keys(paradigm))
        found = [k for k in keys if k.startswith(counts) and not k.endswith(("_can_reject", "_mde", "_min_attainable_p"))]
        assert found, paradigm
        assert all({f"{k}_can_reject", f"{k}_mde", f"{k}_min_attainable_p"} <= keys for k in found), paradigm
