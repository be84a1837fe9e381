"""VIGNETTE's compact sample views (``lm_eval_bias.vignette.tasks._paradigm_views``): every doc returns
every headline key, each key's values are what its statistic reads (1 / 0 rates, a compact record or
""), the headline computed from them equals the full summary exactly, every record decodes back to the
fields it stands for, and a samples line's metric entries stay under 1 kB."""

from __future__ import annotations

import json
import math
import random
from collections import defaultdict

import pytest

from lm_eval_bias.core import aggregation
from lm_eval_bias.vignette import tasks as vignette

PARADIGMS = ("factuality", "perception", "stereotype", "decision")


@pytest.fixture(scope="module")
def answered(small_vignette_data):
    """Records of every doc of each paradigm on the small synthetic set, answered at random (5 %
    refusals, 5 % unparsable answers), with small resampling settings."""
    saved = {name: aggregation.os.environ.get(name) for name in ("LM_EVAL_BIAS_DATA_DIR", aggregation.BOOTSTRAP_ITERS_ENV,
                                                                  aggregation.NULL_ITERS_ENV)}
    env = {"LM_EVAL_BIAS_DATA_DIR": str(small_vignette_data), aggregation.BOOTSTRAP_ITERS_ENV: "40",
           aggregation.NULL_ITERS_ENV: "40"}
    with aggregation.environment(env):
        rng = random.Random(3)
        out = {}
        for paradigm in PARADIGMS:
            records = []
            for doc in vignette.load_docs(paradigm)["test"]:
                u = rng.random()
                answer = ("I cannot answer that." if u < 0.05 else "zzz" if u < 0.1
                          else "ABCD"[rng.randrange(len(doc["options"]))])
                records.append(vignette.record_of(doc, [answer]))
            out[paradigm] = records
        yield out
    assert {name: aggregation.os.environ.get(name) for name in saved} == saved


def _through_lm_eval(family, records):
    values = defaultdict(list)
    per_doc = []
    for record in records:
        metrics = family.records_for(record)
        per_doc.append(metrics)
        for key, value in metrics.items():
            values[key].append(value)
    return values, per_doc


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


@pytest.mark.parametrize("paradigm", PARADIGMS)
def test_the_headline_from_the_views_equals_the_full_summary(answered, paradigm):
    family = vignette.FAMILIES[paradigm]
    records = answered[paradigm]
    with aggregation.environment({aggregation.BOOTSTRAP_ITERS_ENV: "40", aggregation.NULL_ITERS_ENV: "40"}):
        aggregation._memo.clear()
        values, per_doc = _through_lm_eval(family, records)
        headline = {key: family.function(key)(values[key]) for key in family.headline}
        full = family.values(records)
    assert all(list(m) == list(family.headline) for m in per_doc)  # every doc, every key, in order
    differing = {k: (headline[k], full[k]) for k in family.headline if not _same(headline[k], full[k])}
    assert not differing
    assert sum(not math.isnan(v) for v in headline.values()) >= 6  # the synthetic set answers most keys


@pytest.mark.parametrize("paradigm", PARADIGMS)
def test_each_key_holds_one_type_and_a_record_goes_only_where_it_is_read(answered, paradigm):
    family = vignette.FAMILIES[paradigm]
    values, per_doc = _through_lm_eval(family, answered[paradigm])
    for key, items in values.items():
        types = {type(v) for v in items}
        assert types == ({int} if key.endswith("_rate") else {str}), key  # a typed column (W&B, Arrow)
    for record, metrics in zip(answered[paradigm], per_doc):
        assert [metrics[f"{s}_rate"] for s in ("valid", "refusal", "invalid")] == [
            int(record["status"] == s) for s in ("valid", "refusal", "invalid")]
        written = {key for key, v in metrics.items() if isinstance(v, str) and v not in ("", "0", "1")}
        if record["status"] != "valid":
            assert paradigm == "decision" or not written  # an unanswered doc feeds the rates only (decision:
            assert len(written) <= 1                      # its record under its dimension's spread, unread)
        elif paradigm == "perception" and record["question_type"] == "identity_choice":
            assert not written, sorted(written)  # no headline key reads them: counts are analysis keys
        else:
            assert 1 <= len(written) <= 2, (paradigm, sorted(written))  # one record, at most twice


@pytest.mark.parametrize("paradigm", ("factuality", "perception", "stereotype"))
def test_records_decode_to_the_fields_they_stand_for(answered, paradigm):
    family = vignette.FAMILIES[paradigm]
    views = [v for v in {id(v): v for v in family.views.values()}.values() if isinstance(v.codec, vignette.PairViewCodec)]
    checked: dict[str, int] = defaultdict(int)
    for view in views:
        for record in answered[paradigm]:
            if view.include(record):
                text = view.codec.encode(record)
                decoded = view.codec.decode(text)
                assert {k: decoded[k] for k in view.codec.fields} == {k: record[k] for k in view.codec.fields}, view.name
                assert decoded["pair_id"] == record["pair_id"] and decoded["doc_id"] == record["doc_id"]
                assert json.loads(text)[0] == int(record["pair_id"].split(":")[1])  # the pair by its index
                checked[view.name] += 1
    assert len(checked) >= len(views) // 2  # the small set has no docs of some dimensions


def test_a_pair_id_of_another_form_is_written_out_and_comes_back():
    codec = vignette._view_codec("stereotype", ("asked", "context", "parameter", "direction", "chosen_identity"),
                                 question_type="identity_choice")
    record = {"pair_id": "authors-pair-17", "doc_id": "row 17", "pair_kind": "portrait", "gender": "female",
              "left": "old woman", "right": "young woman", "left_activity": "", "right_activity": "",
              "dimension": "age", "asked": "", "context": "warm", "parameter": "Warmth", "direction": "high",
              "chosen_identity": "young woman", "status": "valid", "paradigm": "stereotype",
              "question_type": "identity_choice"}
    text = codec.encode(record)
    assert "authors-pair-17" in text and "row 17" in text
    decoded = codec.decode(text)
    assert {k: decoded[k] for k in record} == record
    with pytest.raises(ValueError, match="status"):
        codec.encode({**record, "status": "refusal"})  # a view of valid docs only


@pytest.mark.parametrize("paradigm", PARADIGMS)
def test_metric_entries_of_a_samples_line_stay_under_one_kilobyte(answered, paradigm):
    """As lm-eval writes them: each key's name in ``metrics`` and each key with its value."""
    family = vignette.FAMILIES[paradigm]
    _, per_doc = _through_lm_eval(family, answered[paradigm])
    sizes = [len(json.dumps(m, ensure_ascii=False).encode()) + len(json.dumps(list(m)).encode()) for m in per_doc]
    assert max(sizes) < 1000, (paradigm, max(sizes))
