"""docs/paper-map.md: every table and figure of the four papers has a row, and every command it gives runs.

- coverage: every "Table N" / "Figure N" of each paper's text is named by a row of that paper's
  section (skipped when the papers' text is not in this checkout's development setting);
- every command the map gives parses: its sub-command (and sub-sub-command) answers ``--help``, its
  ``--tasks`` exist, its ``--table`` is a choice of ``reflect-compare``;
- every distinct command the map gives runs (``paper_map_steps``: the map's text with its placeholders
  bound to a synthetic workspace, ``bias-probe`` for ``--model …``, ``--limit`` on runs, and the local
  substitute a row names for a GPU / Hub / paid-API step), and exits 0; the keys, files, columns and
  report sections each row's last cell names appear in what that row's commands (and the section's
  report) produced; no report section failed;
- on those runs: replicate prints the papers' values beside the run's; the card's headline lines
  carry refusal and invalid rates and MCQ gaps in percent; glossary links open rendered documentation;
  the report sections of the defects issue 28 fixed (CF-VQA Table 3 on the same pairs, FACT-OR-FAIR
  Tables 2-3, VIGNETTE Figs. 13-14 across models), checked by hand.
"""

from __future__ import annotations

import contextlib
import csv
import functools
import html
import io
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from lm_eval_bias import cli
from tests.cli import paper_map_steps as steps

ROOT = Path(__file__).resolve().parents[2]
MAP = (ROOT / "docs" / "paper-map.md").read_text(encoding="utf-8")
PAPERS = ROOT.parent / "shared" / "papers"
SECTIONS = {"reflect": "reflect_focus_face_only_counterfactuals.txt", "fact-or-fair": "fact_or_fair.txt",
            "cf-vqa": "counterfactual_vqa_decision_boundaries.txt", "vignette": "vignette.txt"}


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


@functools.lru_cache(maxsize=1)
def _task_names() -> frozenset[str]:
    import yaml

    names = set()
    for path in (ROOT / "task_yamls").rglob("*.yaml"):
        config = yaml.load(path.read_text(), Loader=yaml.BaseLoader)  # !function tags read as text
        names.add(config["group"] if "group" in config else config["task"])
    return frozenset(names)


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
    assert "lm-eval-bias-report" not in MAP and "`lm-eval-bias report out --output report`" in section


# -- every command of the map runs, on synthetic data ------------------------------------------------------
def _cells_commands(cells: list[str]) -> list[str]:
    return [s.strip() for c in cells for s in re.findall(r"`([^`]+)`", c) if s.startswith(("lm-eval-bias ", "RUN "))]


def _row_tasks(section: str, cells: list[str], names: set[str]) -> list[str]:
    """Tasks a row's command cells name: backticked task or group names and --tasks lists."""
    found = []
    for span in (s for c in cells for s in re.findall(r"`([^`]+)`", c)):
        words = span.split()
        candidates = [w for w in words if w in names] if len(words) == 1 else []
        for flag, value in zip(words, words[1:]):
            if flag == "--tasks":
                candidates += [t for t in value.split(",") if t in names]
        found += [c for c in candidates if c not in found]
    return found


def _vignette_tasks(names: set[str]) -> list[str]:
    tasks: list[str] = []
    for row in _rows("vignette"):
        tasks += [t for t in _row_tasks("vignette", row[1:-1], names) if t not in tasks]
    return tasks


