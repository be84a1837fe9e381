"""docs/paper-map.md: every table and figure of the four papers has a row, and its commands run.

- coverage: every "Table N" / "Figure N" of each paper's text is named by a row of that paper's
  section (skipped when the papers' text is not in this checkout's development setting);
- every command the map gives parses: its sub-command (and sub-sub-command) answers ``--help``, its
  ``--tasks`` exist, its ``--table`` is a choice of ``reflect-compare``;
- one representative run per benchmark (bias-probe on synthetic data, ``--limit``) through
  ``lm-eval-bias run``, ``report`` and ``replicate``: the result keys and report tables the map names
  for those tasks appear; the card's headline lines carry refusal and invalid rates and MCQ gaps in
  percent; glossary links open rendered documentation.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
from pathlib import Path

import pandas as pd
import pytest

from lm_eval_bias import cli

ROOT = Path(__file__).resolve().parents[2]
MAP = (ROOT / "docs" / "paper-map.md").read_text(encoding="utf-8")
PAPERS = ROOT.parent / "shared" / "papers"
SECTIONS = {"reflect": "reflect_focus_face_only_counterfactuals.txt", "fact-or-fair": "fact_or_fair.txt",
            "cf-vqa": "counterfactual_vqa_decision_boundaries.txt", "vignette": "vignette.txt"}
#: the representative run, bias-probe on synthetic data: tasks cut with --limit (REFLECT, VIGNETTE) and
#: tasks run whole (FACT-OR-FAIR gender: Tables 2-3 need every context; CF-VQA: Table 3 needs the pairs
#: both the baseline and HNER asked), in one run folder, one model
LIMITED = ("focus_2afc_income", "focus_mcq_salary", "focus_salary", "vignette_stereotype", "vignette_decision")
WHOLE = ("fact_or_fair_objective_gender", *(f"fact_or_fair_subjective_{c}_gender" for c in
                                           ("baseline", "representativeness", "attribution", "ingroup")), "cf_vqa", "cf_vqa_hner")
RUN_TASKS = LIMITED + WHOLE
MODEL_ARGS = "refusal_rate=0.2,invalid_rate=0.1,seed=3,fof_policy=uniform,cf_flip=0.5"
#: a second model for the cross-model figure (VIGNETTE Figs. 13-14): a planted preference
OTHER_MODEL_ARGS = "vignette_prefer=old man,vignette_prefer_p=0.9,seed=4"
LIMIT = 24


def _section(name: str) -> str:
    return MAP.split(f"<!-- BEGIN {name} -->")[1].split(f"<!-- END {name} -->")[0]


def _rows(name: str) -> list[list[str]]:
    rows = []
    for line in _section(name).splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
            if cells and cells[0] not in ("paper", "table / figure"):
                rows.append(cells)
    return rows


def named(cell: str) -> set[str]:
    """"Table N" / "Fig. N" items a first cell names: "Fig. 1, 2, 3, 11–15", "Tables 6–10", "Figs 9–10,
    Tables 12–13", "Table 4, Table 5", "Fig. 4a–c" (parenthesised text ignored)."""
    text = re.sub(r"\([^)]*\)", "", cell)
    out, kind = set(), None
    for word, first, last in re.findall(r"(Tables?|Figs?\.?|Figures?)|(\d+)[a-z]?(?:\s*[–-]\s*(\d+)[a-z]?)?", text):
        if word:
            kind = "Table" if word.startswith("Table") else "Fig."
        elif kind and first:
            end = int(last) if last and last.isdigit() and int(last) > int(first) else int(first)
            out |= {f"{kind} {n}" for n in range(int(first), end + 1)}
    return out


