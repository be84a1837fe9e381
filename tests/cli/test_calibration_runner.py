"""``scripts/calibrate_statistics.py``: runs every calibration module (a fake one with known rows, and
every real module present, in quick mode with tiny seeds), prints one table, writes the docs table
between its markers and the figure."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from scripts import calibrate_statistics as runner  # noqa: E402
from scripts.calibration import ROW_FIELDS  # noqa: E402

FAKE = '''
from scripts.calibration import ROW_FIELDS
CALLS = []

def run(n_seeds, n_boot, quick):
    CALLS.append((n_seeds, n_boot, quick))
    base = dict(benchmark="fake", design="3 clusters", dgp="planted", n_seeds=n_seeds, n_boot=n_boot, seed=0, note="")
    return [dict(base, quantity="share", kind="interval", truth=0.5, mean_estimate=0.49, coverage=0.95,
                 rejection_rate=float("nan"), target_met=True),
            dict(base, quantity="p_share | null", kind="test", truth=float("nan"), mean_estimate=0.5,
                 coverage=float("nan"), rejection_rate=0.2, target_met=False),
            dict(base, quantity="p_share_paper", kind="test", truth=float("nan"), mean_estimate=0.5,
                 coverage=float("nan"), rejection_rate=0.4, target_met=False, role="paper"),
            dict(base, quantity="any of 3, raw p", kind="test", truth=float("nan"), mean_estimate=0.5,
                 coverage=float("nan"), rejection_rate=0.3, target_met=False, role="diagnostic")]
'''
BROKEN = "def run(n_seeds, n_boot, quick):\n    raise RuntimeError('planted failure')\n"


@pytest.fixture
def modules_dir(tmp_path) -> Path:
    folder = tmp_path / "calibration"
    folder.mkdir()
    (folder / "fake.py").write_text(FAKE)
    (folder / "broken.py").write_text(BROKEN)
    return folder


def test_runner_table_docs_and_figure_on_a_fake_module(modules_dir, tmp_path, capsys):
    docs = tmp_path / "statistics.md"
    docs.write_text(f"# Statistics\n\nbefore\n\n{runner.BEGIN}\nold table\n{runner.END}\n\nafter\n")
    figure = tmp_path / "calibration.png"
    rows = runner.main(["--quick", "--seeds", "3", "--boot", "10", "--only", "fake", "--write-docs",
                        "--modules-dir", str(modules_dir), "--docs", str(docs), "--figure", str(figure)])
    assert [r["quantity"] for r in rows] == ["share", "p_share | null", "p_share_paper", "any of 3, raw p"]
    assert all(set(r) == set(ROW_FIELDS) for r in rows) and rows[0]["n_seeds"] == 3 and rows[0]["n_boot"] == 10
    # a row without a role is a default row; the paper's procedure and the diagnostic keep theirs
    assert [r["role"] for r in rows] == ["default", "default", "paper", "diagnostic"]
    printed = capsys.readouterr().out
    assert "coverage" in printed and "0.950" in printed and "0.200" in printed
    assert "paper's, kept by name" in printed and "target met: 1 of 2 default rows" in printed
    # the module said target_met=True/False; the runner recomputes it from the band: 0.95 in, 0.20 out
    assert [r["target_met"] for r in rows[:2]] == [True, False]
    # Monte Carlo standard error at 3 seeds: sqrt(0.95 * 0.05 / 3) = 0.1258 for either kind
    assert rows[0]["mc_error"] == pytest.approx(math.sqrt(0.0475 / 3)) == rows[1]["mc_error"]
    text = docs.read_text()
    assert "old table" not in text and text.startswith("# Statistics\n\nbefore") and text.endswith("after\n")
    table = text.split(runner.BEGIN)[1].split(runner.END)[0]
    assert "| fake | share | interval | default | 3 clusters | planted | 0.500 | 0.490 | 0.950 | — | 0.126 | yes |" in table
    assert "p_share \\| null" in table and "| **no** |" in table and "1 of 2 default rows" in table
    # the row outside its band is listed under the table, the others are not
    listed = table.split("Rows outside the band")[1]
    assert "p_share \\| null" in listed and "rejection 0.200 outside 0.04–0.06" in listed
    # with its distance from the target in Monte Carlo SEs: (0.20 - 0.05) / 0.1258 = +1.2
    assert "(MC SE 0.126; z = +1.2)" in listed
    assert "share —" not in listed and "p_share_paper" not in listed and "raw p" not in listed
    # target not applied to the paper's procedure or the diagnostic: labelled, not counted as misses
    assert "| fake | p_share_paper | test | paper | 3 clusters | planted | — | 0.500 | — | 0.400 | 0.126 | paper's, kept by name |" in table
    assert "| fake | any of 3, raw p | test | diagnostic | 3 clusters | planted | — | 0.500 | — | 0.300 | 0.126 | diagnostic |" in table
    assert runner.target_summary(rows) == (1, 2)
    assert figure.stat().st_size > 5000 and figure.read_bytes()[:4] == b"\x89PNG"


def test_a_failing_module_is_an_error_row_and_the_others_still_run(modules_dir):
    modules = runner.discover(None, modules_dir)
    assert list(modules) == ["broken", "fake"]
    rows = runner.run_all(modules, 2, 5, True, log=open("/dev/null", "w"))
    assert rows[0]["kind"] == "error" and "planted failure" in rows[0]["note"]
    assert [r["benchmark"] for r in rows[1:]] == ["fake"] * 4
    with pytest.raises(SystemExit, match="no calibration module nope"):
        runner.discover(["nope"], modules_dir)


def test_every_real_module_runs_in_quick_mode():
    """The modules present (reflect, fact_or_fair, cf_vqa, vignette, paired — as written so far)."""
    modules = runner.discover()
    assert "paired" in modules
    for name, module in modules.items():
        rows = runner.run_all({name: module}, 2, 20, True, log=open("/dev/null", "w"))
        assert rows, name
        assert all(r["kind"] != "error" for r in rows), [r["note"] for r in rows if r["kind"] == "error"]
        for r in rows:
            assert set(r) == set(ROW_FIELDS) and r["kind"] in ("interval", "test", "null_floor"), (name, r)
            for field in ("coverage", "rejection_rate"):
                value = float(r[field])
                assert math.isnan(value) or 0.0 <= value <= 1.0, (name, r["quantity"], field, value)
            # only interval rows carry a coverage (NaN when every seed's interval was NaN, e.g. a quick
            # design too small to resample)
            assert r["kind"] == "interval" or not math.isfinite(float(r["coverage"])), r
            assert r["n_seeds"] == 2 and r["target_met"] in (True, False, None)
            assert r["role"] in ("default", "paper", "diagnostic"), (name, r)
    paired = runner.run_all({"paired": modules["paired"]}, 2, 20, True, log=open("/dev/null", "w"))
    # three designs x (2 intervals + 1 test), and the magnitudes' tie tests: 3 models x 2 keys x (exchange, t-test),
    # + exchange_tie_rows' two FACT-OR-FAIR rows in quick mode, + the leaderboard's 12 other headline keys x 3
    assert {r["kind"] for r in paired} == {"interval", "test"} and len(paired) == 9 + 12 + 2 + 12 * 3
    headline = [r for r in paired if r["seed"] >= 20260414 + 100_000]
    assert len(headline) == 36 and {r["role"] for r in headline} == {"default"}
    designs = {name for names in modules["paired"].LEADERBOARD_INTERVAL_DESIGNS.values() for name in names.values()}
    assert {r["quantity"].split(":")[0] for r in headline} == designs - {"REFLECT 2AFC male_win_rate", "CF-VQA consistency"}
    ties = [r for r in paired if "(plug-in): exchange test" in r["quantity"]]
    assert len(ties) == 6 + 2 and {r["role"] for r in ties} == {"default", "diagnostic"}


def test_family_wise_rows_are_held_to_at_most_the_level():
    """'any of a family, Holm' rows meet the target when they reject at most 6 % (+ Monte Carlo error);
    per-test rows keep the two-sided band."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("_cal", Path(__file__).resolve().parents[2] / "scripts" / "calibrate_statistics.py")
    cal = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cal)
    row = {"kind": "test", "quantity": "polarity cell test, any cell Holm p < 0.05", "rejection_rate": 0.0,
           "n_seeds": 200, "target_met": False}
    assert cal.family_wise_target(row)["target_met"] is True
    assert cal.is_family_wise({**row, "quantity": "any of 6 win-rate tests, Holm p < 0.05"})
    assert not cal.is_family_wise({**row, "quantity": "any of 18 per-occupation tests, raw p < 0.05"})
    assert cal.family_wise_target({**row, "rejection_rate": 0.095})["target_met"] is False
    # no Monte Carlo allowance: 0.065 at 200 seeds was "met" with the old +3 points, now it is not
    assert cal.family_wise_target({**row, "rejection_rate": 0.065})["target_met"] is False
    assert cal.family_wise_target({**row, "rejection_rate": 0.06})["target_met"] is True
    per_test = {**row, "quantity": "p_male_win_rate", "target_met": False}
    assert cal.family_wise_target(per_test)["target_met"] is False