def _plan(ws) -> list:
    """Every map command as a :class:`steps.Step` (some twice, on a second source), and the test's own
    actions (filling annotation sheets) between them, in the order that makes each step's inputs first."""
    S = steps.Step
    data, runs, other = str(ws.data), ws.runs, ws.other_runs
    run_of = {}  # REFLECT RUN command -> its output folder
    plan: list = [
        S("lm-eval-bias build focus --source SRC --output data/focus", {"SRC": str(ws.focus_src), "data": data}),
        S("lm-eval-bias build focus --source SRC --output data/focus", {"SRC": str(ws.focus_mirrored),
                                                                         "data": str(ws.data_mirrored)}),
        S("lm-eval-bias build focus-bios --source BIOS --output data/focus_bios", {"BIOS": str(ws.root / "bios.jsonl"),
                                                                                "data": data}),
        S("lm-eval-bias build fact-or-fair --source SRC --output data/fact_or_fair", {"SRC": str(ws.fof_src), "data": data}),
        S("lm-eval-bias build cf-vqa --source W --output data/cf_vqa", {"W": str(ws.cf_vqa_src), "data": data}),
        S("lm-eval-bias build vignette --source OUT --lists L --output DATA/vignette",
          {"OUT": str(ws.vignette_src), "L": str(ws.lists), "DATA": data}),
    ]
    for k, command in enumerate(c for c in _commands() if c.startswith("RUN ")):
        run_of[command] = runs / f"reflect_{k}"
        limit = "270" if command == "RUN --tasks focus_2afc,focus_mcq" else steps.LIMIT  # LOTO: three 2AFC templates
        plan.append(S(command, {"data": data, "out": str(run_of[command])}, ("--limit", limit), ws.data))
    mcq = str(run_of["RUN --tasks focus_mcq"])
    mirrored = str(other / "focus_mcq_mirrored")
    plan += [
        S("RUN --tasks focus_mcq", {"data": str(ws.data_mirrored), "out": mirrored}, ("--limit", steps.LIMIT),
          ws.data_mirrored),
        S("lm-eval-bias reflect-compare out --table face-body --source-gender g0.json --output CMP",
          {"out": mcq, "g0.json": str(ws.root / "g0.json"), "CMP": str(ws.compare_face_body)}),
        S("lm-eval-bias reflect-compare out --table format --output CMP",
          {"out": str(run_of[next(c for c in run_of if "_explained" in c)]), "CMP": str(ws.compare_format)}),
        S("lm-eval-bias reflect-compare out --table framing --output CMP",
          {"out": str(run_of[next(c for c in run_of if "_p0" in c)]), "CMP": str(ws.compare_framing)}),
        S("lm-eval-bias reflect-compare out_e1 out_e2 --table editors --output CMP",
          {"out_e1": mcq, "out_e2": mirrored, "CMP": str(ws.compare_editors)}),
        S("lm-eval-bias reflect-compare out_orig out_mirror --table mirror --output CMP",
          {"out_orig": mcq, "out_mirror": mirrored, "CMP": str(ws.compare_mirror)}),
        # FACT-OR-FAIR: 360 docs a task reach both sides of the first statistic (300 queries a side; Table 3's
        # High / Low); CF-VQA whole (Table 3 needs the pairs both prompts asked)
        S("lm-eval-bias run --model … --tasks fact_or_fair --log_samples --output_path out", {"out": str(runs / "fof")},
          ("--limit", "360"), ws.data),
        S("lm-eval-bias score fact-or-fair-t2i --labels faces.jsonl --source SRC [--other-race reassign]",
          {"faces.jsonl": str(ws.root / "faces.jsonl"), "SRC": str(ws.fof_src)}),
        S("lm-eval-bias score fact-or-fair-t2i --labels faces.jsonl --source SRC --output out/fact_or_fair_t2i_NAME.json "
          "--model-name NAME", {"faces.jsonl": str(ws.root / "faces.jsonl"), "SRC": str(ws.fof_src),
                                "out": str(runs / "fof"), "NAME": "t2i-probe"}),
        S("lm-eval-bias run --model … --tasks cf_vqa_all --log_samples --output_path out", {"out": str(runs / "cf_vqa")},
          data=ws.data),
        S("lm-eval-bias run --model … --tasks cf_vqa_hner,cf_vqa_hner_targeted --metadata "
          "'{\"embedder\": \"clip:CLIP_L14\"}' --log_samples --output_path out",
          {"out": str(other / "cf_vqa_clip"), "CLIP_L14": str(ws.tiny_clip)}, data=ws.data),
        # VIGNETTE: every task a row names, one run; a second model for the cross-model figure
        S("lm-eval-bias run --model … --tasks <task> --log_samples --output_path out",
          {"<task>": ",".join(_vignette_tasks(_task_names())), "out": str(runs / "vignette")}, ("--limit", steps.LIMIT),
          ws.data),
        S("lm-eval-bias run --model … --tasks <task> --log_samples --output_path out",
          {"<task>": "vignette_decision", "out": str(runs / "other_model")},
          # pairs_per_identity 2: --limit's first docs then span many identities (12 draws an anchor, the default,
          # would give the first few anchors' pairs only, and the planted identity might not be among them)
          ("--limit", str(4 * int(steps.LIMIT)), "--metadata", json.dumps({"pairs_per_identity": 2})),
          ws.data, steps.OTHER_MODEL_ARGS),
        S("lm-eval-bias report out --output report", {"out": str(runs), "report": str(ws.report)}),
        S("lm-eval-bias replicate out", {"out": str(runs)}),
        S("lm-eval-bias vignette-import VIGNETTE/outputs --output released",
          {"VIGNETTE": str(ROOT / "tests" / "data" / "vignette_released"), "released": str(ws.released)}),
    ]
    gen = {"L": str(ws.lists), "OUT": str(ws.generated), "URL": ws.images_url, "NAME": "images-probe",
           "CHECK": str(ws.image_check), "REPORT": str(ws.image_check_report)}
    plan += [
        S("lm-eval-bias generate vignette --lists L --output OUT", gen,
          ("--backend", "openai-images", "--base-url", ws.images_url, "--model", "images-probe", *steps.SMALL_GENERATION)),
        S("lm-eval-bias generate vignette --lists L --output OUT --backend openai-images --base-url URL --model NAME",
          {**gen, "OUT": str(ws.generated_second_pool)}, steps.SMALL_GENERATION),
        S("lm-eval-bias build vignette --source OUT --lists L --output DATA/vignette", {**gen, "DATA": str(ws.data_generated)}),
        S("lm-eval-bias generate vignette human-check export --images OUT --out CHECK", gen),
        ("fill the image rating sheets", lambda: steps.fill_image_ratings(ws.image_check)),
        S("lm-eval-bias generate vignette human-check report --ratings CHECK/ratings_*.csv --out REPORT", gen),
        S("lm-eval-bias build vignette --source OUT --lists L --output DATA/vignette --exclude-failed CHECK/ratings_*.csv",
          {**gen, "DATA": str(ws.data_checked)}),
        S("lm-eval-bias generate vignette human-check pairs-export --dataset DATA/vignette --out CHECK --per-dimension 150",
          {"DATA": data, "CHECK": str(ws.pair_check)}),
        ("fill the pair rating sheets", lambda: steps.fill_pair_ratings(ws.pair_check)),
        S("lm-eval-bias generate vignette human-check pairs-report --ratings CHECK/pair_ratings_*.csv --out REPORT",
          {"CHECK": str(ws.pair_check), "REPORT": str(ws.pair_check_report)}),
    ]
    pata = {"PATA": str(ws.pata), "pata.csv": str(ws.root / "pata.csv"), "L": str(ws.lists), "REAL": str(ws.real),
            "OUT": str(ws.vignette_src), "SYNTH": str(ws.synthetic), "real_run": str(other / "real_run"),
            "synth_run": str(other / "synth_run"), "CMP": str(ws.real_vs_synthetic)}
    exhaustive = ("lm-eval-bias run --model … --tasks vignette_decision --metadata '{\"pair_sampling\": \"exhaustive\"}' "
                  "--log_samples --output_path real_run")
    plan += [
        S("lm-eval-bias build vignette-pata --source PATA --csv pata.csv --lists L --output REAL/vignette", pata),
        S("lm-eval-bias build vignette-pata --synthetic-from OUT --lists L --output SYNTH/vignette", pata),
        S(exhaustive, pata, ("--limit", steps.LIMIT), ws.real),
        S(exhaustive, {**pata, "real_run": pata["synth_run"]}, ("--limit", steps.LIMIT), ws.synthetic),
        S("lm-eval-bias vignette-real-vs-synthetic real_run synth_run --output CMP", pata, ("--n-boot", "20")),
    ]
    work = {"W": str(ws.cf_vqa_work), "CAPTIONS": str(ws.root / "captions.txt"), "CLIP_B32": str(ws.tiny_clip),
            "RATED.csv": str(ws.root / "rated.csv"), "data": str(ws.data_generated_cf_vqa)}
    images = ("--image-backend", "openai", "--image-model", "images-probe", "--image-base-url", ws.images_url,
              "--image-arg", "size=16x16")
    plan += [
        S("lm-eval-bias generate cf-vqa attributes --workdir W --propose-from CAPTIONS", work, steps.PLANTED_CHAT),
        S("lm-eval-bias generate cf-vqa all --workdir W ...", work, (*steps.PLANTED_CHAT, *images)),  # waits for ratings
        S("lm-eval-bias generate cf-vqa sheets --workdir W", work),
        ("fill the relevance sheet", lambda: steps.fill_relevance_sheet(ws.cf_vqa_work, ws.root / "rated.csv")),
        S("lm-eval-bias generate cf-vqa import-ratings --workdir W RATED.csv", work),
        S("lm-eval-bias generate cf-vqa all --workdir W ...", work, (*steps.PLANTED_CHAT, *images)),  # images, manifest
        S("lm-eval-bias generate cf-vqa quality --workdir W --clip CLIP_B32", work, ("--n-boot", "50")),
        S("lm-eval-bias build cf-vqa --source W --output data/cf_vqa", work),
    ]
    return plan


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """Every command of the map run once (some twice, on a second source) in this process, in order; the
    outcomes by command. Small bootstraps and 50-dpi report figures (the 300-dpi drawing is most of the
    report's time; the figures' content is the same); the environment and the constant restored afterwards."""
    from lm_eval_bias.report import render

    root = tmp_path_factory.mktemp("paper_map")
    outcomes: dict[str, list] = {}
    with pytest.MonkeyPatch.context() as patch:
        for name, value in {"LM_EVAL_BIAS_BOOTSTRAP_ITERS": "20", "LM_EVAL_BIAS_REPORT_BOOTSTRAP_ITERS": "20",
                            "LM_EVAL_BIAS_NULL_ITERS": "20", "OPENAI_API_KEY": "sk-loopback-only"}.items():
            patch.setenv(name, value)  # the key: only the loopback images endpoint reads it
        patch.setattr(render, "PNG_DPI", 50)
        ws = steps.prepare(root)
        try:
            for item in _plan(ws):
                if isinstance(item, tuple):
                    item[1]()
                    continue
                outcome = steps.execute(item)
                outcomes.setdefault(item.command, []).append(outcome)
                if outcome.code not in (0, None):
                    break  # later steps need this one's output: the test names it
        finally:
            ws.close()
    return ws, outcomes