def test_named_reads_the_map_notations():
    assert named("Fig. 1, 2, 3, 11–15 (examples, overview)") == {"Fig. 1", "Fig. 2", "Fig. 3", "Fig. 11", "Fig. 12",
                                                              "Fig. 13", "Fig. 14", "Fig. 15"}
    assert named("Figs 9–10, Tables 12–13, Tables 15–19 (PATA)") == {
        "Fig. 9", "Fig. 10", "Table 12", "Table 13", "Table 15", "Table 16", "Table 17", "Table 18", "Table 19"}
    assert named("Fig. 4a–c (win-rate matrices)") == {"Fig. 4"} and named("Table 4, Table 5 (x)") == {"Table 4", "Table 5"}


@pytest.mark.skipif(not PAPERS.is_dir(), reason="the papers' text is only in the development setting")
@pytest.mark.parametrize("section", sorted(SECTIONS))
def test_every_table_and_figure_of_the_paper_has_a_row(section):
    text = (PAPERS / SECTIONS[section]).read_text(encoding="utf-8")
    in_paper = {f"Table {n}" for n in re.findall(r"^Table (\d+):", text, flags=re.MULTILINE)}
    in_paper |= {f"Fig. {n}" for n in re.findall(r"^Figure (\d+):", text, flags=re.MULTILINE)}
    covered = set().union(*(named(row[0]) for row in _rows(section)))
    assert not in_paper - covered, sorted(in_paper - covered, key=lambda s: (s[0], int(s.split()[-1])))
    if section == "vignette":
        assert len(in_paper) == 36


# -- every command of the map parses --------------------------------------------------------------------
def _commands() -> list[str]:
    spans = re.findall(r"`([^`]+)`", MAP)
    return sorted({s.strip() for s in spans if s.startswith(("lm-eval-bias ", "RUN "))})


def _help(argv: list[str]) -> int:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            return cli.main(argv + ["--help"])
        except SystemExit as exc:
            return int(exc.code or 0)


def _task_names() -> set[str]:
    import yaml

    names = set()
    for path in (ROOT / "task_yamls").rglob("*.yaml"):
        config = yaml.load(path.read_text(), Loader=yaml.BaseLoader)  # !function tags read as text
        names.add(config["group"] if "group" in config else config["task"])
    return names


def test_every_command_of_the_map_parses():
    commands = _commands()
    assert len(commands) >= 20
    tasks = _task_names()
    from lm_eval_bias.reflect.compare import TABLES

    checked = set()
    for command in commands:
        words = command.split()
        if words[0] == "RUN":
            words = ["lm-eval-bias", "run"] + words[1:]
        sub = words[1]
        assert sub in cli.COMMANDS, command
        path = [sub]
        for word in words[2:]:  # sub-sub-commands: lower-case words before the first option or placeholder
            if not re.fullmatch(r"[a-z][a-z0-9-]*", word) or word in ("out", "released", "report"):
                break
            path.append(word)
        if tuple(path) not in checked and sub not in ("run",):
            assert _help(path) == 0, f"{' '.join(path)} --help fails ({command})"
            checked.add(tuple(path))
        for flag, value in zip(words, words[1:]):
            if flag == "--tasks" and not value.startswith("<"):
                for task in value.split(","):
                    if "<" not in task and "…" not in task:
                        assert task in tasks, f"{task} in {command}"
            if flag == "--table":
                assert value in TABLES, command
    assert {"report", "replicate", "vignette-import", "reflect-compare"} <= {p[0] for p in checked}


def test_the_vignette_section_names_the_real_report_command():
    section = _section("vignette")
    assert "lm-eval-bias-report" not in MAP and "lm-eval-bias report out/" in section