@pytest.mark.parametrize("kind, coverage, rejection, family_wise, met", [
    ("interval", 0.93, math.nan, False, True), ("interval", 0.97, math.nan, False, True),
    ("interval", 0.925, math.nan, False, False), ("interval", 0.975, math.nan, False, False),
    ("interval", 1.0, math.nan, False, False), ("test", math.nan, 0.04, False, True),
    ("test", math.nan, 0.035, False, False), ("test", math.nan, 0.065, False, False),
    ("test", math.nan, 0.0, True, True), ("test", math.nan, 0.061, True, False),
    ("null_floor", math.nan, math.nan, False, None), ("interval", math.nan, math.nan, False, None)])
def test_band_has_no_monte_carlo_allowance(kind, coverage, rejection, family_wise, met):
    from scripts.calibration import band_met

    assert band_met(kind, coverage, rejection, family_wise) is met


def test_inside_band_probability_is_the_binomial_mass_in_the_band_and_matches_a_simulation():
    """The reference the "target met" count is read against: an exact 95 % interval over 250 seeds lands in
    93-97 % when 233..242 of them cover; an exact 5 % test over 1,000 seeds in 4-6 % when 40..60 reject."""
    from scipy.stats import binom

    from scripts.calibration import inside_band_probability

    assert inside_band_probability("interval", 250) == pytest.approx(binom.pmf(range(233, 243), 250, 0.95).sum())
    assert inside_band_probability("test", 1000) == pytest.approx(binom.pmf(range(40, 61), 1000, 0.05).sum())
    assert inside_band_probability("test", 1000, True) == pytest.approx(binom.cdf(60, 1000, 0.05))
    assert inside_band_probability("null_floor", 250) is None
    rates = np.random.default_rng(0).binomial(250, 0.95, size=200_000) / 250
    assert np.mean((rates >= 0.93) & (rates <= 0.97)) == pytest.approx(inside_band_probability("interval", 250), abs=0.003)
    rows = [{"kind": "interval", "n_seeds": 250, "quantity": "x", "role": "default", "target_met": True},
            {"kind": "test", "n_seeds": 1000, "quantity": "p", "role": "default", "target_met": False},
            {"kind": "test", "n_seeds": 1000, "quantity": "p_paper", "role": "paper", "target_met": False}]
    assert runner.expected_inside(rows) == pytest.approx(inside_band_probability("interval", 250)
                                                         + inside_band_probability("test", 1000))
    assert "would put 2 of 2 inside" in runner._met_line(rows)