def test_every_command_of_the_map_runs_on_synthetic_data(workspace):
    ws, outcomes = workspace
    failed = [f"{o.step.command}\n  argv: {' '.join(o.argv)}\n  exit {o.code}: {o.printed[-1500:]}"
              for runs in outcomes.values() for o in runs if o.code not in (0, None)]
    assert not failed, "\n".join(failed)
    assert set(outcomes) == set(_commands()), (sorted(set(_commands()) - set(outcomes)),
                                               sorted(set(outcomes) - set(_commands())))


def _words(path: Path) -> set[str]:
    """What a command left in ``path``: file names and stems, CSV header cells and first-column values,
    JSON keys (two levels)."""
    found: set[str] = set()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else []
    for file in files[:2000]:
        found |= {file.name, file.stem}
        if file.suffix == ".csv":
            with open(file, encoding="utf-8", newline="") as handle:
                rows = list(csv.reader(handle))
            found |= set(rows[0]) if rows else set()
            found |= {r[0] for r in rows[1:] if r}
            if rows and "key" in rows[0]:  # long tables: one key per row
                found |= {r[rows[0].index("key")] for r in rows[1:] if len(r) == len(rows[0])}
        elif file.suffix == ".parquet":  # a built dataset: its columns
            import pyarrow.parquet as pq

            found |= set(pq.read_schema(file).names)
        elif file.suffix in (".json", ".jsonl"):
            lines = file.read_text(encoding="utf-8").splitlines()[:50] if file.suffix == ".jsonl" else [file.read_text(encoding="utf-8")]
            for line in lines:
                try:
                    value = json.loads(line)
                except ValueError:
                    continue
                for item in (value if isinstance(value, list) else [value]):
                    if isinstance(item, dict):
                        found |= set(item)
                        found |= {k for v in item.values() if isinstance(v, dict) for k in v}
                        found |= {k for v in item.values() if isinstance(v, list) for x in v if isinstance(x, dict) for k in x}
    return found


