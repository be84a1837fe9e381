"""Bias report: built from real lm-eval output folders of planted-bias runs (two full runs, every task
group of the plugin run with ``--limit``, the probability-scored group), checked on its cards, CSV
tables, figures, leaderboard and cross-model correlations, and opened in headless Chromium at 1280 px."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from lm_eval_bias.reflect.schema import GROUPS
from lm_eval_bias.models.bias_probe import BiasProbeLM
from lm_eval_bias.report.intervals import OUTSIDE_NOTE

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
TASKS = ("focus_2afc_income,focus_mcq_salary,focus_salary,fact_or_fair_objective_gender,"
         "fact_or_fair_subjective_baseline_gender,cf_vqa,vignette_stereotype,vignette_decision")
MODEL_A = "vignette_prefer=old woman,vignette_low_terms=unfriendly|dishonest|incompetent|disreputable,cf_flip=0.5"
MODEL_B = "race_order=Black>Latino>White>Asian>Middle_Eastern,gender_order=woman>man"
GROUPS_MODEL = "refusal_rate=0.3,seed=3"
LOGPROB_MODEL = "seed=11"
LIMIT = 8
#: the groups the README tells users to run
README_GROUPS = {"reflect", "focus_2afc", "focus_mcq", "fact_or_fair", "cf_vqa_all", "vignette"}
BENCHMARKS = {"reflect": "focus_", "fact_or_fair": "fact_or_fair_", "cf_vqa": "cf_vqa", "vignette": "vignette_"}


def task_folder() -> Path:
    """The plugin's task YAMLs (``lm-eval-bias tasks-dir``)."""
    try:
        from lm_eval_bias import tasks_dir

        return tasks_dir()
    except ImportError:
        return ROOT / "task_yamls"


def task_groups() -> dict[str, list[str]]:
    """Every group of the plugin (<tasks-dir>/*/_*.yaml) -> its members (tasks or groups)."""
    out = {}
    for path in sorted(task_folder().glob("*/_*.yaml")):
        config = yaml.safe_load(path.read_text())
        out[config["group"]] = list(config["task"])
    return out


def leaf_tasks(group: str, groups: dict[str, list[str]]) -> list[str]:
    return [t for m in groups[group] for t in (leaf_tasks(m, groups) if m in groups else [m])]