def test_seed_clustered_mc_error_by_hand_and_by_simulation():
    from scripts.calibration import mc_error, seed_clustered_mc_error

    # seeds with 2 / 3, 3 / 3 and 2 / 2 intervals covering (one without an interval): rate 7 / 8, residuals
    # -0.625, 0.375, 0.25 -> sqrt(0.59375 / 6) / (8 / 3) = 0.11797
    assert seed_clustered_mc_error([[1, 1, 0], [1, 1, 1], [1, np.nan, 1]]) == pytest.approx(0.11797, abs=1e-5)
    assert math.isnan(seed_clustered_mc_error([[1, 0]]))
    # 400 seeds of 50 independent 95 % intervals: about sqrt(0.95 x 0.05 / 20000) = 0.0015, a seventh of
    # mc_error(400) = 0.0109; 50 intervals that all cover or all miss together: mc_error itself
    rng = np.random.default_rng(0)
    independent = seed_clustered_mc_error(rng.random((400, 50)) < 0.95)
    assert independent == pytest.approx(math.sqrt(0.95 * 0.05 / 20000), rel=0.15)
    together = seed_clustered_mc_error(np.repeat(rng.random((400, 1)) < 0.95, 50, axis=1))
    assert together == pytest.approx(mc_error(400), rel=0.25)