_OUTPUTS: dict[int, set[str]] = {}


def _outputs(outcome) -> set[str]:
    """What a step printed and what lies in the folders and files its placeholders name."""
    if id(outcome) not in _OUTPUTS:
        words = set(re.findall(r"[A-Za-z0-9_.]+", outcome.printed))
        for value in outcome.step.bind.values():
            if value.startswith("/"):
                words |= _words(Path(value))
        for results in (Path(v) for v in outcome.step.bind.values() if v.startswith("/")):
            if results.is_dir() and outcome.argv[0] == "run":  # lm-eval's result keys, companions included
                for file in results.rglob("results_*.json"):
                    for values in json.loads(file.read_text())["results"].values():
                        words |= {k.split(",")[0] for k in values}
        _OUTPUTS[id(outcome)] = words
    return _OUTPUTS[id(outcome)]


def _report_keys(ws, tasks: list[str]) -> set[str]:
    """The keys of ``tasks`` in the report's key tables, with the companions a key has there
    (``_ci_low``/``_ci_high`` for an interval, ``_null``, ``_p_null``)."""
    keys: set[str] = set()
    for task in tasks:
        for table in (ws.report / "tables").glob(f"*/{task}_keys.csv"):
            frame = pd.read_csv(table)
            for _, row in frame.iterrows():
                key = str(row["key"])
                keys.add(key)
                if pd.notna(row.get("ci95_low")):
                    keys |= {f"{key}_ci_low", f"{key}_ci_high"}
                keys |= {f"{key}_{c}" for c in ("null", "p_null") if pd.notna(row.get(c))}
    return keys


