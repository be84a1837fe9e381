"""``lm-eval-bias build fact-or-fair``: FACT-OR-FAIR queries (paper: ``fact_or_fair.txt``, Sec. 3).

Source: a folder holding the authors' files in the format of their release (see
``../shared/upstream/fact_or_fair/``): ``all_highest_lowest.csv``, ``classes.json`` (categories,
definitions, per-attribute option groups), ``prompts_high.json`` / ``prompts_low.json`` (three
scenarios per statistic), ``prompts_representativeness_bias.json``,
``prompts_attribution_error_high.json`` / ``_low.json``, ``prompts_group_bias.json`` and
``templates_and_profile_lists.json`` (query templates, names, ages, groups). The same files under a
``data/`` sub-folder are accepted too.

Their repository layout (``data/classes.py``, ``data/all_highest_lowest.csv``,
``large_language_model/subjective_test/prompts/*.json`` and the templates inside the test scripts) is
accepted as well: :mod:`lm_eval_bias.datasets_builder.fact_or_fair_repo` reads it without executing it.

Output: a Hub-layout dataset with two configs:

- ``objective`` — every statistic x attribute it is tested on (gender, race) x {highest, lowest} x 3
  rounds, the option order shuffled per round (the authors' ``obj_test.py``);
- ``subjective`` — every statistic x {high, low} x its 3 scenarios x 4 contexts (baseline,
  representativeness, attribution, ingroup) x 100 profiles; each of the 4 options draws name, age,
  gender and race uniformly with replacement, and the ``{race}``/``{gender}`` of a context's
  background is drawn uniformly per query (the authors' ``subj_test.py``).

Generation is deterministic for ``--seed`` (recorded in every row and in the card).

Every problem in the files fails with ``error: FILE[:LINE]: reason`` and nothing is written: text
that is not UTF-8, invalid JSON (also a key given twice in one object), a JSON value of the wrong type
(e.g. a scenario list that is a string), a CSV row with the wrong number of fields, and a statistic on
two rows of ``all_highest_lowest.csv`` — the error names both lines, whether the rows conflict (the
second would flip the ground truth) or are identical.

Contradictions in the statistics table — the upstream "Homelessness Rate" row has highest race =
lowest race = Asian — are kept by default, as the paper scored them (its 108 objective race
queries), and named in the card and the build notes; the tasks drop them with
``contradictory_truth=drop``. ``drop_contradictions=True`` removes them at build time instead: the
objective queries on the contradictory statistic x attribute are dropped and the subjective ground
truth for it is nulled (recorded in the card).

Seven upstream low-side scenarios are word-for-word the high-side scenario of the same number
(:func:`identical_scenarios`); their subjective rows carry ``low_scenario_repeats_high = true`` so
the tasks can exclude them (``identical_scenarios=exclude``), and the card names them.
"""

from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lm_eval_bias.datasets_builder.hub import DatasetCard, SourceInput, write_hub_dataset_configs
from lm_eval_bias.datasets_builder.readers import (
    KeyedRows,
    SourceError,
    expect_dict,
    expect_list,
    expect_str,
    expect_str_list,
    field_name,
    read_csv,
    read_json,
)

REQUIRED_FILES = (
    "all_highest_lowest.csv", "classes.json", "prompts_high.json", "prompts_low.json",
    "prompts_representativeness_bias.json", "prompts_attribution_error_high.json",
    "prompts_attribution_error_low.json", "prompts_group_bias.json", "templates_and_profile_lists.json",
)
ATTRIBUTES = ("gender", "race")
SIDES = ("highest", "lowest")
CONTEXTS = ("baseline", "representativeness", "attribution", "ingroup")
SCENARIOS_PER_STATISTIC = 3
PROFILES_PER_SCENARIO = 100
ROUNDS = 3
LETTERS = "ABCD"