def test_pooled_rows_carry_their_seed_clustered_error_into_the_table():
    from scipy.stats import norm

    from scripts.calibration import inside_band_probability, mc_error, rate_row, seed_clustered_mc_error

    # 3 seeds of 4 cells: hits 4, 3, 4 of 4 -> rate 11 / 12; residuals 1/3, -2/3, 1/3 ->
    # sqrt((1/9 + 4/9 + 1/9) / 6) / 4 = 0.08333
    by_seed = [[1, 1, 1, 1], [1, 0, 1, 1], [1, 1, 1, 1]]
    row = rate_row("x", "share per cell", "interval", "d", "g", 0.5, [0.5], sum(by_seed, []), 3, 0, 0,
                   hits_per_seed=by_seed)
    assert row["coverage"] == pytest.approx(11 / 12)
    assert row["mc_error_clustered"] == pytest.approx(0.08333, abs=1e-5) == seed_clustered_mc_error(by_seed)
    assert row["mc_error"] == row["mc_error_clustered"]
    one = rate_row("x", "one a seed", "interval", "d", "g", 0.5, [0.5], [1, 1, 0], 3, 0, 0)
    assert math.isnan(one["mc_error_clustered"]) and one["mc_error"] == pytest.approx(mc_error(3))
    # the runner keeps a pooled row's own error, its z and its chance of landing inside the band
    pooled = {**row, "coverage": 0.975, "n_seeds": 250, "mc_error_clustered": 0.002, "mc_error": 0.0138}
    checked = runner.normalise(pooled)
    assert checked["mc_error"] == 0.002 and checked["target_met"] is False
    assert runner._deviation_text(checked) == "z = +12.5, seed-clustered"
    plain = runner.normalise({**one, "coverage": 0.975, "n_seeds": 250})
    assert plain["mc_error"] == pytest.approx(mc_error(250)) and runner._deviation_text(plain) == "z = +1.8"
    assert inside_band_probability("interval", 250, clustered_error=0.01) == pytest.approx(
        norm.cdf(2.0) - norm.cdf(-2.0))
    assert inside_band_probability("interval", 250, clustered_error=math.nan) == inside_band_probability("interval", 250)
    held = [{**checked, "role": "default", "quantity": "share per cell"}]
    assert runner.expected_inside(held) == pytest.approx(norm.cdf(0.02 / 0.002) - norm.cdf(-0.02 / 0.002))


def test_per_module_json_and_assembly_from_json(modules_dir, tmp_path, capsys):
    """--json DIR writes one <module>.json per module; --from-json DIR assembles the table, the docs
    table and the figure from them without running anything (rows recomputed against the band)."""
    import json

    results = tmp_path / "results"
    runner.main(["--seeds", "4", "--boot", "10", "--only", "fake", "--json", str(results),
                 "--modules-dir", str(modules_dir)])
    saved = json.loads((results / "fake.json").read_text())
    assert saved["modules"] == ["fake"] and saved["n_seeds"] == 4 and len(saved["rows"]) == 4
    assert set(saved["wall_s"]) == {"fake"}
    # a second module saved separately, in the old plain-list format, with a stale target_met
    other = dict(saved["rows"][0], benchmark="other", quantity="spread", coverage=0.99, target_met=True)
    (results / "other.json").write_text(json.dumps([other]))
    docs = tmp_path / "statistics.md"
    docs.write_text(f"head\n{runner.BEGIN}\nold\n{runner.END}\ntail\n")
    figure = tmp_path / "calibration.png"
    capsys.readouterr()
    rows = runner.main(["--from-json", str(results), "--write-docs", "--docs", str(docs), "--figure", str(figure)])
    assert [r["benchmark"] for r in rows] == ["fake"] * 4 + ["other"]
    assert rows[-1]["target_met"] is False  # 0.99 coverage is outside 93-97 %, whatever the file said
    table = docs.read_text().split(runner.BEGIN)[1].split(runner.END)[0]
    assert "Rows outside the band (2 of 3 default rows with a target)" in table
    assert "- other: spread" in table and "coverage 0.990 outside 0.93–0.97" in table
    assert figure.read_bytes()[:4] == b"\x89PNG"
    assert "target met: 1 of 3" in capsys.readouterr().out
    one_file = tmp_path / "all.json"
    runner.main(["--seeds", "2", "--boot", "5", "--only", "fake", "--json", str(one_file), "--modules-dir", str(modules_dir)])
    assert len(json.loads(one_file.read_text())["rows"]) == 4