@functools.lru_cache(maxsize=1)
def _groups() -> dict[str, list[str]]:
    import yaml

    groups = {}
    for path in (ROOT / "task_yamls").rglob("*.yaml"):
        config = yaml.load(path.read_text(), Loader=yaml.BaseLoader)
        if "group" in config:
            groups[config["group"]] = [t if isinstance(t, str) else t["task"] for t in config["task"]]
    return groups


def _expand(tasks: list[str]) -> list[str]:
    """Groups replaced by their tasks."""
    out: list[str] = []
    for task in tasks:
        out += _expand(_groups()[task]) if task in _groups() else [task]
    return out


#: what a row's named tasks default to where its command cell names none ("O and S tasks", "the runs above")
SECTION_TASKS = {"fact-or-fair": ["fact_or_fair"], "cf-vqa": ["cf_vqa_all"], "vignette": []}
#: spans of the last cells that are neither keys nor files nor report sections: words of the prose
NOT_NAMES = {"*"}
_SOURCE = "\n".join(p.read_text(encoding="utf-8") for folder in ("lm_eval_bias", "datasets_builder")
                    for p in (ROOT / folder).rglob("*.py"))


def _python_name(name: str) -> bool:
    """``name`` is defined in the package: a function, class, constant or record field (a quoted key)."""
    return bool(re.search(rf"(?:def|class) {name}\b|^\s*{name}\s*[:=]|[\"']{name}[\"']", _SOURCE, flags=re.MULTILINE))