@dataclass(frozen=True)
class FactOrFairSource:
    """The authors' files, parsed and validated."""

    statistics: list[str]
    definitions: dict[str, str]
    options: dict[str, dict[str, list[str]]]          # attribute -> statistic -> option groups
    truth: dict[str, dict[str, dict[str, str | None]]]  # statistic -> attribute -> side -> group
    scenarios: dict[str, dict[str, list[str]]]        # side -> statistic -> 3 scenarios
    backgrounds: dict[str, Any]
    templates: dict[str, Any]
    contradictions: list[tuple[str, str]]             # (statistic, attribute) with highest == lowest


def _locate(source: Path) -> Path:
    for folder in (source, source / "data"):
        if all((folder / name).is_file() for name in REQUIRED_FILES):
            return folder
    missing = [n for n in REQUIRED_FILES if not (source / n).is_file() and not (source / "data" / n).is_file()]
    raise SourceError(source, f"missing source files: {', '.join(missing)}")


def _json(path: Path) -> Any:
    return read_json(path, expect=dict)


def _release_files(source: Path) -> tuple[Any, Path, Path, Any, Path, Path]:
    """(classes, where they come from, statistics table, templates, where they come from, folder of
    the prompt JSONs) of either layout."""
    from lm_eval_bias.datasets_builder.fact_or_fair_repo import SUBJ_SCRIPT, is_repository_layout, read_repository

    if is_repository_layout(source):
        repo = read_repository(source)
        return (repo["classes.json"], source / "data" / "classes.py", repo["table"],
                repo["templates_and_profile_lists.json"], source / SUBJ_SCRIPT, repo["prompts_dir"])
    folder = _locate(source)
    return (_json(folder / "classes.json"), folder / "classes.json", folder / "all_highest_lowest.csv",
            _json(folder / "templates_and_profile_lists.json"), folder / "templates_and_profile_lists.json", folder)


def _check_classes(classes: dict, where: Path) -> tuple[list[str], dict[str, str], dict[str, dict[str, list[str]]]]:
    """Statistics, definitions and option groups of ``classes.json`` (or ``data/classes.py``), type-checked."""
    for key in ("categories", "definitions", "attrs"):
        if key not in classes:
            raise SourceError(where, f"missing key {key!r}")
    statistics = expect_str_list(classes["categories"], where, "categories", nonempty=True)
    twice = sorted({s for s in statistics if statistics.count(s) > 1})
    if twice:
        raise SourceError(where, f"categories lists {twice} more than once")
    definitions = expect_dict(classes["definitions"], where, "definitions")
    for stat in statistics:
        if stat not in definitions:
            raise SourceError(where, f"definitions has no entry for {stat!r}")
        expect_str(definitions[stat], where, field_name("definitions", stat))
    attrs = expect_dict(classes["attrs"], where, "attrs")
    options: dict[str, dict[str, list[str]]] = {}
    for attr in ATTRIBUTES:
        per_stat = expect_dict(attrs.get(attr, {}), where, field_name("attrs", attr))
        for stat, groups in per_stat.items():
            expect_str_list(groups, where, field_name("attrs", attr, stat))
        options[attr] = per_stat
    return statistics, dict(definitions), options


