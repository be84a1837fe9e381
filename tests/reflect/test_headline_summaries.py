"""The REFLECT headline-only summaries (lm-eval's aggregation step) give exactly the full summary's
numbers for every headline key: the 2AFC one (no win-rate randomization tests), MCQ's (no JSD
intervals, no LOTO), their probability-scored twins, and salary's (no per-occupation tests, no paper
regressions), on synthetic runs with a planted effect and without, k responses per doc, and an
incomplete template. Values go through ``process_results`` and the aggregation functions as
lm-eval calls them; the full summary reads the same decoded records (what the analysis does)."""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pytest

from lm_eval_bias.core import aggregation
from lm_eval_bias.reflect import tasks
from lm_eval_bias.reflect.schema import GROUP_PAIRS, GROUPS


@pytest.fixture(autouse=True)
def _small_resampling(monkeypatch):
    monkeypatch.setenv(aggregation.BOOTSTRAP_ITERS_ENV, "100")
    monkeypatch.setenv(aggregation.NULL_ITERS_ENV, "100")
    monkeypatch.setenv(aggregation.BOOTSTRAP_SEED_ENV, "7")
    aggregation._memo.clear()


def _twoafc_records(rng, male_pull: float, templates: int = 4, k: int = 1, drop_group: int | None = None):
    """2AFC records of ``templates`` templates in each of three occupations; the man of a mixed-gender
    pair is picked with probability 0.5 + ``male_pull``; ~8 % refusals and ~4 % invalid answers."""
    records = []
    for occupation in ("ceo", "nurse", "teacher"):
        for t in range(templates):
            template = f"{occupation}/{t}"
            for i, j in GROUP_PAIRS:
                if drop_group in (i, j) and t == 0:
                    continue  # template 0 lacks this group's photo
                for order, (a, b) in (("AB", (i, j)), ("BA", (j, i))):
                    def answer():
                        u = rng.random()
                        if u < 0.08:
                            return {"status": "refusal", "choice": None}
                        if u < 0.12:
                            return {"status": "invalid", "choice": None}
                        pull = male_pull * ((GROUPS[a].gender == "man") - (GROUPS[b].gender == "man"))
                        return {"status": "valid", "choice": "A" if rng.random() < 0.5 + pull else "B"}

                    record = {"template": template, "occupation": occupation, "pair_id": f"{template}:{i}-{j}",
                              "order": order, "group_a": a, "group_b": b, "extraction": "strict"}
                    if k == 1:
                        record.update(answer())
                    else:
                        record["samples"] = [{"sample": s, **answer()} for s in range(k)]
                    records.append(record)
    return records


def _logprob_records(rng, male_pull: float, templates: int = 4):
    records = []
    for record in _twoafc_records(rng, 0.0, templates):
        pull = male_pull * ((GROUPS[record["group_a"]].gender == "man") - (GROUPS[record["group_b"]].gender == "man"))
        p_a = float(np.clip(0.5 + pull + rng.normal(0, 0.15), 0.01, 0.99))
        mass = float(rng.uniform(0.6, 1.0))
        records.append({k: record[k] for k in ("template", "occupation", "pair_id", "order", "group_a", "group_b")}
                       | {"method": "logprob", "probs": {"A": p_a * mass, "B": (1 - p_a) * mass}, "letter_mass": mass})
    return records


def _salary_records(rng, male_gap: float, templates: int = 3, bios: int = 6):
    records = []
    for occupation, base in (("ceo", 150_000), ("cook", 40_000), ("nurse", 70_000)):
        for t in range(templates):
            for b in range(bios):
                for g, group in enumerate(GROUPS):
                    u = rng.random()
                    status = "valid" if u < 0.9 else ("refusal" if u < 0.95 else "invalid")
                    value = None
                    if status == "valid":
                        value = float(round(base * (1 + male_gap * (group.gender == "man")) * rng.lognormal(0, 0.2)))
                    records.append({"template": f"{occupation}/{t}", "occupation": occupation, "bio_id": f"{occupation}-{b}",
                                    "group": g, "status": status, "value": value, "extraction": "strict"})
    return records


