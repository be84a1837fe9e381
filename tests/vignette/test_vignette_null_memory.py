"""VIGNETTE summary memory at scale (docs/backends.md "VIGNETTE at scale"): the pair-level null's
label swaps are drawn in blocks of a compact dtype, the design and the option table are built
without string copies -- with the same values as before."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pandas as pd
import pytest

from lm_eval_bias.vignette import stats as vg


def wide_design(n_pairs: int = 20_000, n_ids: int = 20, n_ctx: int = 10, seed: int = 0) -> vg.PairDesign:
    """``n_pairs`` image pairs of one doc each (two option rows), identities within one dimension."""
    rng = np.random.default_rng(seed)
    left = rng.integers(0, n_ids, n_pairs)
    right = (left + rng.integers(1, n_ids, n_pairs)) % n_ids
    ctx = rng.integers(0, n_ctx, n_pairs)
    chose_left = (rng.random(n_pairs) < 0.5 + 0.02 * (left - right)).astype(int)
    ids = np.array([f"id{k:02d}" for k in range(n_ids)], dtype=object)
    pair = np.array([f"p{k}" for k in range(n_pairs)], dtype=object)
    frame = pd.DataFrame({
        "pair_id": np.repeat(pair, 2), "identity": np.column_stack([ids[left], ids[right]]).ravel(),
        "partner": np.column_stack([ids[right], ids[left]]).ravel(),
        "context": np.repeat(np.array([f"a{k}" for k in ctx], dtype=object), 2),
        "selected": np.column_stack([chose_left, 1 - chose_left]).ravel(), "dimension": "age"})
    return vg.pair_design(frame)


def share_of_first(design: vg.PairDesign):
    """A linear statistic: 100 x selected / shown of identity id00 over all its contexts (pooled)."""
    cols = design.group_identity == 0
    return lambda r, o: {"age": 100.0 * r[:, cols].sum(axis=1) / o[:, cols].sum(axis=1)}


def test_null_draws_are_chunked_compact_and_deterministic():
    design = wide_design()
    assert design.n_pairs == 20_000
    metric = share_of_first(design)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        first = vg.pair_resampled_summary(design, metric, 0, 1000, seed=7)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # the old draws alone were 1000 x 20,000 int64 = 160 MB, plus a float copy of the same size;
    # now: blocks of NULL_DRAW_ROWS uint8 rows and CHUNK_CELLS floats per dense chunk
    assert peak < 40e6, f"null peak {peak / 1e6:.0f} MB"
    again = vg.pair_resampled_summary(design, metric, 0, 1000, seed=7)
    assert first.null == again.null and first.p_null == again.p_null  # same seed, same draws
    other = vg.pair_resampled_summary(design, metric, 0, 1000, seed=8)
    assert other.null != first.null


def test_chunked_null_is_the_within_pair_swap_distribution():
    """Linear statistic T = sum over id00's groups of selected / sum of shown (shown is swap-invariant
    for two-option docs): under independent fair swaps, E[T*] and Var[T*] are known in closed form;
    the blocks are distinct draws (no block repeated)."""
    design = wide_design(n_pairs=3000, seed=1)
    metric = share_of_first(design)
    cols = design.group_identity == 0
    x0 = np.asarray(design.x0[:, cols].sum(axis=1)).ravel()
    x1 = np.asarray(design.x1[:, cols].sum(axis=1)).ravel()
    shown = design.n0[:, cols].sum()
    mean = 100.0 * (x0 + x1).sum() / 2 / shown
    sd = 100.0 * np.sqrt(((x1 - x0) ** 2).sum() / 4) / shown
    rows = []

    def recording(r, o):
        out = metric(r, o)
        rows.append(out["age"])
        return out

    n_null = 400
    res = vg.pair_resampled_summary(design, recording, 0, n_null, seed=3)
    null = np.concatenate(rows[1:])  # rows[0]: the observed counts
    assert null.size == n_null
    assert res.null["age"] == pytest.approx(null.mean())
    assert abs(null.mean() - mean) < 4 * sd / np.sqrt(n_null)
    assert 0.8 < null.std() / sd < 1.2
    blocks = null.reshape(-1, vg.NULL_DRAW_ROWS)
    assert len(np.unique(blocks, axis=0)) == len(blocks)
    observed = metric(*vg.observed_counts(design))["age"][0]
    assert res.p_null["age"] == pytest.approx((1 + np.sum(null >= observed - 1e-9)) / (1 + n_null))


def test_pair_design_by_hand():
    """Pairs sorted as strings ("10" before "2"); an identity's stratum is that of its first cell in
    (pair, identity, context) order ("b" first shows in pair "10"), or of its first cell as a partner
    ("d" is never an identity); rows without identity are dropped; counts summed per cell."""
    frame = pd.DataFrame({
        "pair_id": [2, 2, 2, 2, 10, 10, 1, 1, 1],
        "identity": ["b", "a", "b", "a", "c", "b", "a", None, "a"],
        "partner": ["a", "b", "a", "b", "b", "c", "d", "a", "d"],
        "context": ["u", "u", "u", "u", "v", "v", "u", "u", "v"],
        "selected": [1, 0, 0, 1, 1, 0, 1, 0, 0],
        "dimension": ["x", "x", "x", "x", "y", "y", "z", "z", "z"]})
    d = vg.pair_design(frame)
    assert list(d.pair_ids) == ["1", "10", "2"] and list(d.strata) == ["z", "y", "x"]
    assert list(d.identities) == ["a", "b", "c", "d"] and list(d.identity_stratum) == ["z", "y", "y", "z"]
    groups = [(d.identities[i], c) for i, c in zip(d.group_identity, d.group_context)]
    assert groups == [("a", "u"), ("a", "v"), ("b", "u"), ("b", "v"), ("c", "v"), ("d", "u"), ("d", "v")]
    g = {k: j for j, k in enumerate(groups)}
    x0, n0, x1 = d.x0.toarray(), d.n0.toarray(), d.x1.toarray()
    assert x0[2, g[("a", "u")]] == 1 and n0[2, g[("a", "u")]] == 2 and x0[2, g[("b", "u")]] == 1
    assert x1[2, g[("a", "u")]] == 1  # b's selections credited to a when the pair is swapped
    assert n0[0, g[("a", "u")]] == 1 and n0[0, g[("a", "v")]] == 1 and x1[0, g[("d", "u")]] == 1
    assert x0[1, g[("c", "v")]] == 1 and x1[1, g[("b", "v")]] == 1
    assert n0.sum() == 8  # the row without identity is left out


def test_option_table_is_narrow_and_shares_the_records_strings():
    from lm_eval_bias.vignette import tasks as vignette

    records = [
        {"doc_id": "d1", "pair_id": "p1", "paradigm": "decision", "pair_kind": "identity", "gender": "male",
         "dimension": "age", "left": "old man", "right": "young man", "context": "cooking", "parameter": "ability",
         "question_type": "identity_choice", "status": "valid", "chosen_identity": "young man"},
        {"doc_id": "d2", "pair_id": "", "paradigm": "decision", "pair_kind": "identity", "gender": "male",
         "dimension": "age", "left": "young man", "right": "old man", "context": "cooking", "parameter": "status",
         "question_type": "identity_choice", "status": "valid", "chosen_identity": "young man"},
        {"doc_id": "d3", "pair_id": "p1", "paradigm": "decision", "pair_kind": "identity", "gender": "male",
         "dimension": "age", "left": "old man", "right": "young man", "context": "cooking", "parameter": "agency",
         "question_type": "identity_choice", "status": "refusal", "chosen_identity": None},
    ]
    t = vignette.option_table(records)
    assert list(t.columns) == ["doc_id", "pair_id", "identity", "context", "partner", "selected", "dimension",
                               "gender", "paradigm", "parameter", "pair_kind", "position"]
    assert t[["doc_id", "pair_id", "identity", "partner"]].values.tolist() == [
        ["d1", "p1", "old man", "young man"], ["d1", "p1", "young man", "old man"],
        ["d2", "d2", "young man", "old man"], ["d2", "d2", "old man", "young man"]]
    assert t["selected"].tolist() == [0, 1, 1, 0] and t["position"].tolist() == [0, 1, 0, 1]
    assert t["selected"].dtype == np.int8 and t["identity"].dtype == object
    assert t["identity"].iloc[0] is records[0]["left"]  # the records' own string, not a copy
    assert vg.selection_frequency(t).to_dict() == {"old man": 0.0, "young man": 100.0}


def test_large_bootstrap_is_drawn_in_blocks_with_the_same_spread(monkeypatch):
    """Over ``BOOT_DRAW_CELLS`` replicates x pairs the pair bootstrap's multiplicities come in blocks
    (flat memory, deterministic per seed); its standard error matches the all-at-once draw's."""
    design = wide_design(seed=2)
    metric = share_of_first(design)
    assert 1000 * design.n_pairs > vg.BOOT_DRAW_CELLS
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        blocked = vg.pair_resampled_summary(design, metric, 1000, 0, seed=5)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 40e6, f"bootstrap peak {peak / 1e6:.0f} MB"  # all at once: 160 MB of int64 weights alone
    assert vg.pair_resampled_summary(design, metric, 1000, 0, seed=5).stderr == blocked.stderr
    monkeypatch.setattr(vg, "BOOT_DRAW_CELLS", 10 ** 12)
    whole = vg.pair_resampled_summary(design, metric, 1000, 0, seed=5)
    assert blocked.stderr["age"] == pytest.approx(whole.stderr["age"], rel=0.15)
    assert blocked.ci_low["age"] == pytest.approx(whole.ci_low["age"], abs=0.5 * whole.stderr["age"])
    assert blocked.ci_high["age"] == pytest.approx(whole.ci_high["age"], abs=0.5 * whole.stderr["age"])
    assert blocked.stderr != whole.stderr  # different (equally valid) draws


def test_large_answer_rate_bootstrap_is_blocked():
    """pair_clustered_rate_intervals over 20,000 pairs x 1,000 replicates: Rao-Wu weights in blocks
    (the old all-at-once draw was 160 MB of float64), the stderr of an iid rate near sqrt(p(1-p)/N)."""
    rng = np.random.default_rng(4)
    n_pairs, per_pair = 20_000, 3
    pair_ids = np.repeat(np.arange(n_pairs), per_pair)
    strata = np.repeat(np.array(["age", "religion"], dtype=object)[np.arange(n_pairs) % 2], per_pair)
    hits = rng.random(n_pairs * per_pair) < 0.9
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        out = vg.pair_clustered_rate_intervals(pair_ids, strata, hits, n_boot=1000, seed=1)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 40e6, f"rate bootstrap peak {peak / 1e6:.0f} MB"
    p = hits.mean()
    assert out["estimate"] == pytest.approx(p)
    assert out["stderr"] == pytest.approx(np.sqrt(p * (1 - p) / hits.size), rel=0.15)
    assert out["ci_low"] < p < out["ci_high"]
    assert vg.pair_clustered_rate_intervals(pair_ids, strata, hits, n_boot=1000, seed=1) == out