def _read_table(table: Path, statistics: list[str], options: dict[str, dict[str, list[str]]]):
    """Ground truth per statistic x attribute x side. A statistic given on two rows is an error naming
    both lines — conflicting (it would flip the ground truth) or identical alike."""
    if not table.is_file():
        raise SourceError(table, "missing statistics table")
    needed = ("category", "highest_gender", "lowest_gender", "highest_race", "lowest_race")
    _, rows = read_csv(table, required=needed)
    truth: dict[str, dict[str, dict[str, str | None]]] = {}
    keyed = KeyedRows("statistic")
    for where, row in rows:
        stat = row["category"].strip()
        if stat not in statistics:
            raise SourceError(where, f"statistic {stat!r} is not in classes.json")
        keyed.add(stat, where, {k: row[k].strip() for k in needed})
        truth[stat] = {}
        for attr in ATTRIBUTES:
            sides = {side: (row[f"{side}_{attr}"].strip() or None) for side in SIDES}
            sides = {side: (None if v in (None, "N/A") else v) for side, v in sides.items()}
            groups = options[attr].get(stat, [])
            tested = bool(groups)
            if tested != all(v is not None for v in sides.values()) or (not tested and any(sides.values())):
                raise SourceError(where, f"{stat}: {attr} answers {sides} disagree with the option groups {groups} in "
                                         "classes.json")
            for side, group in sides.items():
                if group is not None and group not in groups:
                    raise SourceError(where, f"{stat}: {side} {attr} {group!r} is not one of {groups}")
            truth[stat][attr] = sides
    missing = [s for s in statistics if s not in truth]
    if missing:
        raise SourceError(table, f"no row for statistics {missing}")
    return truth


def _check_templates(templates: dict, where: Path) -> None:
    for key in ("objective", "subjective"):
        part = templates.get(key)
        if not isinstance(part, dict) or "template" not in part:
            raise SourceError(where, f"missing {key}.template")
        expect_str(part["template"], where, f"{key}.template", nonempty=True)
    sub = templates["subjective"]
    for key in ("names", "ages", "genders", "races", "option_template"):
        if not sub.get(key):
            raise SourceError(where, f"missing subjective.{key}")
    expect_str(sub["option_template"], where, "subjective.option_template")
    # ages may be numbers (the authors' scripts list them as ints); they are used as text
    ages = expect_list(sub["ages"], where, "subjective.ages")
    for k, age in enumerate(ages):
        if isinstance(age, int) and not isinstance(age, bool):
            ages[k] = str(age)
        expect_str(ages[k], where, f"subjective.ages[{k}]")
    sub["ages"] = ages
    for key in ("names", "genders", "races"):
        expect_str_list(sub[key], where, f"subjective.{key}")


def read_source(source: str | os.PathLike) -> FactOrFairSource:
    """Parse and validate the authors' files, in the release format or their repository layout
    (raises :class:`SourceError` with file, line where there is one, and reason: non-UTF-8 text,
    invalid JSON, a JSON value of the wrong type, a statistic on two rows of the table...)."""
    classes, classes_path, table, templates, templates_path, folder = _release_files(Path(source))
    statistics, definitions, options = _check_classes(classes, classes_path)
    truth = _read_table(table, statistics, options)
    contradictions = [(s, a) for s in statistics for a in ATTRIBUTES
                      if truth[s][a]["highest"] is not None and truth[s][a]["highest"] == truth[s][a]["lowest"]]
    scenarios = {}
    for side, name in (("high", "prompts_high.json"), ("low", "prompts_low.json")):
        data = _json(folder / name)
        for stat in statistics:
            if stat not in data:
                raise SourceError(folder / name, f"{stat!r} needs {SCENARIOS_PER_STATISTIC} scenarios, has none")
            items = expect_str_list(data[stat], folder / name, field_name(None, stat))
            if len(items) != SCENARIOS_PER_STATISTIC:
                raise SourceError(folder / name, f"{stat!r} needs {SCENARIOS_PER_STATISTIC} scenarios, has {len(items)}")
        scenarios[side] = data
    backgrounds = {
        "representativeness": _json(folder / "prompts_representativeness_bias.json"),
        "attribution": {"high": _json(folder / "prompts_attribution_error_high.json"),
                        "low": _json(folder / "prompts_attribution_error_low.json")},
        "ingroup": _json(folder / "prompts_group_bias.json"),
    }
    for name, data in (("prompts_representativeness_bias.json", backgrounds["representativeness"]),
                       ("prompts_attribution_error_high.json", backgrounds["attribution"]["high"]),
                       ("prompts_attribution_error_low.json", backgrounds["attribution"]["low"]),
                       ("prompts_group_bias.json", backgrounds["ingroup"])):
        absent = [s for s in statistics if s not in data]
        if absent:
            raise SourceError(folder / name, f"no background for {absent}")
        for stat in statistics:
            expect_str(data[stat], folder / name, field_name(None, stat))
    _check_templates(templates, templates_path)
    return FactOrFairSource(statistics, definitions, options, truth, scenarios, backgrounds,
                            templates, contradictions)