def _mcq_records(rng, male_shift: float, templates: int = 4, k: int = 1, logprob: bool = False):
    """MCQ salary records (options A-F) of ``templates`` templates in each of three occupations; men's
    answers shifted up by ``male_shift`` letters on average; ~10 % refusals."""
    records = []
    for occupation in ("ceo", "nurse", "teacher"):
        for t in range(templates):
            for g, group in enumerate(GROUPS):
                centre = 2.5 + male_shift * (group.gender == "man")
                record = {"template": f"{occupation}/{t}", "occupation": occupation, "group": g, "variant": "salary"}
                if logprob:
                    weights = np.exp(-0.5 * (np.arange(6) - centre) ** 2) * rng.uniform(0.5, 1.5, 6)
                    mass = float(rng.uniform(0.6, 1.0))
                    record.update({"method": "logprob", "probs": dict(zip("ABCDEF", (weights / weights.sum() * mass).tolist())),
                                   "letter_mass": mass})
                else:
                    def answer():
                        if rng.random() < 0.1:
                            return {"status": "refusal", "choice": None}
                        return {"status": "valid", "choice": "ABCDEF"[int(np.clip(round(rng.normal(centre, 1.2)), 0, 5))]}

                    record["extraction"] = "strict"
                    if k == 1:
                        record.update(answer())
                    else:
                        record["samples"] = [{"sample": s, **answer()} for s in range(k)]
                records.append(record)
    return records


def _through_lm_eval(family, records):
    """lm-eval's path: ``process_results`` per doc, each key's values listed, each key aggregated."""
    values = defaultdict(list)
    for record in records:
        for key, value in family.records_for(record).items():
            values[key].append(value)
    return {key: family.function(key)(items) for key, items in values.items()}, values


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


def _assert_headline_equals_full(family, records):
    headline, values = _through_lm_eval(family, records)
    full = family.values(family.decode(values[family.headline[0]]))
    assert list(headline) == list(family.headline)
    differing = {key: (headline[key], full[key]) for key in family.headline if not _same(headline[key], full[key])}
    assert not differing, f"headline-only summary differs from the full summary: {differing}"
    return headline


@pytest.mark.parametrize("male_pull, k, drop_group", [(0.35, 1, None), (0.0, 1, None), (0.2, 2, 3)])
def test_2afc_headline_summary_equals_the_full_summary(male_pull, k, drop_group):
    family = tasks.FAMILIES["2afc"]
    assert family.headline_summarize is tasks.summarize_2afc_headline
    # 9 templates in each of 3 occupations: 24 between-template df, enough for Pol's interval (MIN_INVERSION_DF)
    records = _twoafc_records(np.random.default_rng(11), male_pull, templates=9, k=k, drop_group=drop_group)
    headline = _assert_headline_equals_full(family, records)
    # the planted effect is found (Pol's interval above 0) and its absence leaves the lower end at 0
    if male_pull >= 0.3:
        assert headline["male_win_rate"] > 0.7 and headline["polarization_ci_low"] > 0
    if male_pull == 0.0:
        assert headline["polarization_ci_low"] == 0.0


def test_2afc_headline_summary_skips_the_win_rate_tests():
    """What makes it cheaper: no win-rate randomization tests (analysis keys), which the full summary has."""
    records = _twoafc_records(np.random.default_rng(3), 0.2)
    summary = tasks.summarize_2afc_headline(records)
    assert not [key for key in summary.derived if key.startswith("p_")]
    assert 0.0 < tasks.summarize_2afc(records).derived["p_male_win_rate"] <= 1.0


@pytest.mark.parametrize("male_pull", [0.3, 0.0])
def test_2afc_logprob_headline_summary_equals_the_full_summary(male_pull):
    family = tasks.FAMILIES["2afc_logprob"]
    _assert_headline_equals_full(family, _logprob_records(np.random.default_rng(5), male_pull))


@pytest.mark.parametrize("male_shift, k", [(1.5, 1), (0.0, 1), (0.8, 2)])
def test_mcq_headline_summary_equals_the_full_summary(male_shift, k):
    family = tasks.FAMILIES["mcq"]
    assert family.headline_summarize is tasks.summarize_mcq_headline
    headline = _assert_headline_equals_full(family, _mcq_records(np.random.default_rng(8), male_shift, k=k))
    if male_shift > 1:  # the planted gender effect is above its null floor
        assert headline["jsd_male"] > headline["jsd_male_null"]


def test_mcq_headline_summary_skips_the_jsd_intervals():
    records = _mcq_records(np.random.default_rng(4), 1.0, templates=9)  # 24 df: the full summary has JSD intervals
    assert math.isnan(tasks.summarize_mcq_headline(records).ci_low["jsd_male"])
    assert not math.isnan(tasks.summarize_mcq(records).ci_low["jsd_male"])


@pytest.mark.parametrize("male_shift", [1.5, 0.0])
def test_mcq_logprob_headline_summary_equals_the_full_summary(male_shift):
    _assert_headline_equals_full(tasks.FAMILIES["mcq_logprob"], _mcq_records(np.random.default_rng(9), male_shift, logprob=True))


def test_salary_headline_summary_equals_the_full_summary():
    family = tasks.FAMILIES["salary"]
    headline = _assert_headline_equals_full(family, _salary_records(np.random.default_rng(2), 0.15))
    assert headline["gap_pct_male"] > 5 and headline["p_gender"] < 0.05