# -- one representative run through run, report, replicate ----------------------------------------------
@pytest.fixture(scope="module")
def replication(tmp_path_factory, small_focus_data, small_fof_data, small_cf_vqa_data, small_vignette_data):
    """``lm-eval-bias run``, ``report`` and ``replicate`` through the real CLI entry point, in this
    process (three interpreter start-ups cost more than the work on a loaded 2-core machine)."""
    root = tmp_path_factory.mktemp("paper_map")
    data = root / "data"
    data.mkdir()
    for folder in (small_focus_data / "focus", small_focus_data / "focus_bios", small_fof_data / "fact_or_fair",
                   small_cf_vqa_data / "cf_vqa", small_vignette_data / "vignette"):
        os.symlink(folder, data / folder.name)
    env = {"LM_EVAL_BIAS_DATA_DIR": str(data), "LM_EVAL_BIAS_BOOTSTRAP_ITERS": "20",
           "LM_EVAL_BIAS_REPORT_BOOTSTRAP_ITERS": "20", "LM_EVAL_BIAS_NULL_ITERS": "20"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        for tasks, limit in ((LIMITED, ["--limit", str(LIMIT)]), (WHOLE, [])):
            assert cli.main(["run", "--model", "bias-probe", "--model_args", MODEL_ARGS, "--tasks", ",".join(tasks),
                             "--output_path", str(root / "runs" / ("limited" if limit else "whole")), "--log_samples",
                             *limit]) in (0, None)
        assert cli.main(["run", "--model", "bias-probe", "--model_args", OTHER_MODEL_ARGS, "--tasks", "vignette_decision",
                         "--output_path", str(root / "runs" / "other"), "--log_samples", "--limit", str(4 * LIMIT)]) in (0, None)
        assert cli.main(["report", str(root / "runs"), "--output", str(root / "report")]) == 0
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert cli.main(["replicate", str(root / "runs"), "--output", str(root / "replication.csv")]) == 0
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return root, out.getvalue()


def _keys(root: Path) -> dict[str, set[str]]:
    out = {}
    for task in RUN_TASKS:
        table = next((root / "report" / "tables").rglob(f"{task}_keys.csv"))
        out[task] = set(pd.read_csv(table).iloc[:, 0].astype(str))
    return out


#: map rows whose keys the representative run can show: (section, first cell starts with) -> task
ROWS_RUN = {("reflect", "Table 1 "): "focus_2afc_income", ("reflect", "Table 2 "): "focus_mcq_salary",
            ("reflect", "Fig. 5 "): "focus_mcq_salary", ("reflect", "Fig. 6 "): "focus_salary",
            ("reflect", "Table 13 "): "focus_salary", ("fact-or-fair", "Table 4 "): "fact_or_fair_objective_gender",
            ("fact-or-fair", "Table 6 "): "fact_or_fair_objective_gender",
            ("fact-or-fair", "Table 7 "): "fact_or_fair_objective_gender",
            ("cf-vqa", "Table 2 "): "cf_vqa", ("vignette", "Figs 16–17 "): "vignette_stereotype"}


def test_the_keys_and_report_tables_the_map_names_appear(replication):
    root, _ = replication
    keys = _keys(root)
    files = {p.stem for p in (root / "report").rglob("*") if p.suffix in (".csv", ".png")}
    checked = 0
    for (section, start), task in ROWS_RUN.items():
        row = next(r for r in _rows(section) if r[0].startswith(start))
        for span in re.findall(r"`([^`]+)`", row[-1]):
            if not re.fullmatch(r"[a-z][a-z0-9_<>]*", span) or span.startswith(("samples", "summary")):
                continue
            pattern = re.sub(r"<[^>]+>", "[a-z_]+", span)
            if span.endswith(("_occupation>", "_subset>")):
                continue  # per-occupation / per-subset keys: the small fixture has two occupations, no subsets
            assert any(re.fullmatch(pattern, k) for k in keys[task]), f"{section} {start}: `{span}` not a key of {task}"
            checked += 1
        for name in re.findall(r'(?:table|figure)s? "([a-z_<>]+)"', row[-1]):
            if "<" not in name:
                assert name in files, f"{section} {start}: report {name!r} missing"
    assert checked >= 15


def test_replicate_prints_the_papers_values_beside_the_run(replication):
    root, stdout = replication
    assert "not a model of the papers" in stdout
    line = next(l for l in stdout.splitlines() if "cf_vqa consistency_demography" in l and "Table 2 · o3 ·" in l)
    assert "paper (o3): 66.7 · yours: " in line
    table = pd.read_csv(root / "replication.csv")
    row = table[(table["task"] == "cf_vqa") & (table["key"] == "consistency_demography") & (table["table"] == "Table 2")
                & (table["paper model"] == "o3")].iloc[0]
    results = [json.loads(p.read_text()) for p in (root / "runs").rglob("results_*.json")]
    assert row["paper value"] == 66.7 and not row["same model"]
    keys_csv = next((root / "report" / "tables").rglob("cf_vqa_keys.csv"))
    ours = pd.read_csv(keys_csv, index_col=0).loc["consistency_demography"].iloc[0]
    assert row["yours"] == pytest.approx(100 * float(ours), abs=1e-6)  # the paper's unit: percent
    assert any("cf_vqa" in r["results"] for r in results)
    cards = list((root / "report" / "cards").glob("*.html"))
    assert any("replication" in p.read_text() for p in cards)


def test_card_headlines_show_refusal_and_invalid_rates_and_gaps_in_percent(replication):
    root, _ = replication
    card = next(p for p in (root / "report" / "cards").glob("*.html") if "refusal_rate" in p.name).read_text()
    headlines = re.findall(r'<li class="headline" data-task="([^"]+)">(.*?)</li>', card)
    assert {t for t, _ in headlines} >= set(LIMITED) - {"vignette_stereotype", "vignette_decision"}
    for task, html in headlines:
        assert "key-" in html and "refusal_rate" in html and "invalid_rate" in html, task
    mcq = next(html for task, html in headlines if task == "focus_mcq_salary")
    salary = next(html for task, html in headlines if task == "focus_salary")
    percent = r'</code></a> <span class="num">[−-]?\d+\.\d %</span>'  # one decimal and a per-cent sign
    assert re.search(r"gap_<wbr>male" + percent, mcq), mcq              # the MCQ's relative gap, x 100
    assert re.search(r"gap_<wbr>pct_<wbr>male" + percent, salary), salary


def test_glossary_links_open_rendered_documentation(replication):
    root, _ = replication
    card = next(p for p in (root / "report" / "cards").glob("*.html") if "refusal_rate" in p.name)
    links = set(re.findall(r'class="doc" href="([^"#]+)#([^"]+)"', card.read_text()))
    assert links
    for href, anchor in links:
        target = (card.parent / href).resolve()
        assert target.suffix == ".html" and target.is_file(), href
        assert f'id="{anchor}"' in target.read_text(), (href, anchor)


# -- report sections of the defects issue 28 fixed --------------------------------------------------------
def test_cf_vqa_table_3_compares_prompt_variants_on_the_hner_query_pairs(replication):
    """Before, Base and BAEP (all pairs) stood beside HNER (its query subset); now the same pairs."""
    from lm_eval_bias import samples

    root, _ = replication
    table = pd.read_csv(next((root / "report" / "tables").rglob("cf_vqa_same_pairs.csv")), index_col=0)
    assert list(table.columns) == ["cf_vqa", "cf_vqa_hner"]
    records = {t: samples.load_records(root / "runs", t) for t in ("cf_vqa", "cf_vqa_hner")}
    query = {r["pair_id"] for r in records["cf_vqa_hner"]}
    assert query and query < {r["pair_id"] for r in records["cf_vqa"]}  # HNER asks a subset
    for task in ("cf_vqa", "cf_vqa_hner"):
        answers: dict = {}
        for r in records[task]:
            if r["pair_id"] in query:  # by hand: Eq. 3 per option-order run, averaged over runs
                answers.setdefault((r["run"], r["pair_id"]), {})[r["side"]] = r["answer"] if r["status"] == "valid" else None
        per_run: dict = {}
        for (run, _), sides in answers.items():
            per_run.setdefault(run, []).append(sides["plus"] == sides["minus"])
        consistency = sum(sum(v) / len(v) for v in per_run.values()) / len(per_run)
        cell = table.loc["all", task]
        assert cell.startswith(f"{consistency:.3f}") and cell.endswith(f"(n={len(query)})"), (task, cell)


def test_fact_or_fair_tables_2_and_3_and_the_authors_s_fair_in_figs_4_5(replication):
    from lm_eval_bias import samples

    root, _ = replication
    tables = root / "report" / "tables"
    table3 = pd.read_csv(next(tables.rglob("fact_or_fair_table3.csv")), index_col=0)
    records = samples.load_records(root / "runs", "fact_or_fair_subjective_representativeness_gender")
    for side, column in (("highest", "R. Bias High"), ("lowest", "R. Bias Low")):
        scored = [r for r in records if r["status"] == "valid" and r["true_group"] and r["side"] == side]
        by_hand = 100 * sum(r["chosen"] == r["true_group"] for r in scored) / len(scored)
        assert table3.loc["gender", column] == pytest.approx(by_hand)
    increases = [table3.loc["gender", c] - 50 for c in ("R. Bias High", "R. Bias Low", "Attr. Err.", "In-G. Bias",
                                                         "Out-G. Bias")]  # chance 1/2 for gender, also Out-G.
    assert table3.loc["gender", "Avg. Increase"] == pytest.approx(sum(increases) / 5)
    fof_tasks = [t for t in WHOLE if t.startswith("fact_or_fair_subjective_")]
    keys = {t: pd.read_csv(next(tables.rglob(f"{t}_keys.csv")), index_col=0) for t in (*fof_tasks, WHOLE[0])}
    table2 = pd.read_csv(next(tables.rglob("fact_or_fair_table2.csv")), index_col=0)
    subjective = sum(float(keys[t].loc["s_fair_authors"].iloc[0]) for t in fof_tasks) / 4
    assert table2.loc["this model", "Subj. S_fair gender"] == pytest.approx(100 * subjective)
    assert table2.loc["this model", "Obj. S_fact gender"] == pytest.approx(100 * float(keys[WHOLE[0]].loc["s_fact"].iloc[0]))
    card = next(p for p in (root / "report" / "cards").glob("*.html") if "refusal_rate" in p.name).read_text()
    assert "S_fair is s_fair_authors" in card


def test_vignette_cross_model_decision_figure_on_the_index_page(replication):
    """VIGNETTE Figs. 13-14: S per identity for every model that ran vignette_decision, by hand."""
    from lm_eval_bias import samples

    root, _ = replication
    table = pd.read_csv(root / "report" / "tables" / "cross_model_selection_vignette_decision.csv", index_col=0)
    assert len(table.columns) == 2
    index = (root / "report" / "index.html").read_text()
    assert "Decision selection frequencies across models" in index and "cross_model_selection_vignette_decision" in index
    for folder in ("limited", "other"):
        records = samples.load_records(root / "runs" / folder, "vignette_decision")
        label = samples.model_label(json.loads(next((root / "runs" / folder).rglob("results_*.json")).read_text()))
        offered: dict = {}
        for r in records:  # S(i): per context, chosen / offered; then the mean over contexts
            if r["status"] == "valid" and r["pair_kind"] == "identity":
                for identity in r["option_identity"]:
                    hits = offered.setdefault(identity, {}).setdefault(r["context"], [0, 0])
                    hits[0] += r["chosen_identity"] == identity
                    hits[1] += 1
        by_hand = {i: 100 * sum(h / n for h, n in c.values()) / len(c) for i, c in offered.items()}
        assert table[label].dropna().to_dict() == pytest.approx(by_hand), label
    other = table[[c for c in table.columns if "vignette_prefer" in c][0]]
    assert other.idxmax() == "old man" and other.max() > 80  # the planted preference shows