def _fill(template: str, **values: str) -> str:
    """Replace ``{name}`` placeholders only (the templates contain literal JSON braces)."""
    for key, value in values.items():
        template = template.replace("{" + key + "}", value)
    return template


def objective_prompt(template: str, statistic: str, definition: str, side: str, options: list[str]) -> str:
    """The authors' objective template with ``options`` in the given order: "...in America: A. x B. y."
    followed by the answer-format instruction (``obj_test.py``)."""
    head, sep, rest = template.partition(": A. {g1}")
    if not sep or ". Please" not in rest:
        raise SourceError("templates_and_profile_lists.json", "objective.template does not have the expected shape")
    instruction = rest[rest.index(". Please") + 2:]
    option_text = "".join(f" {LETTERS[i]}. {o}" for i, o in enumerate(options))
    return _fill(head, category=statistic, definition=definition, statistic=side) + ":" + option_text + ". " + instruction


def _objective_rows(src: FactOrFairSource, rng: random.Random, seed: int, dropped: set[tuple[str, str]]) -> list[dict]:
    rows = []
    template = src.templates["objective"]["template"]
    for stat in src.statistics:
        for attr in ATTRIBUTES:
            groups = src.options[attr].get(stat, [])
            if not groups or (stat, attr) in dropped:
                continue
            for side in SIDES:
                truth = src.truth[stat][attr][side]
                for round_no in range(1, ROUNDS + 1):
                    order = list(groups)
                    rng.shuffle(order)
                    rows.append({
                        "query_id": f"obj/{attr}/{stat}/{side}/{round_no}",
                        "statistic": stat, "attribute": attr, "side": side, "round": round_no,
                        "options": order, "answer": LETTERS[order.index(truth)], "true_group": truth,
                        "prompt": objective_prompt(template, stat, src.definitions[stat], side, order),
                        "seed": seed,
                    })
    return rows


def _background(src: FactOrFairSource, context: str, stat: str, side: str, rng: random.Random) -> tuple[str, str | None, str | None]:
    if context == "baseline":
        return "", None, None
    text = {"representativeness": src.backgrounds["representativeness"][stat],
            "attribution": src.backgrounds["attribution"][side][stat],
            "ingroup": src.backgrounds["ingroup"][stat]}[context]
    race = gender = None
    if "{race}" in text or "{gender}" in text:
        race = rng.choice(src.templates["subjective"]["races"])
        gender = rng.choice(src.templates["subjective"]["genders"])
        text = text.replace("{race}", race).replace("{gender}", gender)
    return text, race, gender


def _subjective_rows(src: FactOrFairSource, rng: random.Random, seed: int) -> list[dict]:
    repeats = set(identical_scenarios(src))
    sub = src.templates["subjective"]
    rows = []
    for stat in src.statistics:
        for side in ("high", "low"):
            full_side = "highest" if side == "high" else "lowest"
            for scenario_no, scenario in enumerate(src.scenarios[side][stat], 1):
                for context in CONTEXTS:
                    for profile_no in range(1, PROFILES_PER_SCENARIO + 1):
                        background, bg_race, bg_gender = _background(src, context, stat, side, rng)
                        profiles = [{"name": rng.choice(sub["names"]), "age": rng.choice(sub["ages"]),
                                     "gender": rng.choice(sub["genders"]), "race": rng.choice(sub["races"])}
                                    for _ in LETTERS]
                        options = [_fill(sub["option_template"], **p) for p in profiles]
                        prompt = _fill(sub["template"], background=background, scenario=scenario, opt1=options[0],
                                       opt2=options[1], opt3=options[2], opt4=options[3]).strip()
                        rows.append({
                            "query_id": f"subj/{context}/{stat}/{side}/{scenario_no}/{profile_no}",
                            "statistic": stat, "side": full_side, "scenario": scenario_no, "context": context,
                            "low_scenario_repeats_high": side == "low" and (stat, scenario_no) in repeats,
                            "profiles": json.dumps(profiles), "background_race": bg_race, "background_gender": bg_gender,
                            "true_gender": src.truth[stat]["gender"][full_side], "true_race": src.truth[stat]["race"][full_side],
                            "prompt": prompt, "seed": seed,
                        })
    return rows


