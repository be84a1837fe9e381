"""The papers' printed numbers as data (lm_eval_bias/<benchmark>/reference_values.csv).

- every row parses, its value is its printed cell, and task / key / scale name a result key of that task;
- every printed cell occurs in the paper's text of that table (when the papers are in this checkout's
  development setting: ../shared/papers);
- the transcription is internally consistent where the papers print derived numbers (averages, the
  authors' S_fair from S_E and S_KLD, discard = 1 - retained / attempted), by hand;
- every table of the papers with numbers has rows; the others are list tables the paper map names.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pytest

from lm_eval_bias.core import reference

ROOT = Path(__file__).resolve().parents[2]
PAPERS = ROOT.parent / "shared" / "papers"
PAPER_FILES = {"reflect": "reflect_focus_face_only_counterfactuals.txt", "fact_or_fair": "fact_or_fair.txt",
               "cf_vqa": "counterfactual_vqa_decision_boundaries.txt", "vignette": "vignette.txt"}
#: tables that print no number to compare a run with (lists, text); docs/paper-map.md says where each is held
LIST_TABLES = {"fact_or_fair": {"Table 1", "Table 9"}, "vignette": {"Table 1", "Table 2", "Table 5", "Table 7", "Table 14"},
               "reflect": set(), "cf_vqa": set()}
VALUES = reference.load()


def _by(benchmark: str, table: str) -> list[reference.ReferenceValue]:
    return [v for v in VALUES if v.benchmark == benchmark and v.table == table]


def _cell(benchmark: str, table: str, row: str, column: str, section: str | None = None) -> float:
    found = [v for v in _by(benchmark, table) if v.row == row and v.column == column
             and (section is None or v.section == section)]
    assert len(found) == 1, (benchmark, table, row, column, section, found)
    return found[0].value


def test_every_benchmark_has_a_reference_file_and_every_row_parses():
    assert set(reference.reference_files()) == set(PAPER_FILES)
    assert len(VALUES) > 2000
    for v in VALUES:
        printed = v.printed.replace("↑", "").replace(",", "").replace("−", "-").strip()
        if v.rounding is not None and not printed.startswith("<"):
            assert float(printed) == pytest.approx(v.value, abs=1e-12), v
            decimals = len(printed.split(".")[1]) if "." in printed else 0
            assert decimals == v.rounding, v


def test_mapped_cells_name_result_keys_of_their_task():
    from lm_eval_bias import samples

    mapped = [v for v in VALUES if v.key]
    assert len(mapped) > 900
    for v in mapped:
        assert v.key in samples.aggregation_family(v.task).keys, (v.task, v.key)
        assert v.scale in (1.0, 0.01), v


def test_the_papers_print_percentages_where_the_tasks_report_fractions():
    # CF-VQA Table 2: o3 Demography Cons. 66.7 % -> consistency 0.667; CC 0.68 as printed
    cons = next(v for v in _by("cf_vqa", "Table 2") if v.row == "o3" and v.column == "Demography Cons.")
    assert (cons.task, cons.key, cons.value, cons.ours) == ("cf_vqa", "consistency_demography", 66.7, pytest.approx(0.667))
    cc = next(v for v in _by("cf_vqa", "Table 2") if v.row == "o3" and v.column == "Demography CC")
    assert (cc.key, cc.ours) == ("cc_auc_demography", 0.68)
    # REFLECT Table 2 prints JSD x 100 (Table 4 prints 0.0050 for the same kind of value)
    jsd = next(v for v in _by("reflect", "Table 2") if v.row == "Female" and v.column == "GPT Sal.")
    assert (jsd.task, jsd.key, jsd.ours) == ("focus_mcq_salary", "jsd_female", pytest.approx(0.0183))


@pytest.mark.skipif(not PAPERS.is_dir(), reason="the papers' text is only in the development setting")
@pytest.mark.parametrize("benchmark", sorted(PAPER_FILES))
def test_every_printed_cell_occurs_in_its_tables_text(benchmark):
    text = (PAPERS / PAPER_FILES[benchmark]).read_text(encoding="utf-8")
    lines = text.split("\n")
    captions = {int(m.group(1)): k for k, line in enumerate(lines) if (m := re.match(r"^Table (\d+):", line))}
    missing = []
    for v in (v for v in VALUES if v.benchmark == benchmark):
        at = captions[int(v.table.split()[1])]
        window = "\n".join(lines[max(0, at - 45): at + 45]).replace("&lt;", "<").replace("<u>", "").replace("</u>", "")
        window = window.replace("<b>", "").replace("</b>", "").replace("**", "")
        printed = v.printed.replace("↑", "")
        if printed not in window:
            missing.append((v.table, v.row, v.column, v.printed))
    assert not missing, missing[:10]


@pytest.mark.skipif(not PAPERS.is_dir(), reason="the papers' text is only in the development setting")
@pytest.mark.parametrize("benchmark", sorted(PAPER_FILES))
def test_every_table_with_numbers_has_rows(benchmark):
    text = (PAPERS / PAPER_FILES[benchmark]).read_text(encoding="utf-8")
    in_paper = {f"Table {n}" for n in re.findall(r"^Table (\d+):", text, flags=re.MULTILINE)}
    with_rows = reference.tables(VALUES)[benchmark]
    assert with_rows | LIST_TABLES[benchmark] == in_paper
    assert not with_rows & LIST_TABLES[benchmark]
    paper_map = (ROOT / "docs" / "paper-map.md").read_text(encoding="utf-8")
    for table in LIST_TABLES[benchmark]:
        assert re.search(rf"\| {table} \([^|]*\)[^\n]*list table", paper_map), f"{benchmark} {table}: no list-table row"


# -- derived numbers the papers print, recomputed from the transcribed cells -----------------------------
def test_cf_vqa_average_row_is_the_mean_of_the_nine_models():
    rows = defaultdict(dict)
    for v in _by("cf_vqa", "Table 2"):
        rows[v.row][v.column] = v.value
    models = [r for r in rows if r not in ("Average", "Human")]
    assert len(models) == 9
    for column, average in rows["Average"].items():
        decimals = 1 if column.endswith("Cons.") else 2
        assert abs(sum(rows[m][column] for m in models) / 9 - average) <= 10 ** -decimals + 1e-9, column  # rounded inputs and output


def test_fact_or_fair_table_5_is_the_authors_s_fair_of_tables_6_and_7():
    """S_fair = S_E + S_KLD (1 - S_E) with the authors' S_KLD (printed in %, two decimals each)."""
    checked = 0
    for v in _by("fact_or_fair", "Table 5"):
        if not v.column.startswith("LLM ") or v.column == "LLM 0":
            continue
        s_e = _cell("fact_or_fair", "Table 6", v.row, v.column, v.section) / 100
        s_kld = _cell("fact_or_fair", "Table 7", v.row, v.column, v.section) / 100
        assert 100 * (s_e + s_kld * (1 - s_e)) == pytest.approx(v.value, abs=0.03), v
        checked += 1
    assert checked == 48