def _span_found(span: str, words: set[str]) -> bool:
    if span.startswith("_"):  # a companion suffix: `_ci_low`/`_ci_high`, `_null`
        return all(any(w.endswith(s) for w in words) for s in span.split("/"))
    if span.startswith("tests/"):
        return (ROOT / span).is_file()
    if "/" in span or re.search(r"\.(csv|json|jsonl|png|txt)$", span):  # a file the command writes
        name = span.rsplit("/", 1)[-1]
        return any(re.fullmatch(re.sub(r"\\\*", ".*", re.escape(name)), w) for w in words) or \
            any(ROOT.joinpath("lm_eval_bias").rglob(name))  # the package's own files (reference_values.csv)
    pattern = re.sub(r"<[^>]+>", "[a-z0-9_]+", span).replace("*", "[a-z0-9_]*")
    return any(re.fullmatch(pattern, w) for w in words) or "<" not in span and _python_name(span)


def _importable(path: str) -> bool:
    import importlib

    try:
        importlib.import_module(path)
        return True
    except ImportError:
        module, _, attribute = path.rpartition(".")
        try:
            return hasattr(importlib.import_module(module), attribute)
        except ImportError:
            return False


def test_the_keys_files_and_report_sections_each_row_names_appear(workspace):
    """For each row: every backticked key, companion, file or column of its last cell is a result key of
    the tasks its commands ran (the report's key tables, lm-eval's results), or something its commands
    (and the section's report) wrote or printed, or a name defined in the package; every ``table "x"`` /
    ``figure "x"`` a report file; every module path importable; every test file present."""
    ws, outcomes = workspace
    names = _task_names() | set(_expand(sorted(_task_names())))
    report = next(o for o in outcomes["lm-eval-bias report out --output report"])
    report_words = _outputs(report)
    report_files = {p.stem for p in ws.report.rglob("*") if p.suffix in (".csv", ".png", ".html")}
    report_text = html.unescape(re.sub(r"<[^>]+>", "", "\n".join(  # the cards and the index, not the copied docs
        p.read_text(encoding="utf-8") for p in ws.report.rglob("*.html") if "docs" not in p.relative_to(ws.report).parts)))
    failed_sections = re.findall(r"[^.\n]{0,80}could not be (?:drawn|computed|rendered|read)[^.\n]{0,120}", report_text)
    assert not failed_sections, failed_sections  # a report section that failed on a command's run
    missing, checked = [], 0
    for section in SECTIONS:
        preamble = _section(section).split("\n|")[0]
        section_commands = _cells_commands([preamble])
        section_tasks = [t for c in _commands() if c.startswith("RUN ") for t in c.split()[-1].split(",")]
        for row in _rows(section):
            commands = _cells_commands(row[1:-1]) or ([] if section == "reflect" else section_commands)
            tasks = _row_tasks(section, row[1:-1], names)
            if not tasks:
                tasks = section_tasks if "every task" in row[1] and section == "reflect" else SECTION_TASKS.get(section, [])
            words = report_words | _report_keys(ws, _expand(tasks))
            for command in commands:
                for outcome in outcomes.get(command, []):
                    words = words | _outputs(outcome)
            for span in re.findall(r"`([^`]+)`", row[-1]):
                span = span.strip()
                if span in NOT_NAMES or span.startswith("--") or " " in span or "(" in span or "[" in span:
                    continue
                checked += 1
                if span.startswith("lm_eval_bias."):
                    if not _importable(span):
                        missing.append(f"{section} {row[0]!r}: `{span}` not importable")
                    continue
                if span in names:
                    continue
                if span.endswith(".py") and "/" not in span:
                    checked -= 1
                    continue  # a script of the authors' repository
                if "." in span and "/" not in span and not re.search(r"\.(csv|json|jsonl|png|txt|py)$", span):
                    checked -= 1
                    continue  # a Python expression on records (`samples.summarize(...)`): tested in its module
                if span.endswith(("_occupation>", "_subset>")) or "<" in span and not commands + tasks:
                    checked -= 1
                    continue  # per-occupation / per-subset keys: in the module tests
                if not _span_found(span, words):
                    missing.append(f"{section} {row[0]!r}: `{span}` (tasks {tasks}, commands {commands})")
            for name in re.findall(r'"([^"]+)"', re.sub(r"`[^`]+`", "", row[-1])):  # report tables, figures, titles
                checked += 1
                pattern = re.sub(r"<[^>]+>", "[a-z0-9_]+", name)
                if re.fullmatch(r"[a-z0-9_<>]+", name):
                    found = any(re.fullmatch(pattern, s) for s in report_files)
                else:
                    found = bool(re.search(re.sub(r"\\<[^>]+\\>|<[^>]+>", ".+?", re.escape(name)), report_text, re.IGNORECASE))
                if not found:
                    missing.append(f"{section} {row[0]!r}: report {name!r} missing")
    assert not missing, "\n".join(missing)
    assert checked >= 200