def _features():
    import datasets

    v = datasets.Value
    objective = datasets.Features({
        "query_id": v("string"), "statistic": v("string"), "attribute": v("string"), "side": v("string"),
        "round": v("int32"), "options": datasets.Sequence(v("string")), "answer": v("string"),
        "true_group": v("string"), "prompt": v("string"), "seed": v("int64"),
    })
    subjective = datasets.Features({
        "query_id": v("string"), "statistic": v("string"), "side": v("string"), "scenario": v("int32"),
        "low_scenario_repeats_high": v("bool"),
        "context": v("string"), "profiles": v("string"), "background_race": v("string"),
        "background_gender": v("string"), "true_gender": v("string"), "true_race": v("string"),
        "prompt": v("string"), "seed": v("int64"),
    })
    return objective, subjective


@dataclass(frozen=True)
class FactOrFairBuildSummary:
    output: Path
    n_objective: int
    n_subjective: int
    dropped: tuple[tuple[str, str], ...]


def identical_scenarios(src: FactOrFairSource) -> list[tuple[str, int]]:
    """(statistic, 1-based scenario number) where the "low" scenario is word-for-word the "high" one of
    the same number: the lowest-side subjective query then asks the highest-side question."""
    return [(stat, n) for stat in src.statistics
            for n, (high, low) in enumerate(zip(src.scenarios["high"][stat], src.scenarios["low"][stat]), 1)
            if high == low]


#: Verified in uclanlp/Fact-or-Fair at commit 945ec6bc (``prompts_high.json`` vs ``prompts_low.json``,
#: compared string by string for every statistic and scenario): exactly these seven (statistic,
#: 1-based scenario) pairs are identical; every other pair differs ("most" -> "least").
UPSTREAM_IDENTICAL_SCENARIOS: tuple[tuple[str, int], ...] = (
    ("COVID-19 Mortality Rate", 1), ("Crime Rate", 2), ("Crime Rate", 3), ("Mortality Rate", 2), ("Mortality Rate", 3),
    ("Unemployment Rate", 2), ("Unemployment Rate", 3),
)
FOF_REPOSITORY = "https://github.com/uclanlp/Fact-or-Fair"
FOF_COLUMNS = {
    "query_id": "stable id", "statistic": "one of the 19 U.S. statistics", "attribute": "gender or race",
    "side": "highest or lowest", "round": "1-3, option order shuffled per round",
    "options": "option groups in presented order", "answer": "letter of the true group",
    "true_group": "ground-truth group", "prompt": "the query text", "seed": "generation seed",
    "scenario": "1-3 (the position in the authors' prompts_high/low.json lists, 1-based)",
    "low_scenario_repeats_high": ("true on a low-side query whose scenario is word-for-word the high-side scenario of "
                                  "the same number (upstream defect; the tasks' identical_scenarios=exclude drops them)"),
    "context": "baseline, representativeness, attribution or ingroup",
    "profiles": "JSON list of the 4 options' name, age, gender, race",
    "background_race": "race filled into the context background (if any)",
    "background_gender": "gender filled into the context background (if any)",
    "true_gender": "statistic's true group for this side (null if not tested)",
    "true_race": "statistic's true group for this side (null if not tested)",
}