def test_fact_or_fair_table_2_subjective_s_fair_is_the_mean_of_the_four_contexts():
    short = {"GPT-3.5": "GPT-3.5-Turbo-0125", "GPT-4o": "GPT-4o-2024-08-06", "Gemini-1.5": "Gemini-1.5-Pro",
             "LLaMA-3.2": "LLaMA-3.2-90B-Vision-Instruct", "WizardLM-2": "WizardLM-2-8x22B",
             "Qwen-2.5": "Qwen-2.5-72B-Instruct"}
    for model, full in short.items():
        for attribute in ("Gender", "Race"):
            contexts = [_cell("fact_or_fair", "Table 5", full, f"LLM {c}", attribute) for c in ("S-B", "S-R", "S-A", "S-G")]
            printed = _cell("fact_or_fair", "Table 2", model, f"Subj. S_fair {attribute}")
            assert sum(contexts) / 4 == pytest.approx(printed, abs=0.006), (model, attribute)
            assert _cell("fact_or_fair", "Table 2", model, f"Obj. S_fact {attribute}") == _cell(
                "fact_or_fair", "Table 4", full, "LLM 0", attribute)


def test_fact_or_fair_race_s_fact_is_a_count_out_of_108_and_the_misprint_is_marked():
    for v in _by("fact_or_fair", "Table 4"):
        if v.section == "Race" and v.column == "LLM 0":
            correct = round(v.value / 100 * 108)
            exact = round(100 * correct / 108, 2)
            assert exact == v.value or v.is_misprint, v
    marked = [v for v in VALUES if v.benchmark == "fact_or_fair" and v.is_misprint]
    assert {(v.table, v.value) for v in marked} == {("Table 2", 54.62), ("Table 4", 54.62)}