def test_benchmark_page_table_between_its_markers(tmp_path):
    def row(quantity, kind, coverage=math.nan, rejection=math.nan, role="default"):
        return runner.normalise({"benchmark": "reflect", "quantity": quantity, "kind": kind,
                                 "design": "48 templates (6 occupations x 8 photos) x 45 pairs x 2 orders",
                                 "dgp": "no bias; portrait effect sd 0.5 logit", "truth": 0.5, "mean_estimate": 0.5,
                                 "coverage": coverage, "rejection_rate": rejection, "n_seeds": 250, "n_boot": 100,
                                 "seed": 0, "target_met": None, "note": "", "role": role})

    rows = [row("male_win_rate", "interval", coverage=0.952), row("polarization", "interval", coverage=0.992),
            row("p_male_win_rate", "test", rejection=0.048), row("any raw", "test", rejection=0.3, role="diagnostic")]
    table = runner.page_table(rows, "reflect")
    assert "| 48 templates (6 occupations x 8 photos) | no bias | `male_win_rate` | interval | default | 0.5000 | 0.5000 " \
           "| 95.2 % | 1.4 % | 250 | yes |" in table
    # one default row outside 93-97 % (99.2 %, z = (0.992 - 0.95) / 0.0138 = +3.0); the diagnostic is not counted
    assert "**Default rows outside their band (1 of 3;" in table and "`polarization` interval 99.2 % (z = +3.0)" in table
    page, other = tmp_path / "reflect.md", tmp_path / "other.md"
    page.write_text("head\n<!-- BEGIN reflect-calibration -->\nold\n<!-- END reflect-calibration -->\ntail\n")
    other.write_text("no markers\n")
    assert runner.write_pages(rows, {"reflect": page, "vignette": other}) == [page]
    text = page.read_text()
    assert text.startswith("head\n<!-- BEGIN reflect-calibration -->\n| design |") and "old" not in text
    assert text.endswith("<!-- END reflect-calibration -->\ntail\n") and other.read_text() == "no markers\n"


def test_attainable_coverages_are_the_runs_of_consecutive_values():
    from scipy.stats import binom

    from scripts.calibration import attainable_coverages, empirical_distribution

    # 10 answers at a truth of 0.5: the symmetric runs 3-7 and 2-8 hold 89.06 % and 97.85 %; 2-7 holds 93.46 %,
    # so some (asymmetric) interval of the count is inside the band there
    ten = attainable_coverages(binom.pmf(np.arange(11), 10, 0.5))
    assert ten["inside"] and ten["values"] == 11
    assert ten["below"] == pytest.approx(binom.pmf(np.arange(3, 8), 10, 0.5).sum())  # 0.890625
    assert ten["above"] == pytest.approx(binom.pmf(np.arange(2, 9), 10, 0.5).sum())  # 0.978516
    # 108 queries, invalid with probability 0.005 (FACT-OR-FAIR's objective race design): P(0..1) = 89.78 %,
    # P(0..2) = 98.27 %, and no run of counts in 93-97 %: no interval of the count meets the band at this truth
    rare = attainable_coverages(binom.pmf(np.arange(109), 108, 0.005))
    assert not rare["inside"]
    assert rare["below"] == pytest.approx(binom.cdf(1, 108, 0.005)) and rare["above"] == pytest.approx(binom.cdf(2, 108, 0.005))
    # a simulated statistic: its distinct values in order, as probabilities
    probs = empirical_distribution([0.2, 0.1, 0.2, 0.0, np.nan, 0.1 + 1e-15])
    assert probs.tolist() == pytest.approx([0.2, 0.4, 0.4])
    assert attainable_coverages([])["values"] == 0