def fact_or_fair_card(*, provenance: dict, build_command: str, notes: list[str],
                      identical: list[tuple[str, int]]) -> DatasetCard:
    """The FACT-OR-FAIR dataset card (content from the paper and the authors' repository)."""
    upstream = "; ".join(f"{stat} scenario {n}" for stat, n in UPSTREAM_IDENTICAL_SCENARIOS)
    found = "; ".join(f"{stat} scenario {n}" for stat, n in identical) or "none"
    return DatasetCard(
        name="fact_or_fair",
        pretty_name="FACT-OR-FAIR queries",
        summary=("Objective (fact-based) and subjective (fairness-based) multiple-choice queries of FACT-OR-FAIR, built "
                 "from the authors' 19 U.S. statistics, scenarios and cognitive-error contexts."),
        description=("Objective and subjective queries of FACT-OR-FAIR (Huang et al.) built from the authors' "
                     "statistics table, scenarios, cognitive-error backgrounds and profile lists. Objective queries ask "
                     "which gender or race group has the highest or lowest value of one of 19 U.S. statistics "
                     "(factuality: there is a true answer). Subjective queries put four random profiles in an everyday "
                     "scenario and ask whom to pick, with no context (baseline) or a context meant to trigger "
                     "representativeness bias, attribution error or in-group/out-group bias (fairness: the ideal answer "
                     "distribution is diverse)."),
        license="other",
        license_name="fact-or-fair-research-only",
        license_note=("the paper's ethics statement says FACT-OR-FAIR is released 'under a research-only license', but "
                      "the authors' repository (checked at commit 945ec6bc) has no licence file, so the terms are not "
                      "written down: treat it as research-only and check with the authors before redistribution"),
        license_link=FOF_REPOSITORY,
        columns=FOF_COLUMNS,
        curated_by=("Jen-tse Huang, Yuhang Yan, Linqi Liu, Yixin Wan, Wenxuan Wang, Kai-Wei Chang and Michael R. Lyu "
                    "(The Chinese University of Hong Kong; University of California, Los Angeles), the FACT-OR-FAIR "
                    "authors. Queries generated from their files by lm-eval-bias."),
        repository=(f"{FOF_REPOSITORY} (the paper's link; lm-eval-bias checked the files described here at commit "
                    "945ec6bc, Feb 2025)"),
        paper=("Huang, Yan, Liu, Wan, Wang, Chang and Lyu, *Where Fact Ends and Fairness Begins: Redefining AI Bias "
               "Evaluation through Cognitive Biases* (FACT-OR-FAIR)"),
        direct_use=("Evaluating language and vision-language models on the fact-fair trade-off with the lm-eval-bias "
                    "FACT-OR-FAIR tasks: factuality from the objective queries, fairness (entropy and KL divergence of "
                    "the chosen groups) and susceptibility to cognitive-error contexts from the subjective ones."),
        out_of_scope_use=("Any decision about people; a source of demographic statistics (use the agencies' own "
                          "releases); training models to associate groups with outcomes such as crime, illness or "
                          "poverty; marketing a model as 'fully fair' from one score (the paper's ethics statement "
                          "recommends reporting both factuality and fairness, in full)."),
        structure=("Two configs. `objective`: every statistic x tested attribute (gender, race) x side (highest, "
                   "lowest) x 3 rounds, the option order shuffled per round as in the authors' `obj_test.py`. "
                   "`subjective`: every statistic x side x 3 scenarios x 4 contexts x 100 profiles; each option draws "
                   "name, age, gender and race uniformly with replacement, as in `subj_test.py`. Generation is "
                   "deterministic for the recorded seed."),
        curation_rationale=("Fairness benchmarks often conflate factual correctness with normative fairness; "
                            "FACT-OR-FAIR separates fact-based queries, which need accuracy, from fairness-based "
                            "queries, which need diversity, and draws its contexts from cognitive psychology (paper, "
                            "Sec. 1-3)."),
        collection_and_processing=(
            "The authors collected 19 statistics with gender and race breakdowns from U.S. sources (BLS, U.S. Census "
            "Bureau, CDC, KFF, Office of Community Planning and Development, Pew Research Center, ILO, FBI, IHME, NIH; "
            "paper Table 1), converting case counts to rates with Census population data where needed; the table this builder reads "
            "keeps only the highest and lowest group per statistic. Scenarios (three per statistic and side) were "
            "generated by the authors with GPT-4o (Sec. 3.3); contexts follow three templates (representativeness, "
            "attribution, in-group). This builder validates the files (see the lm-eval-bias docs); contradictory rows are kept "
            "(as the paper scored them) unless `--drop-contradictions` is given (recorded below)."),
        inputs=[
            SourceInput("`all_highest_lowest.csv`, `classes.json` (statistics, definitions, option groups)",
                        f"{FOF_REPOSITORY} (`data/all_highest_lowest.csv`, `data/classes.py`); figures from the U.S. "
                        "agencies and organisations of the paper's Table 1",
                        "repository: no licence file; paper: 'research-only license'"),
            SourceInput("`prompts_high.json`, `prompts_low.json` (scenarios)",
                        f"{FOF_REPOSITORY}, written by the authors with GPT-4o (paper Sec. 3.3)",
                        "repository: no licence file; paper: 'research-only license'"),
            SourceInput("Cognitive-error backgrounds (`prompts_representativeness_bias.json`, "
                        "`prompts_attribution_error_*.json`, `prompts_group_bias.json`)", FOF_REPOSITORY,
                        "repository: no licence file; paper: 'research-only license'"),
            SourceInput("Query templates, name and age lists (`templates_and_profile_lists.json`)",
                        f"extracted from the authors' `obj_test.py` / `subj_test.py` in {FOF_REPOSITORY}",
                        "repository: no licence file; paper: 'research-only license'"),
        ],
        source_producers=("The FACT-OR-FAIR authors (statistics selection, scenarios with GPT-4o, templates); the "
                          "underlying figures come from the U.S. government agencies and research organisations "
                          "listed in the paper's Table 1."),
        annotations=("No human annotation. `answer`, `true_group`, `true_gender` and `true_race` come from the "
                     "authors' statistics table (highest and lowest group per statistic)."),
        personal_and_sensitive=(
            "No personal data: the statistics are public aggregates (paper, Ethics Statements), and the profiles "
            "combine ten first names from the authors' list (Riley, Casey, Jamie, ...) with a random age, gender and "
            "race; they describe no real person. The queries do name race and gender groups and tie them to crime, "
            "HIV, mortality, poverty, homelessness and similar outcomes, on purpose."),
        bias_risks_limitations=[
            "Known upstream data defect: seven low-side scenarios are word-for-word identical to the high-side "
            f"scenario of the same number, so those 'lowest' subjective queries ask the 'highest' question (e.g. who "
            f"is *most* at risk) while being scored against the lowest group. In the authors' repository (commit "
            f"945ec6bc; `prompts_low.json` vs `prompts_high.json`, compared string by string) they are: {upstream} "
            "(scenario numbers 1-based as in the `scenario` column). The builder keeps these rows unchanged and flags "
            "them with `low_scenario_repeats_high = true`; the tasks exclude them with `identical_scenarios=exclude`. "
            f"Identical pairs found in this build's source: {found}.",
            "Known upstream data error: the 'Homelessness Rate' row has highest race = lowest race = Asian, so one of its "
            "two race answers is necessarily wrong. The paper scored it (108 objective race queries); the builder keeps "
            "it unless `--drop-contradictions` is given, and the lm-eval-bias tasks drop it with "
            "`contradictory_truth=drop` (see the build notes).",
            "Scope (paper, Limitations): U.S. statistics only, binary gender and four racial groups, no intersectional "
            "identities or other protected attributes; template-based queries under-represent real user prompts.",
            "The statistics are snapshots of particular years and sources; the ground truth may change.",
            "Subjective prompts deliberately surface stereotypes; taken out of context they can reinforce them "
            "(paper, Ethics Statements).",
        ],
        recommendations=[
            "Exclude the seven identical low-side scenarios (side `lowest` with the statistic and scenario listed above) "
            "or report them separately until the upstream files are fixed.",
            "Report factuality and fairness together, with full score tables rather than one aggregate (paper, Ethics "
            "Statements).",
            "Use for research only, as the authors state; check their terms before redistribution.",
        ],
        citation_bibtex="""@misc{huang_fact_or_fair,
  title  = {Where Fact Ends and Fairness Begins: Redefining AI Bias Evaluation through Cognitive Biases},
  author = {Huang, Jen-tse and Yan, Yuhang and Liu, Linqi and Wan, Yixin and Wang, Wenxuan and Chang, Kai-Wei and Lyu, Michael R.},
  note   = {FACT-OR-FAIR benchmark. Code and data: https://github.com/uclanlp/Fact-or-Fair}
}""",
        citation_text=("Huang, J., Yan, Y., Liu, L., Wan, Y., Wang, W., Chang, K.-W., & Lyu, M. R. *Where Fact Ends and "
                       "Fairness Begins: Redefining AI Bias Evaluation through Cognitive Biases.* The copy of the paper "
                       "used here gives no year or venue; cite the published version."),
        task_categories=["multiple-choice", "question-answering"],
        tags=["social-bias", "fairness", "factuality", "cognitive-bias", "stereotypes", "race", "gender", "fact-or-fair"],
        provenance=provenance,
        build_command=build_command,
        notes=notes,
    )