def test_replicate_prints_the_papers_values_beside_the_run(workspace):
    ws, outcomes = workspace
    [replicate] = outcomes["lm-eval-bias replicate out"]
    assert "not a model of the papers" in replicate.printed
    line = next(l for l in replicate.printed.splitlines() if "cf_vqa consistency_demography" in l and "Table 2 · o3 ·" in l)
    yours = re.search(r"paper \(o3\): 66\.7 · yours: ([\d.]+)", line)
    assert yours, line
    keys_csv = next((ws.report / "tables").rglob("cf_vqa_keys.csv"))
    ours = pd.read_csv(keys_csv, index_col=0).loc["consistency_demography"].iloc[0]
    assert float(yours.group(1)) == pytest.approx(100 * float(ours), abs=0.051)  # the paper's unit: percent, 1 decimal
    cards = list((ws.report / "cards").glob("*.html"))
    assert any("replication" in p.read_text() for p in cards)


def test_card_headlines_show_refusal_and_invalid_rates_and_gaps_in_percent(workspace):
    ws, _ = workspace
    card = next(p for p in (ws.report / "cards").glob("*.html") if "refusal_rate" in p.name).read_text()
    headlines = re.findall(r'<li class="headline" data-task="([^"]+)">(.*?)</li>', card)
    assert {t for t, _ in headlines} >= {"focus_2afc_income", "focus_mcq_salary", "focus_salary"}
    for task, html in headlines:
        assert "key-" in html and "refusal_rate" in html and "invalid_rate" in html, task
    mcq = next(html for task, html in headlines if task == "focus_mcq_salary")
    salary = next(html for task, html in headlines if task == "focus_salary")
    percent = r'</code></a> <span class="num">[−-]?\d+\.\d %</span>'  # one decimal and a per-cent sign
    assert re.search(r"gap_<wbr>male" + percent, mcq), mcq              # the MCQ's relative gap, x 100
    assert re.search(r"gap_<wbr>pct_<wbr>male" + percent, salary), salary


def test_glossary_links_open_rendered_documentation(workspace):
    ws, _ = workspace
    card = next(p for p in (ws.report / "cards").glob("*.html") if "refusal_rate" in p.name)
    links = set(re.findall(r'class="doc" href="([^"#]+)#([^"]+)"', card.read_text()))
    assert links
    for href, anchor in links:
        target = (card.parent / href).resolve()
        assert target.suffix == ".html" and target.is_file(), href
        assert f'id="{anchor}"' in target.read_text(), (href, anchor)