def test_pooled_attainable_coverages_are_means_of_one_run_per_cell():
    from scipy.stats import binom

    from scripts.calibration import attainable_coverages, pooled_attainable_coverages

    # cell A: two values at 1/2 each -> runs 0.5, 0.5, 1.0; cell B: 0.9, 0.1 -> runs 0.9, 0.1, 1.0.
    # Neither cell alone has a run in 93-97 %, but the pooled row's coverage (the mean of the two)
    # can be (1.0 + 0.9) / 2 = 0.95; means under 93 %: 0.3, 0.55, 0.7, 0.75; over 97 %: 1.0
    a, b = [0.5, 0.5], [0.9, 0.1]
    assert not attainable_coverages(a)["inside"] and not attainable_coverages(b)["inside"]
    pooled = pooled_attainable_coverages([a, b])
    assert pooled["inside"] and pooled["values"] == 2
    assert pooled["below"] == pytest.approx(0.75, abs=1e-4) and pooled["above"] == pytest.approx(1.0, abs=1e-4)
    # one cell: the same answer as attainable_coverages, to the grid's resolution
    ten = binom.pmf(np.arange(11), 10, 0.5)
    one, alone = pooled_attainable_coverages([ten]), attainable_coverages(ten)
    assert one["inside"] == alone["inside"] and one["values"] == alone["values"] == 11
    assert one["below"] == pytest.approx(alone["below"], abs=1e-4) and one["above"] == pytest.approx(alone["above"], abs=1e-4)
    assert pooled_attainable_coverages([a, []])["values"] == 0


def test_attainable_coverage_script_rows_and_docs_block(tmp_path):
    from scipy.stats import binom

    from scripts import attainable_coverage as script

    fof = script.fact_or_fair_rows()
    assert len(fof) == 1 and not fof[0]["inside"] and fof[0]["above"] == pytest.approx(0.98271, abs=1e-5)
    assert 0.9 < fof[0]["table"] <= 1.0  # the saved calibration row it explains
    cf = script.cf_vqa_rows(draws=20)
    assert len(cf) == 4 * (len(script.CF_VQA_KEYS) + 1)  # the smallest scope's rates and Table 3's pooled Cons
    assert all(math.isfinite(r["table"]) and 0 < r["values"] <= 20 for r in cf)
    table3 = [r for r in cf if r["quantity"] == "consistency [query_category]"]
    assert [r["model"] for r in table3] == ["none", "limit", "paper", "strong"]
    assert all("5 categories x" in r["design"] and 0 < r["truth"] < 1 for r in table3)
    # REFLECT: only the invalid-rate rows above the band (the MCQ's at 0.5 % with 12 and 6 templates: 120 / 60 calls)
    reflect = script.reflect_rows(draws=1000)
    assert [(r["quantity"], r["design"]) for r in reflect] == [("invalid_rate [mcq]", "12 templates, 120 calls"),
                                                               ("invalid_rate [mcq]", "6 templates, 60 calls")]
    assert all(r["table"] > 0.97 and r["truth"] == pytest.approx(0.95 * 0.005, abs=0.002) for r in reflect)
    # about 0.3 invalid answers in 60 calls: no invalid answer in about three runs of four, so {0, 1} is a run near 96 %
    assert reflect[1]["inside"] and reflect[1]["below"] < 0.85
    # App. C.8's valid rates: 36 calls per presentation refused at 5 % each, Binomial(36, 0.05) exactly: the run of
    # 0-4 refusals holds 96.76 % (inside the band), 0-3 89.63 %, 0-5 99.17 %
    pilot = script.reflect_presentation_rows()
    assert len(pilot) == 6 and {r["quantity"] for r in pilot} == {f"valid_rate_{p}" for p in ("man", "woman", "androgynous")}
    assert all(r["inside"] and r["values"] == 37 and r["truth"] == pytest.approx(0.95) for r in pilot)
    assert pilot[0]["below"] == pytest.approx(binom.cdf(3, 36, 0.05)) and pilot[0]["above"] == pytest.approx(binom.cdf(5, 36, 0.05))
    assert max(r["table"] for r in pilot) > 0.97  # the rows the table lists above the band
    page = tmp_path / "statistics.md"
    page.write_text(f"intro\n{script.BEGIN}\nold\n{script.END}\nrest\n")
    script.write_docs(script.markdown(fof), page)
    text = page.read_text()
    assert "old" not in text and "| fact_or_fair | `invalid_rate` |" in text and text.endswith(f"{script.END}\nrest\n")
    assert "**no** | 89.78 % | 98.27 %" in text


