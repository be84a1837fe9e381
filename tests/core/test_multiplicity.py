"""One home for multiplicity adjustment: statsmodels' numbers, NaN left out of the family, and no
explicit full garbage collection per call (it dominated the VIGNETTE aggregation at scale)."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from lm_eval_bias.core.multiplicity import adjust


def test_holm_by_hand_and_nan_left_out():
    # Holm: sorted p (0.01, 0.02, 0.04) x (3, 2, 1) = (0.03, 0.04, 0.04), monotone, back in input order
    assert adjust([0.04, 0.01, np.nan, 0.02]).tolist()[:2] == pytest.approx([0.04, 0.03])
    out = adjust([0.04, 0.01, np.nan, 0.02])
    assert np.isnan(out[2]) and out[3] == pytest.approx(0.04)
    assert np.isnan(adjust([np.nan, np.nan])).all()
    assert adjust([0.5, 0.9], method="bonferroni").tolist() == [1.0, 1.0]


def test_no_explicit_collection_and_gc_restored(monkeypatch):
    calls = []
    original = gc.collect
    monkeypatch.setattr(gc, "collect", lambda *a, **k: calls.append(1) or 0)
    adjust(np.linspace(0.001, 0.5, 20))
    assert calls == []  # statsmodels' Holm branch calls gc.collect(); adjust() turns it into a no-op
    gc.collect()
    assert calls == [1]  # and puts the (patched) collector back afterwards
    monkeypatch.setattr(gc, "collect", original)


def test_every_call_site_uses_the_one_home():
    """No module but lm_eval_bias.core.multiplicity calls statsmodels' multipletests directly."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "lm_eval_bias"
    users = [p.relative_to(root).as_posix() for p in root.rglob("*.py")
             if "import multipletests" in p.read_text(encoding="utf-8")]
    assert users == ["core/multiplicity.py"]
