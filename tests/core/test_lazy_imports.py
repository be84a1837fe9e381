"""Loading the REFLECT tasks imports no scipy (``lm_eval_bias.core.lazy_imports``): the statistics modules
reach ``scipy.spatial`` / ``scipy.stats`` on first use, with the same results as scipy's own names."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from scipy.spatial.distance import jensenshannon as scipy_jensenshannon
from scipy.stats import spearmanr

from lm_eval_bias.core.lazy_imports import LazyModule, jensenshannon, scipy_stats

PROBE = """
import json, sys
import lm_eval_bias.reflect.tasks, lm_eval_bias.reflect.presentation, lm_eval_bias.reflect.tables
heavy = ("scipy.spatial", "scipy.stats", "statsmodels", "torch", "matplotlib")
print(json.dumps(sorted(m for m in heavy if m in sys.modules)))
"""


def test_loading_the_reflect_tasks_imports_no_scipy_statsmodels_torch_or_matplotlib():
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_jensenshannon_is_scipys():
    p = np.array([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]])
    q = np.array([[0.3, 0.3, 0.4], [0.6, 0.2, 0.2]])
    assert np.array_equal(jensenshannon(p, q, axis=1, base=2.0), scipy_jensenshannon(p, q, axis=1, base=2.0))
    assert jensenshannon([1.0, 0.0], [0.0, 1.0], base=2.0) == pytest.approx(1.0)  # disjoint: the maximum, 1 bit
    assert jensenshannon([0.5, 0.5], [0.5, 0.5]) == 0.0


def test_lazy_module_imports_on_first_attribute_and_gives_the_modules_attributes():
    module = LazyModule("json")
    assert "not imported yet" in repr(module)
    assert module.dumps([1, 2]) == "[1,2]".replace(",", ", ")
    assert "imported" in repr(module) and "not" not in repr(module)
    assert scipy_stats.spearmanr is spearmanr
    with pytest.raises(AttributeError):
        module.__wrapped__  # dunder probes are not forwarded
    with pytest.raises(AttributeError):
        module.no_such_name