def build_fact_or_fair(source: str | os.PathLike, output: str | os.PathLike, *, seed: int = 0,
                       drop_contradictions: bool = False, overwrite: bool = False) -> FactOrFairBuildSummary:
    """Validate the authors' files and write the ``fact_or_fair`` dataset (objective + subjective)."""
    src = read_source(source)
    dropped = set(src.contradictions) if drop_contradictions else set()
    kept = sorted(set(src.contradictions) - dropped)
    rng = random.Random(seed)
    objective = _objective_rows(src, rng, seed, dropped)
    subjective = _subjective_rows(src, random.Random(seed + 1), seed)
    # subjective queries scored on a contradictory attribute lose their ground truth for that attribute
    for row in subjective:
        for stat, attr in dropped:
            if row["statistic"] == stat:
                row[f"true_{attr}"] = None
    obj_features, subj_features = _features()
    notes = [f"dropped (contradictory highest = lowest): {s} / {a}; objective queries removed, subjective "
             f"true_{a} set to null" for s, a in sorted(dropped)]
    notes += [f"kept (contradictory highest = lowest = {src.truth[s][a]['highest']}, as the paper scored it): {s} / {a}; "
              "the tasks drop it with contradictory_truth=drop" for s, a in kept]
    identical = sorted(identical_scenarios(src))
    card = fact_or_fair_card(
        provenance={"source folder": Path(source).name, "seed": seed, "objective rows": len(objective),
                    "subjective rows": len(subjective),
                    "dropped contradictions": ", ".join(f"{s}/{a}" for s, a in sorted(dropped)) or "none",
                    "low-side scenarios identical to the high-side one": (
                        "; ".join(f"{stat} scenario {n}" for stat, n in identical) or "none")},
        build_command=(f"lm-eval-bias build fact-or-fair --source {Path(source).name} --output {Path(output).name} "
                       f"--seed {seed}" + (" --drop-contradictions" if drop_contradictions else "")),
        notes=notes,
        identical=identical,
    )
    out = write_hub_dataset_configs(output, {"objective": (objective, obj_features), "subjective": (subjective, subj_features)},
                                    card, overwrite=overwrite)
    return FactOrFairBuildSummary(out, len(objective), len(subjective), tuple(sorted(dropped)))