def test_attainable_coverage_script_refuses_bad_input(tmp_path, capsys):
    from scripts import attainable_coverage as script

    with pytest.raises(SystemExit) as exit_info:
        script.main(["--draws", "0"])
    assert exit_info.value.code == 2 and "error: --draws must be at least 1" in capsys.readouterr().err
    page = tmp_path / "statistics.md"
    page.write_text("no markers here\n")
    with pytest.raises(SystemExit, match="^error: .* has no <!-- BEGIN attainable-coverage -->"):
        script.write_docs("| table |", page)
    assert page.read_text() == "no markers here\n" and not list(tmp_path.glob("*.tmp"))  # nothing half-written


def test_replace_between_markers():
    from scripts.calibration import replace_between_markers

    assert replace_between_markers("a<!--B-->old<!--E-->z", "<!--B-->", "<!--E-->", "new") == "a<!--B-->new<!--E-->z"
    assert replace_between_markers("a<!--B-->old", "<!--B-->", "<!--E-->", "new") is None
    assert replace_between_markers("a<!--E--><!--B-->", "<!--B-->", "<!--E-->", "new") is None  # END only before BEGIN


def test_coverage_check_counts_rounding_only_so_an_s_fair_interval_that_excludes_its_ideal_misses():
    """``covers``: 1 inside, 0 outside, NaN without an interval, arrays elementwise; its tolerance is rounding
    (a truth of 1 + 2e-16 is inside [0.9, 1]) and no more: FACT-OR-FAIR's S_fair is flat to fourth order at its
    ideal, so when the exact test at the ideal rejects, the interval ends a hair below 1 -- here, a fair model of
    the subjective gender design (the calibration's own design and draw), 1.03e-10 below. The tolerance of 1e-9
    used until 1 Dec 2026 counted such an interval as covering 1 (the fair models' S_fair 97.7 %, 95.2 % now)."""
    from lm_eval_bias.fact_or_fair import stats as fof
    from scripts.calibration import COVERAGE_TOLERANCE, covers
    from scripts.calibration import fact_or_fair as cal

    assert COVERAGE_TOLERANCE == 1e-12
    assert covers(0.2, 0.4, 0.3) == 1.0 and covers(0.2, 0.4, 0.41) == 0.0 and covers(0.2, 0.4, 0.4) == 1.0
    assert covers(0.9, 1.0, 1.0 + 2e-16) == 1.0 and covers(0.9, 1.0 - 1e-10, 1.0) == 0.0
    assert math.isnan(covers(math.nan, math.nan, 0.3)) and math.isnan(covers(0.1, math.inf, 0.3))
    hits = covers(np.array([0.1, 0.5, math.nan]), np.array([0.2, 0.6, math.nan]), np.array([0.15, 0.7, 0.1]))
    assert hits[:2].tolist() == [1.0, 0.0] and math.isnan(hits[2])

    (template, scenarios, per_scenario, objective), models = list(cal.score_designs().values())[4]
    assert template.k == 2 and models[0] == "fair" and not objective
    probs = cal._model(np.random.default_rng(0), template.counts.shape[0], scenarios, template.k, "fair")
    truth = cal.defined_scores(template, probs, per_scenario, objective)["s_fair"]
    assert abs(truth - 1.0) < 1e-15
    counts = cal._draw(np.random.default_rng([7, 57]), probs, per_scenario, 1, None)[0]
    _, low, high = fof.population_score_intervals(cal._table(template, counts), objective, 200, 11,
                                                  keys=["s_fair"])["s_fair"]
    assert 0.99995 < low < high and 1e-11 < 1.0 - high < 1e-9
    assert covers(low, high, truth) == 0.0
    assert covers(low, high, truth, tolerance=1e-9) == 1.0


def test_int_option_reads_a_bounded_integer_or_exits_with_one_error_line():
    from scripts.calibration import int_option

    assert int_option(["x", "--seeds=7"], "seeds", 300) == 7
    assert int_option(["x"], "seeds", 300) == 300
    assert int_option(["--design=4"], "design", 0, 0, 4) == 4
    for argv, bounds, message in ((["--seeds=abc"], (1, None), "error: --seeds must be an integer >= 1, not 'abc'"),
                                  (["--seeds=0"], (1, None), "error: --seeds must be an integer >= 1, not '0'"),
                                  (["--seeds=5"], (0, 4), "error: --seeds must be an integer 0..4, not '5'")):
        with pytest.raises(SystemExit) as stop:
            int_option(argv, "seeds", 1, *bounds)
        assert str(stop.value) == message