# -- report sections of the defects issue 28 fixed --------------------------------------------------------
def test_cf_vqa_table_3_compares_prompt_variants_on_the_hner_query_pairs(workspace):
    """Before, Base and BAEP (all pairs) stood beside HNER (its query subset); now the same pairs."""
    from lm_eval_bias import samples

    ws, _ = workspace
    table = pd.read_csv(next((ws.report / "tables").rglob("cf_vqa_same_pairs.csv")), index_col=0)
    assert list(table.columns) == ["cf_vqa", "cf_vqa_baep", "cf_vqa_hner", "cf_vqa_hner_targeted"]
    records = {t: samples.load_records(ws.runs, t) for t in ("cf_vqa", "cf_vqa_baep", "cf_vqa_hner")}
    query = {r["pair_id"] for r in records["cf_vqa_hner"]}
    assert query and query < {r["pair_id"] for r in records["cf_vqa"]}  # HNER asks a subset
    for task in ("cf_vqa", "cf_vqa_baep", "cf_vqa_hner"):
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


def test_fact_or_fair_tables_2_and_3_and_the_authors_s_fair_in_figs_4_5(workspace):
    from lm_eval_bias import samples

    ws, _ = workspace
    tables = ws.report / "tables"
    table3 = pd.read_csv(next(tables.rglob("fact_or_fair_table3.csv")), index_col=0)
    records = samples.load_records(ws.runs, "fact_or_fair_subjective_representativeness_gender")
    for side, column in (("highest", "R. Bias High"), ("lowest", "R. Bias Low")):
        scored = [r for r in records if r["status"] == "valid" and r["true_group"] and r["side"] == side]
        by_hand = 100 * sum(r["chosen"] == r["true_group"] for r in scored) / len(scored)
        assert table3.loc["gender", column] == pytest.approx(by_hand)
    increases = [table3.loc["gender", c] - 50 for c in ("R. Bias High", "R. Bias Low", "Attr. Err.", "In-G. Bias",
                                                         "Out-G. Bias")]  # chance 1/2 for gender, also Out-G.
    assert table3.loc["gender", "Avg. Increase"] == pytest.approx(sum(increases) / 5)
    fof_tasks = [f"fact_or_fair_subjective_{c}_gender" for c in ("baseline", "representativeness", "attribution",
                                                                 "ingroup")]
    keys = {t: pd.read_csv(next(tables.rglob(f"{t}_keys.csv")), index_col=0) for t in (*fof_tasks, "fact_or_fair_objective_gender")}
    table2 = pd.read_csv(next(tables.rglob("fact_or_fair_table2.csv")), index_col=0)
    subjective = sum(float(keys[t].loc["s_fair_authors"].iloc[0]) for t in fof_tasks) / 4
    assert table2.loc["this model", "Subj. S_fair gender"] == pytest.approx(100 * subjective)
    assert table2.loc["this model", "Obj. S_fact gender"] == pytest.approx(100 * float(keys["fact_or_fair_objective_gender"].loc["s_fact"].iloc[0]))
    card = next(p for p in (ws.report / "cards").glob("*.html") if "refusal_rate" in p.name).read_text()
    assert "S_fair is s_fair_authors" in card


def test_vignette_cross_model_decision_figure_on_the_index_page(workspace):
    """VIGNETTE Figs. 13-14: S per identity for every model that ran vignette_decision, by hand."""
    from lm_eval_bias import samples

    ws, _ = workspace
    table = pd.read_csv(ws.report / "tables" / "cross_model_selection_vignette_decision.csv", index_col=0)
    assert len(table.columns) == 2
    index = (ws.report / "index.html").read_text()
    assert "Decision selection frequencies across models" in index and "cross_model_selection_vignette_decision" in index
    for folder in ("vignette", "other_model"):
        records = samples.load_records(ws.runs / folder, "vignette_decision")
        label = samples.model_label(json.loads(next((ws.runs / folder).rglob("results_*.json")).read_text()))
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