def _run(out: Path, model_args: str, tasks: str, env: dict, limit: int | None = None) -> None:
    cmd = [str(BIN / "lm-eval-bias"), "run", "--model", "bias-probe", "--model_args", model_args, "--tasks", tasks,
           "--output_path", str(out), "--log_samples"] + (["--limit", str(limit)] if limit else [])
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.fixture(scope="module")
def report(tmp_path_factory, small_focus_data, small_fof_data, small_cf_vqa_data, small_vignette_data):
    """Report of four models: A and B (full runs of one task per paper figure), G (every top-level
    group with --limit, 30 % refusals) and, when the plugin has probability-scored groups, L (those)."""
    root = tmp_path_factory.mktemp("report")
    data = root / "data"
    data.mkdir()
    for folder in (small_focus_data / "focus", small_focus_data / "focus_bios", small_fof_data / "fact_or_fair",
                   small_cf_vqa_data / "cf_vqa", small_vignette_data / "vignette"):
        os.symlink(folder, data / folder.name)
    env = {**os.environ, "LM_EVAL_BIAS_DATA_DIR": str(data), "LM_EVAL_BIAS_BOOTSTRAP_ITERS": "50",
           "LM_EVAL_BIAS_REPORT_BOOTSTRAP_ITERS": "20"}
    groups = task_groups()
    nested = {m for members in groups.values() for m in members}
    top = [g for g in groups if g not in nested]
    _run(root / "runs" / "a", MODEL_A, TASKS, env)
    _run(root / "runs" / "b", MODEL_B, TASKS, env)
    _run(root / "runs" / "groups", GROUPS_MODEL, ",".join(g for g in top if "logprob" not in g), env, limit=LIMIT)
    logprob = [g for g in top if "logprob" in g]  # scored by probability: a separate model label ([logprob])
    if logprob:
        _run(root / "runs" / "logprob", LOGPROB_MODEL, ",".join(logprob), env, limit=LIMIT)
    proc = subprocess.run([str(BIN / "lm-eval-bias"), "report", str(root / "runs"), "--output", str(root / "report")],
                          capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return root / "report"


def _folder(report: Path, kind: str, needle: str) -> Path:
    matches = [p for p in (report / kind).iterdir() if p.is_dir() and needle in p.name]
    assert len(matches) == 1, [p.name for p in (report / kind).iterdir()]
    return matches[0]


def _card(report: Path, needle: str) -> str:
    matches = [p for p in (report / "cards").glob("*.html") if needle in p.name]
    assert len(matches) == 1, [p.name for p in (report / "cards").iterdir()]
    return matches[0].read_text()


def _text(page: str) -> str:
    """Visible text of a page (no data URIs, no tags)."""
    return re.sub(r"<[^>]+>", " ", re.sub(r'src="data:[^"]*"', "", page))


def _expected_win_matrix(**kwargs) -> np.ndarray:
    utilities = BiasProbeLM(**kwargs).utilities
    n = len(GROUPS)
    w = np.array([[float(utilities[i] > utilities[j]) for j in range(n)] for i in range(n)])
    np.fill_diagonal(w, np.nan)
    return w


# -- numbers --------------------------------------------------------------------------------------------
def test_win_matrix_csv_shows_the_planted_preference(report):
    for needle, kwargs in (("vignette_prefer", {}), ("race_order", {"race_order": "Black>Latino>White>Asian>Middle_Eastern",
                                                                     "gender_order": "woman>man"})):
        table = pd.read_csv(_folder(report, "tables", needle) / "focus_2afc_income_win_matrix.csv", index_col=0)
        assert list(table.index) == [f"{g.race.replace('_', ' ')} {g.gender}" for g in GROUPS]
        np.testing.assert_array_equal(table.values, _expected_win_matrix(**kwargs))


def test_spearman_and_leaderboard(report):
    from scipy.stats import spearmanr

    table = pd.read_csv(report / "tables" / "cross_model_spearman_focus_2afc_income.csv", index_col=0)
    assert table.shape == (3, 3)  # A, B and the --limit run of every group (L runs the logprob task instead)
    label_a, label_b = (next(m for m in table.index if n in m) for n in ("vignette_prefer", "race_order"))
    assert table.loc[label_a, label_a] == 1.0 and table.loc[label_b, label_b] == 1.0
    a = _expected_win_matrix()
    b = _expected_win_matrix(race_order="Black>Latino>White>Asian>Middle_Eastern", gender_order="woman>man")
    upper = np.triu_indices(10, k=1)
    assert table.loc[label_a, label_b] == pytest.approx(spearmanr(a[upper], b[upper]).statistic)

    board = pd.read_csv(report / "leaderboard.csv", index_col=0)
    assert len(board) == 3 + bool(list((report / "cards").glob("*logprob*")))
    row = board.loc[[m for m in board.index if "race_order" in m][0]]
    from tests.reflect.test_reflect_pipeline import expected_2afc_deterministic

    male, _ = expected_2afc_deterministic(BiasProbeLM(race_order="Black>Latino>White>Asian>Middle_Eastern",
                                                      gender_order="woman>man").utilities)
    assert row["focus_2afc_income:male_win_rate"] == pytest.approx(male) and male < 0.5
    assert row["focus_2afc_income:male_win_rate:ci95_low"] <= male <= row["focus_2afc_income:male_win_rate:ci95_high"]
    listed = json.loads((report / "leaderboard.json").read_text())
    assert {entry["model"] for entry in listed} == set(board.index)
    assert (report / "leaderboard.md").read_text().count("\n| bias-probe") == len(board)


def test_every_leaderboard_number_of_a_full_run_has_an_interval(report):
    """FACT-OR-FAIR, CF-VQA and VIGNETTE keys too (the report resamples their records)."""
    listed = json.loads((report / "leaderboard.json").read_text())
    for entry in listed:
        if not any(n in entry["model"] for n in ("vignette_prefer", "race_order")):
            continue
        benchmarks = {next(b for b, prefix in BENCHMARKS.items() if m.startswith(prefix)) for m in entry["metrics"]}
        assert benchmarks == set(BENCHMARKS), benchmarks
        for name, value in entry["metrics"].items():
            if value["value"] is None:
                assert value["interval"] == "not run" or value["interval"].startswith("no data"), (name, value)
            elif value["ci95"] is None:  # only where no valid interval exists, with the reason (issue 31)
                designed = {  # reason -> the keys it may be given to
                    # REFLECT Pol / JSD, FACT-OR-FAIR's scores as defined (<key>_debiased carries the interval)
                    "no interval: plug-in magnitude": ("polarization", "jsd_", "s_e", "s_kld", "s_fair", "distance"),
                    # REFLECT Ext: a step function of the cells (docs/reflect.md)
                    "no interval: step function of the cells": ("extreme_cell_rate",),
                    # FACT-OR-FAIR scores at designs with too few answers per cell (docs/fact-or-fair.md)
                    "no interval: too few answers per cell": ("s_e", "s_kld", "s_fair", "distance"),
                    # VIGNETTE magnitudes: estimate and null floor, no interval (docs/vignette.md "Magnitudes")
                    "no interval: none from the task": ("selection_spread", "mean_abs_polarity"),
                }
                assert value["interval"] in designed, (name, value)
                metric_name = name.split(":")[1]
                assert metric_name.startswith(designed[value["interval"]]) or any(
                    part in metric_name for part in ("spread", "mean_abs_polarity")
                    if value["interval"] == "no interval: none from the task"), (name, value)
            else:  # an interval is never hidden; one that excludes its estimate says so
                inside = value["ci95"][0] <= value["value"] <= value["ci95"][1]
                assert inside != value["interval"].endswith(OUTSIDE_NOTE), (name, value)
                assert "bootstrap" in value["interval"], (name, value)


def test_leaderboard_differences_of_magnitudes_have_the_tie_test_and_no_interval(report):
    """The adjacent comparisons behind the ranks: a difference of two models' plug-in magnitudes (REFLECT
    Pol, Ext, JSD; FACT-OR-FAIR's scores; VIGNETTE's spreads and mean |polarity|) is tested but has no
    interval; a difference of rates and shares has both."""
    table = pd.read_csv(report / "leaderboard_comparisons.csv")
    tested = table[table["p"].notna()]
    magnitude = tested["key"].str.startswith(("polarization", "extreme_cell_rate", "jsd_", "s_e", "s_kld", "s_fair",
                                              "distance", "selection_spread", "mean_abs_polarity"))
    assert magnitude.sum() >= 3 and (~magnitude).sum() >= 3
    assert tested.loc[magnitude, "ci95_low"].isna().all() and tested.loc[magnitude, "ci95_high"].isna().all()
    assert tested.loc[magnitude, "method"].str.contains("no interval of the difference").all()
    assert tested.loc[~magnitude, "ci95_low"].notna().all()
    assert not tested.loc[~magnitude, "method"].str.contains("no interval").any()
    assert set(tested.loc[magnitude, "key"]) & {"selection_spread_race_ethnicity_color", "polarization"}


def test_vignette_and_cf_vqa_tables(report):
    folder = _folder(report, "tables", "vignette_prefer")
    identities = pd.read_csv(folder / "vignette_decision_decision_identities.csv", index_col=0)
    assert identities.loc["old woman", "selection_frequency"] == 100.0
    assert identities.loc["young woman", "selection_frequency"] == 0.0
    assert identities.loc["old woman", "correction"] == "holm"
    polarity = pd.read_csv(folder / "vignette_stereotype_polarity.csv", index_col=0)
    assert (polarity.loc["old woman"] == 100.0).all()
    categories = pd.read_csv(folder / "cf_vqa_categories.csv", index_col=0)
    assert set(categories.columns) == {"cf_vqa"}
    assert (categories.loc[[i for i in categories.index if i.startswith("consistency ·")], "cf_vqa"] < 1.0).all()
    keys = pd.read_csv(folder / "cf_vqa_keys.csv", index_col=0)
    assert keys.loc["consistency", "ci95_low"] < keys.loc["consistency", "value"] < keys.loc["consistency", "ci95_high"]


def test_salary_magnitude_table_shows_no_interval_and_says_why(report):
    """mean |Gap%| has no interval at any design (reflect.tables.MEAN_ABS_NO_INTERVAL): the table carries its
    estimate, null floor and p-value, no interval columns, and the caption says why."""
    from lm_eval_bias.reflect.tables import MEAN_ABS_NO_INTERVAL

    table = pd.read_csv(_folder(report, "tables", "race_order") / "focus_salary_tables.csv", index_col=0)
    assert {"estimate", "null", "p_null"} <= set(table.columns) and not any("ci95" in c for c in table.columns)
    assert set(table.index) == {f"mean_abs_gap_pct_{g}" for g in ("male", "black", "asian", "latino", "middle_eastern")}
    pages = [p.read_text() for p in report.rglob("*.html") if "focus_salary_tables" in p.read_text()]
    assert pages and all(html.escape(MEAN_ABS_NO_INTERVAL) in p and "95 % intervals for the parameter" not in p
                         for p in pages)


def test_figures_are_exported_at_paper_size(report):
    from PIL import Image

    figures = _folder(report, "figures", "vignette_prefer")
    for name in ("focus_2afc_income_win_matrix", "focus_2afc_income_race_gender", "focus_mcq_salary_gaps",
                 "focus_salary_gaps_by_occupation", "fact_or_fair_tradeoff", "fact_or_fair_fair_vs_fact", "cf_vqa_curves", "vignette_stereotype_polarity",
                 "vignette_decision_spread"):
        assert (figures / f"{name}.svg").read_text().lstrip().startswith("<?xml"), name
        with Image.open(figures / f"{name}.png") as image:
            assert image.width in (990, 2040), (name, image.size)  # 3.3 or 6.8 in at 300 dpi
            assert round(image.info["dpi"][0]) == 300


def test_fig_4d_f_has_data(report):
    """The race and gender win rates (Fig. 4d–f) were empty (upper-case race names looked up in lower-case
    keys); now the bars are drawn and the data table is full."""
    import matplotlib
    from PIL import Image

    for needle in ("vignette_prefer", "race_order"):
        table = pd.read_csv(_folder(report, "tables", needle) / "focus_2afc_income_race_gender.csv")
        assert len(table) == 15 and table["win_rate"].notna().all()
        assert (table["ci95_low"] <= table["win_rate"]).all() and (table["win_rate"] <= table["ci95_high"]).all()
        with Image.open(_folder(report, "figures", needle) / "focus_2afc_income_race_gender.png") as image:
            pixels = np.asarray(image.convert("RGB"), dtype=int)
        first = np.array(matplotlib.colormaps["cividis"](0.25)[:3]) * 255  # the first series' fill
        assert (np.abs(pixels - first).sum(axis=2) < 12).sum() > 2000, needle
    # B: the woman always wins, every within-gender race order is Black > Latino > White > Asian > Middle Eastern
    b = pd.read_csv(_folder(report, "tables", "race_order") / "focus_2afc_income_race_gender.csv")
    within = b[b["series"] == "within women"].set_index("race")["win_rate"]
    assert within["black"] == 1.0 and within["middle_eastern"] == 0.0
    assert (b[b["series"] == "man vs woman, same race"]["win_rate"] == 0.0).all()


# -- groups, partial runs ---------------------------------------------------------------------------------
def test_every_task_group_goes_through_the_report(report):
    """The README's groups (cf_vqa_all included: its name starts like a task's) and every other group of
    the plugin were run; the report shows each of their tasks and never takes a group for a task."""
    groups = task_groups()
    assert README_GROUPS <= set(groups)
    readme = (ROOT / "README.md").read_text()
    for name in re.findall(r"--tasks ([a-z_0-9]+)", readme):
        assert name in groups or any(task_folder().rglob(f"{name}.yaml")), name
    results = [json.loads(p.read_text()) for p in (report.parent / "runs").glob("*/*/results_*.json")]
    assert set(groups) == {g for r in results for g in r.get("group_subtasks", {})}
    shown = {p.name.removesuffix("_keys.csv") for p in (report / "tables").glob("*/*_keys.csv")}
    for group, members in groups.items():
        assert group not in shown, group
        assert set(leaf_tasks(group, groups)) <= shown, (group, set(leaf_tasks(group, groups)) - shown)
    for page in [report / "index.html", *(report / "cards").glob("*.html")]:
        assert not re.search(r'data-task="(%s)"' % "|".join(groups), page.read_text()), page


def test_limit_runs_carry_a_visible_warning(report):
    page = _card(report, "refusal_rate_0.3")
    assert 'class="warning"' in page and "Partial run" in page and f"(--limit {LIMIT})" in page
    assert "do not report them" in _text(page)
    assert page.count('class="badge">partial run') >= 4  # one per benchmark headline at least
    assert "PARTIAL RUN" in page  # figure captions (and the images) are stamped
    for needle in ("vignette_prefer", "race_order"):
        full = _card(report, needle)
        assert "Partial run" not in full and "PARTIAL RUN" not in full
    index = (report / "index.html").read_text()
    assert "partial run" in index and re.search(r"refusal_rate=0\.3,seed=3\)+: partial run", _text(index))


# -- page structure ----------------------------------------------------------------------------------------
def test_one_card_per_model_with_headlines_intervals_details_and_glossary(report):
    index = (report / "index.html").read_text()
    links = re.findall(r'href="(cards/[^"]+\.html)"', index)
    cards = sorted((report / "cards").glob("*.html"))
    assert sorted(set(links)) == sorted(f"cards/{p.name}" for p in cards) and len(cards) >= 3
    for path in cards:
        page = path.read_text()
        assert page.count('<article class="card">') == 1
        sections = re.findall(r'<section class="benchmark" id="([a-z_]+)">(.*?)</section>', page, re.S)
        assert sections, path.name
        for name, body in sections:
            headlines = re.findall(r'<li class="headline".*?</li>', body, re.S)
            assert headlines, (path.name, name)
            for line in headlines:  # a number, then its interval or why it has none
                assert re.search(r'class="num">[^<]+</span> <(span class="ci"|a class="no-ci" href="#no-interval")', line), line
            assert "<details" in body and "Detailed tables" in body
        if "vignette_prefer" in path.name or "race_order" in path.name:
            assert {n for n, _ in sections} == set(BENCHMARKS)
            for name, body in sections:  # full runs: the lead number of every benchmark has an interval
                first = re.search(r'<li class="headline".*?</li>', body, re.S).group(0)
                assert re.search(r'class="num">[^<]+</span> <span class="ci"', first), (name, first)
    for path in [report / "index.html", *cards]:
        page = path.read_text()
        linked = set(re.findall(r'href="#(key-[a-z_]+-[A-Za-z0-9_]+)"', page))
        defined = set(re.findall(r'<dt id="(key-[a-z_]+-[A-Za-z0-9_]+)"', page))
        assert linked and linked == defined, linked ^ defined  # every key on the page is in its glossary
        assert '<section id="glossary">' in page
        assert '<h3 id="no-interval">' in page  # what each "no interval: …" means
        for dd in re.findall(r'<dt id="key-[^"]+">.*?</dt><dd>(.*?)</dd>', page, re.S):
            assert re.search(r"docs/(reflect|fact-or-fair|cf-vqa|vignette|report)\.md#[a-z_0-9]+", dd), dd
        for href in re.findall(r'class="doc" href="([^"]+)"', page):  # copies of docs/*.md in the report
            target, _, anchor = href.partition("#")
            assert f'id="{anchor}"' in (path.parent / target).read_text(), href


def test_glossary_defines_every_result_key(report, monkeypatch):
    monkeypatch.setenv("LM_EVAL_BIAS_BOOTSTRAP_ITERS", "0")  # only the keys matter here
    from lm_eval_bias.report.card import section_of
    from lm_eval_bias.report.glossary import lookup
    from lm_eval_bias.report.runs import load_runs

    fallback = lookup("reflect", "no such key")[0]
    for model in load_runs([report.parent / "runs"]):
        for run in model.tasks.values():
            for key in run.metrics:
                if not key.endswith("_stderr"):
                    assert lookup(section_of(run.family).NAME, key)[0] != fallback, (run.task, key)


def test_p_values_and_numbers_are_never_printed_as_0_000(report):
    page = _card(report, "race_order")
    # the planted race order is detected and its p-value printed as "< 0.001" or with 3 decimals (the
    # default test permutes the races of each template: its smallest p depends on the permutations). The
    # gender test flips whole templates (issue 31: a test of the average effect): with the 4 templates of
    # this data its smallest p is 2/2^4, printed with 3 decimals
    assert re.search(r'p_<wbr>race</code></a> <span class="num">(&lt; 0\.001|0\.0[0-4]\d)</span>', page)
    assert re.search(r'p_<wbr>gender</code></a> <span class="num">0\.1\d\d</span>', page)
    for path in [report / "index.html", *(report / "cards").glob("*.html")]:
        assert not re.search(r"(?<![\d.])[−-]?0\.000(?![\d])", _text(path.read_text())), path.name
    from lm_eval_bias.report.render import fmt, fmt_p

    assert fmt_p(0.0) == fmt_p(1e-9) == "< 0.001" and fmt_p(0.0123) == "0.012"
    assert fmt(0.0) == "0" and fmt(0.00004) == "4.0e−05" and fmt(-0.25) == "−0.250" and fmt(float("nan")) == "n/a"
    from lm_eval_bias.report.render import fmt_ci

    # an interval end below 1 never prints as 1: FACT-OR-FAIR's S_fair interval that excludes the ideal
    assert fmt_ci(0.99997, 1.0 - 1.03e-10) == "[1 − 3.0e−05, 1 − 1.0e−10]"
    assert fmt_ci(0.9, 1.0) == "[0.900, 1.000]" and fmt_ci(0.2, 0.9996) == "[0.200, 1 − 0.0004]"
    assert fmt_ci(0.2, 0.9994) == "[0.200, 0.999]" and fmt_ci(0.994, 0.996, digits=2) == "[0.99, 1 − 0.004]"
    assert fmt_ci(float("nan"), float("nan")) == "[n/a, n/a]"


def test_empty_heatmaps_say_no_data(report):
    page = _card(report, "race_order")
    assert 'class="nodata"' in page and "PairComp" in page and "no data" in page
    from lm_eval_bias.report.render import all_nan

    assert all_nan(np.full((3, 3), np.nan)) and not all_nan(np.eye(2))


def test_figures_survive_grayscale_printing():
    """Bar series differ by hatch and by lightness, not by hue alone; the heatmap colour map gets lighter
    monotonically (so it reads in grayscale)."""
    import matplotlib
    import matplotlib.pyplot as plt

    from lm_eval_bias.report.render import CMAP, bars, style

    def lightness(rgba) -> float:
        r, g, b = rgba[:3]
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    with style():
        fig = bars({"a": {"x": 1.0}, "b": {"x": 2.0}, "c": {"x": 3.0}}, "t", "y")
    patches = [container.patches[0] for container in fig.axes[0].containers]
    plt.close(fig)
    assert len({p.get_hatch() for p in patches}) == 3
    shades = sorted(lightness(p.get_facecolor()) for p in patches)
    assert min(b - a for a, b in zip(shades, shades[1:])) > 0.1
    ramp = [lightness(matplotlib.colormaps[CMAP](x)) for x in np.linspace(0, 1, 64)]
    assert all(b > a for a, b in zip(ramp, ramp[1:]))


# -- in a browser --------------------------------------------------------------------------------------------
PROBE = """<script>window.addEventListener('load', () => {
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  const root = document.documentElement, wide = [];
  document.querySelectorAll('body *').forEach(e => {
    if (!e.closest('.scroll') && e.getBoundingClientRect().right > root.clientWidth + 1) wide.push(e.tagName + '.' + e.className);
  });
  document.body.setAttribute('data-scroll-width', root.scrollWidth);
  document.body.setAttribute('data-client-width', root.clientWidth);
  document.body.setAttribute('data-wide', wide.slice(0, 5).join(' '));
});</script>"""


def _browser() -> str:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        if os.environ.get("CI"):
            pytest.fail("CI must install Debian's chromium (see .ci/run)")
        pytest.skip("chromium not installed")
    return browser


def _chromium(browser: str, profile: Path, *args: str) -> subprocess.CompletedProcess:
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
             f"--user-data-dir={profile}"]
    proc = subprocess.run([browser, *flags, *args], capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


def test_pages_open_in_chromium_without_overflow_at_1280px(report, tmp_path):
    for page in [report / "index.html", *(report / "cards").glob("*.html")]:
        text = page.read_text()
        assert "data:image/png;base64," in text and "http://" not in text and "https://" not in text
        probe = page.with_name(page.stem + ".probe.html")
        probe.write_text(text.replace("</body>", PROBE + "</body>"))
        try:
            dom = _chromium(_browser(), tmp_path / f"profile-{page.stem}", "--window-size=1280,900",
                            "--virtual-time-budget=10000", "--dump-dom", probe.as_uri()).stdout
        finally:
            probe.unlink()
        width = re.search(r'data-scroll-width="(\d+)" data-client-width="(\d+)" data-wide="([^"]*)"', dom)
        assert width, dom[-500:]
        assert int(width.group(2)) == 1280 and int(width.group(1)) <= 1280 and width.group(3) == "", (page.name,
                                                                                                      width.groups())


def test_html_is_self_contained_and_renders(report, tmp_path):
    browser = _browser()

    def open_page(page: Path, shot: Path) -> str:
        proc = _chromium(browser, tmp_path / f"profile-{shot.stem}", "--enable-logging=stderr", "--v=0",
                         "--window-size=1280,2000", f"--screenshot={shot}", page.as_uri())
        return proc.stderr

    bad = tmp_path / "bad.html"  # the console check itself catches errors
    bad.write_text("<html><body><script>throw new Error('planted failure')</script></body></html>")
    assert "Uncaught Error: planted failure" in open_page(bad, tmp_path / "bad.png")
    from PIL import Image

    for page in (report / "index.html", next((report / "cards").glob("*race_order*"))):
        shot = tmp_path / f"{page.stem[:20]}.png"
        console = [line for line in open_page(page, shot).splitlines() if ":CONSOLE" in line]
        assert console == [], console
        with Image.open(shot) as image:
            assert image.size == (1280, 2000)
            assert len(image.convert("L").getcolors(maxcolors=100000) or []) > 50  # not a blank page
