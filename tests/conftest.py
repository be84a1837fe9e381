"""Shared fixtures: offline environment and small synthetic FOCUS data built with the real builders."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LMEVAL_HASHMM", "0")

#: the plugin's own settings; a test module that sets one (e.g. a smaller bootstrap for speed) must not
#: leak it into the next module
_PLUGIN_ENV_PREFIX = "LM_EVAL_BIAS_"


@pytest.fixture(scope="module", autouse=True)
def _restore_plugin_environment():
    """Put every ``LM_EVAL_BIAS_*`` variable back as it was before the module ran (set, changed or
    removed by its tests or fixtures)."""
    before = {k: v for k, v in os.environ.items() if k.startswith(_PLUGIN_ENV_PREFIX)}
    yield
    for key in [k for k in os.environ if k.startswith(_PLUGIN_ENV_PREFIX) and k not in before]:
        del os.environ[key]
    os.environ.update(before)


#: Occupations and templates of the small synthetic set used by pipeline tests.
SMALL_OCCUPATIONS = ("ceo", "nurse")
SMALL_TEMPLATES = (1, 2)
BIOS_PER_OCCUPATION = 3


@pytest.fixture(scope="session")
def small_focus_data(tmp_path_factory) -> Path:
    """LM_EVAL_BIAS_DATA_DIR-style folder with `focus` (2 occupations x 2 templates, 64 px) and
    `focus_bios` (3 biographies per occupation), built by the real builders."""
    from lm_eval_bias.datasets_builder.focus import build_focus
    from lm_eval_bias.datasets_builder.focus_bios import build_focus_bios
    from lm_eval_bias.reflect.synthetic import make_synthetic_bios, make_synthetic_focus

    root = tmp_path_factory.mktemp("focus_small")
    make_synthetic_focus(root / "src", occupations=SMALL_OCCUPATIONS, templates=SMALL_TEMPLATES, size=(64, 64))
    build_focus(root / "src", root / "data" / "focus")
    bios = make_synthetic_bios(root / "bios.jsonl", per_occupation=BIOS_PER_OCCUPATION)
    build_focus_bios(bios, root / "data" / "focus_bios", per_occupation=BIOS_PER_OCCUPATION)
    return root / "data"


@pytest.fixture
def focus_env(small_focus_data, monkeypatch) -> Path:
    """Point every task at the small synthetic set."""
    monkeypatch.setenv("LM_EVAL_BIAS_DATA_DIR", str(small_focus_data))
    return small_focus_data


@pytest.fixture(scope="session")
def small_fof_data(tmp_path_factory) -> Path:
    """LM_EVAL_BIAS_DATA_DIR-style folder with `fact_or_fair` built from the synthetic source."""
    from lm_eval_bias.datasets_builder.fact_or_fair import build_fact_or_fair
    from lm_eval_bias.fact_or_fair.synthetic import make_synthetic_fact_or_fair

    root = tmp_path_factory.mktemp("fof_small")
    build_fact_or_fair(make_synthetic_fact_or_fair(root / "src"), root / "data" / "fact_or_fair", seed=5)
    return root / "data"


@pytest.fixture
def fof_env(small_fof_data, monkeypatch) -> Path:
    monkeypatch.setenv("LM_EVAL_BIAS_DATA_DIR", str(small_fof_data))
    return small_fof_data


@pytest.fixture(scope="session")
def small_cf_vqa_data(tmp_path_factory) -> Path:
    """LM_EVAL_BIAS_DATA_DIR-style folder with `cf_vqa`: 6 synthetic pairs per subcategory (102 pairs),
    questions alternately written by two sources (Table 11)."""
    from lm_eval_bias.datasets_builder.cf_vqa import build_cf_vqa
    from lm_eval_bias.cf_vqa.synthetic import make_synthetic_cf_vqa

    root = tmp_path_factory.mktemp("cf_vqa_small")
    build_cf_vqa(make_synthetic_cf_vqa(root / "src", pairs_per_subcategory=6, size=32, question_sources=("o3", "Sonnet 4")),
                 root / "data" / "cf_vqa")
    return root / "data"


@pytest.fixture
def cf_vqa_env(small_cf_vqa_data, monkeypatch) -> Path:
    monkeypatch.setenv("LM_EVAL_BIAS_DATA_DIR", str(small_cf_vqa_data))
    return small_cf_vqa_data


@pytest.fixture(scope="session")
def small_vignette_data(tmp_path_factory) -> Path:
    """LM_EVAL_BIAS_DATA_DIR-style folder with `vignette`: the synthetic lists (14 identities, 6
    activities, 4 SSCM pairs) and every individual image, built with the real builder."""
    from lm_eval_bias.datasets_builder.vignette import build_vignette
    from lm_eval_bias.vignette import synthetic as synthetic_vignette

    root = tmp_path_factory.mktemp("vignette_small")
    lists = synthetic_vignette.write_lists(root / "lists")
    build_vignette(synthetic_vignette.write_images(root / "src", size=40), lists, root / "data" / "vignette")
    return root / "data"


@pytest.fixture
def vignette_env(small_vignette_data, monkeypatch) -> Path:
    monkeypatch.setenv("LM_EVAL_BIAS_DATA_DIR", str(small_vignette_data))
    return small_vignette_data