def test_reflect_discard_rate_is_one_minus_retained_over_attempted():
    for scenario in ("Income", "Education", "Safety", "All"):
        retained, attempted = (_cell("reflect", "Table 6", scenario, c) for c in ("Retained", "Attempted"))
        assert round(1 - retained / attempted, 4) == _cell("reflect", "Table 6", scenario, "Discard")


def test_model_names_match_runs():
    assert reference.same_model("GPT-4o-2024-08-06", "openai/gpt-4o-2024-08-06")
    assert reference.same_model("Qwen-2.5-72B-Instruct", "Qwen/Qwen2.5-72B-Instruct")
    assert reference.same_model("o3", "o3") and not reference.same_model("o3", "gpt-4o")
    assert not reference.same_model("", "anything")


#: printed numbers per table, counted by hand from the papers' layouts (rows x numeric columns, less the
#: cells printed as "—"): e.g. CF-VQA Table 2 = 9 models x 15 + the Average row's 15 + the Human row's 5
CELLS = {
    "reflect": {"Table 1": 3 * 4 * 6, "Table 2": 7 * 10, "Table 3": 4 * 7, "Table 4": 2 * 8, "Table 5": 4 * (9 + 1),
                "Table 6": 4 * 3, "Table 7": 3 * 4 + 3 * 3, "Table 8": 6 * 6, "Table 9": 9 + 11, "Table 10": 2 * 5,
                "Table 11": 7 * 3, "Table 12": 3 * 3, "Table 13": 3 * 7 * 3},
    "fact_or_fair": {"Table 2": 10 * 9, "Table 3": 6 * 12, "Table 4": 12 * 5 + 8 * 2, "Table 5": 76, "Table 6": 76,
                     "Table 7": 76, "Table 8": 12 * 6 + 8 * 3},
    "cf_vqa": {"Table 1": 3 * 2, "Table 2": 9 * 15 + 15 + 5, "Table 3": 5 * 3 * 15, "Table 4": 11, "Table 5": 11,
               "Table 6": 9 * 15 + 5, "Table 7": 9 * 9 + 3, "Table 8": 84, "Table 9": 84, "Table 10": 84,
               "Table 11": 10 * 6, "Table 12": 2 * 4 * 15},
    "vignette": {"Table 3": 10, "Table 4": 11, "Table 6": 8, "Table 8": 9 * 10, "Table 9": 14 * 3 + 3, "Table 10": 9 * 5,
                 "Table 11": 8 * 3, "Table 12": 5, "Table 13": 10 * 5, **{f"Table {n}": 10 * 4 for n in range(15, 20)}},
}


@pytest.mark.parametrize("benchmark", sorted(CELLS))
def test_every_printed_number_is_transcribed(benchmark):
    counts: dict[str, int] = defaultdict(int)
    for v in VALUES:
        if v.benchmark == benchmark:
            counts[v.table] += 1
    assert dict(counts) == CELLS[benchmark]
