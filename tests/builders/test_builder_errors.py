"""Every builder, through ``lm-eval-bias build``, on bad inputs: ``error: <file>[:<line>]: <reason>`` on
stderr, exit status 2, no traceback, nothing written (docs/data.md, "Building datasets: errors")."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Callable

import pytest

from lm_eval_bias.cli import main
from lm_eval_bias.vignette import synthetic as sv
from lm_eval_bias.cf_vqa.synthetic import make_synthetic_cf_vqa
from lm_eval_bias.fact_or_fair.synthetic import make_synthetic_fact_or_fair, make_synthetic_fact_or_fair_repository
from lm_eval_bias.reflect.synthetic import make_synthetic_bios, make_synthetic_focus

LATIN1 = "Café".encode("latin-1")  # b"Caf\xe9": not UTF-8


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    """One valid source per builder (and format), built once; each test corrupts a copy."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = tmp_path_factory.mktemp("pristine")
    make_synthetic_focus(root / "focus", occupations=("ceo",), templates=(1,), size=(32, 32))
    make_synthetic_bios(root / "bios.csv", per_occupation=2)
    jsonl = make_synthetic_bios(root / "bios.jsonl", per_occupation=2)
    rows = [json.loads(line) for line in jsonl.read_text().splitlines()]
    pq.write_table(pa.Table.from_pylist([{"profession": 2, "hard_text": r["biography"]} for r in rows]), root / "bios.parquet")
    make_synthetic_fact_or_fair(root / "fof")
    make_synthetic_fact_or_fair_repository(root / "fof_repo")
    make_synthetic_cf_vqa(root / "cf", size=16)
    make_synthetic_cf_vqa(root / "cf_csv", size=16, fmt="csv")
    sv.write_lists(root / "lists")
    sv.write_images(root / "images", size=16, portraits=False)
    return root


# -- file edits -----------------------------------------------------------------------------------------
def _set_line(path: Path, line: int, text: str | bytes) -> None:
    lines = path.read_bytes().split(b"\n")
    lines[line - 1] = text if isinstance(text, bytes) else text.encode()
    path.write_bytes(b"\n".join(lines))


def _edit_json(path: Path, edit: Callable[[dict], None]) -> None:
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data, indent=1))


def _jsonl_line(path: Path, line: int) -> dict:
    return json.loads(path.read_text().split("\n")[line - 1])


# -- cases: (builder args, corrupt(src) -> (bad file, line or None, reason regex)) ----------------------
def _bios(name):
    return lambda s: ["focus-bios", "--source", str(s / name)]


FOF = lambda s: ["fact-or-fair", "--source", str(s / "fof")]  # noqa: E731
FOF_REPO = lambda s: ["fact-or-fair", "--source", str(s / "fof_repo")]  # noqa: E731
CF = lambda s: ["cf-vqa", "--source", str(s / "cf")]  # noqa: E731
CF_CSV = lambda s: ["cf-vqa", "--source", str(s / "cf_csv")]  # noqa: E731
VIG = lambda s: ["vignette", "--source", str(s / "images"), "--lists", str(s / "lists")]  # noqa: E731
FOCUS = lambda s: ["focus", "--source", str(s / "focus")]  # noqa: E731


def bios_csv_latin1(s):
    _set_line(s / "bios.csv", 4, b"ceo-900,ceo," + LATIN1 + b" owner.")
    return s / "bios.csv", 4, r"not UTF-8 text \(byte 0xe9 at byte 16 of the line\)"


def bios_jsonl_latin1(s):
    _set_line(s / "bios.jsonl", 2, b'{"occupation": "ceo", "biography": "' + LATIN1 + b'"}')
    return s / "bios.jsonl", 2, "not UTF-8 text"


def bios_jsonl_array(s):
    _set_line(s / "bios.jsonl", 3, '["ceo", "Runs a company."]')
    return s / "bios.jsonl", 3, "expected a JSON object per line, got an array"


def bios_jsonl_string(s):
    _set_line(s / "bios.jsonl", 5, '"ceo: Runs a company."')
    return s / "bios.jsonl", 5, "expected a JSON object per line, got a string"


def bios_jsonl_number(s):
    _set_line(s / "bios.jsonl", 1, "42")
    return s / "bios.jsonl", 1, r"expected a JSON object per line, got a number \(42\)"


def bios_jsonl_invalid(s):
    _set_line(s / "bios.jsonl", 6, '{"occupation": "ceo",')
    return s / "bios.jsonl", 6, "not valid JSON"


def bios_biography_number(s):
    _set_line(s / "bios.jsonl", 4, json.dumps({"occupation": "cook", "biography": 12}))
    return s / "bios.jsonl", 4, r"biography must be a string, got a number \(12\)"


def bios_occupation_null(s):
    _set_line(s / "bios.jsonl", 7, json.dumps({"occupation": None, "biography": "Cooks."}))
    return s / "bios.jsonl", 7, "occupation must be a string, got null"


def bios_name_array(s):
    _set_line(s / "bios.jsonl", 2, json.dumps({"occupation": "ceo", "biography": "Runs it.", "name": ["A", "B"]}))
    return s / "bios.jsonl", 2, "name must be a string, got an array"


def bios_not_parquet(s):
    (s / "bios.parquet").write_text("occupation,biography\nceo,Runs a company.\n")
    return s / "bios.parquet", None, "not a readable parquet file"


def bios_truncated_parquet(s):
    data = (s / "bios.parquet").read_bytes()
    (s / "bios.parquet").write_bytes(data[: len(data) // 2])
    return s / "bios.parquet", None, "not a readable parquet file"


def bios_conflicting_duplicate(s):
    row = _jsonl_line(s / "bios.jsonl", 2)
    _set_line(s / "bios.jsonl", 9, json.dumps({**row, "biography": "A different text."}))
    return s / "bios.jsonl", 9, rf"conflicting duplicate bio_id '{row['bio_id']}': line 2 has biography .*, line 9 has"


def bios_identical_duplicate(s):
    _set_line(s / "bios.csv", 8, (s / "bios.csv").read_bytes().split(b"\n")[2])
    return s / "bios.csv", 8, r"duplicate bio_id 'ceo-001': repeats line 3"


def bios_ragged_csv(s):
    _set_line(s / "bios.csv", 5, "cook-9,cook,Cooks.,extra")
    return s / "bios.csv", 5, "has 4 fields, the header has 3"


def fof_table_latin1(s):
    _set_line(s / "fof" / "all_highest_lowest.csv", 3, b"Crime Rate,male,female," + LATIN1 + b",Asian")
    return s / "fof" / "all_highest_lowest.csv", 3, "not UTF-8 text"


def fof_json_latin1(s):
    path = s / "fof" / "prompts_high.json"
    path.write_bytes(path.read_bytes().replace(b"High scenario 2 for Crime Rate", LATIN1, 1))
    line = path.read_bytes().split(b"\n").index(next(x for x in path.read_bytes().split(b"\n") if LATIN1 in x)) + 1
    return path, line, "not UTF-8 text"


def fof_classes_array(s):
    (s / "fof" / "classes.json").write_text('["Employment Rate", "Crime Rate"]')
    return s / "fof" / "classes.json", None, "expected an object at the top level, got an array"


def fof_categories_string(s):
    _edit_json(s / "fof" / "classes.json", lambda d: d.update(categories="Employment Rate"))
    return s / "fof" / "classes.json", None, "categories must be an array, got a string"


def fof_option_groups_string(s):
    _edit_json(s / "fof" / "classes.json", lambda d: d["attrs"]["race"].update({"Crime Rate": "Black"}))
    return s / "fof" / "classes.json", None, r'attrs\["race"\]\["Crime Rate"\] must be an array, got a string'


def fof_definition_null(s):
    _edit_json(s / "fof" / "classes.json", lambda d: d["definitions"].update({"Crime Rate": None}))
    return s / "fof" / "classes.json", None, r'definitions\["Crime Rate"\] must be a string, got null'


def fof_scenario_number(s):
    _edit_json(s / "fof" / "prompts_low.json", lambda d: d["Crime Rate"].__setitem__(1, 7))
    return s / "fof" / "prompts_low.json", None, r'\["Crime Rate"\]\[1\] must be a string, got a number \(7\)'


def fof_background_number(s):
    _edit_json(s / "fof" / "prompts_group_bias.json", lambda d: d.update({"Crime Rate": 3}))
    return s / "fof" / "prompts_group_bias.json", None, r'\["Crime Rate"\] must be a string, got a number'


def fof_names_null(s):
    _edit_json(s / "fof" / "templates_and_profile_lists.json", lambda d: d["subjective"]["names"].append(None))
    return s / "fof" / "templates_and_profile_lists.json", None, r"subjective.names\[3\] must be a string, got null"


def fof_duplicate_json_key(s):
    path = s / "fof" / "prompts_representativeness_bias.json"
    path.write_text('{"Crime Rate": "a",\n "Employment Rate": "b",\n "Crime Rate": "c",\n "Homelessness Rate": "d"}')
    return path, None, r"duplicate key 'Crime Rate': .*different values.*lines 1, 3"


def fof_conflicting_rows(s):
    path = s / "fof" / "all_highest_lowest.csv"
    path.write_text(path.read_text() + "Crime Rate,male,female,Asian,Black\n")
    return path, 5, (r"conflicting duplicate statistic 'Crime Rate': line 3 has highest_race 'Black', line 5 has "
                     r"'Asian'; line 3 has lowest_race 'Asian', line 5 has 'Black'")


def fof_identical_rows(s):
    path = s / "fof" / "all_highest_lowest.csv"
    path.write_text(path.read_text() + path.read_text().splitlines()[1] + "\n")
    return path, 5, r"duplicate statistic 'Employment Rate': repeats line 2"


def fof_repo_latin1(s):
    path = s / "fof_repo" / "data" / "classes.py"
    path.write_bytes(b"# " + LATIN1 + b"\n" + path.read_bytes())
    return path, 1, "not UTF-8 text"


def cf_latin1(s):
    path = s / "cf" / "manifest.jsonl"
    row = _jsonl_line(path, 3)
    _set_line(path, 3, json.dumps(row).replace(row["question"], "QQ").encode().replace(b"QQ", LATIN1))
    return path, 3, "not UTF-8 text"


def cf_csv_latin1(s):
    path = s / "cf_csv" / "manifest.csv"
    path.write_bytes(path.read_bytes().replace(b"present", LATIN1, 1))
    return path, 2, "not UTF-8 text"


def cf_line_array(s):
    _set_line(s / "cf" / "manifest.jsonl", 4, json.dumps(list(_jsonl_line(s / "cf" / "manifest.jsonl", 4).values())))
    return s / "cf" / "manifest.jsonl", 4, "expected a JSON object per line, got an array"


def cf_line_number(s):
    _set_line(s / "cf" / "manifest.jsonl", 2, "3.5")
    return s / "cf" / "manifest.jsonl", 2, r"expected a JSON object per line, got a number \(3.5\)"


def cf_pair_id_number(s):
    path = s / "cf" / "manifest.jsonl"
    _set_line(path, 5, json.dumps({**_jsonl_line(path, 5), "pair_id": 5}))
    return path, 5, r"pair_id must be a string, got a number \(5\)"


def cf_question_null(s):
    path = s / "cf" / "manifest.jsonl"
    _set_line(path, 6, json.dumps({**_jsonl_line(path, 6), "question": None}))
    return path, 6, "missing question"


def cf_score_boolean(s):
    path = s / "cf" / "manifest.jsonl"
    _set_line(path, 7, json.dumps({**_jsonl_line(path, 7), "relevance_score": True}))
    return path, 7, r"relevance_score must be a number, got a boolean \(true\)"


def cf_conflicting_pairs(s):
    path = s / "cf" / "manifest.jsonl"
    _set_line(path, 8, json.dumps({**_jsonl_line(path, 8), "pair_id": _jsonl_line(path, 2)["pair_id"]}))
    return path, 8, r"conflicting duplicate pair_id '.*': line 2 has .*, line 8 has"


def cf_identical_pairs(s):
    path = s / "cf" / "manifest.jsonl"
    path.write_text(path.read_text() + path.read_text().split("\n")[0] + "\n")
    return path, 18, "duplicate pair_id '.*': repeats line 1"


def cf_csv_ragged(s):
    path = s / "cf_csv" / "manifest.csv"
    lines = path.read_text().split("\n")  # newlines normalized to \n
    lines[2] += ",extra"
    path.write_text("\n".join(lines))
    return path, 3, "has 13 fields, the header has 12"


def vig_identities_latin1(s):
    path = s / "lists" / "femaledes.csv"
    path.write_bytes(path.read_bytes() + b"age,," + LATIN1 + b" woman, Yes,Yes,Yes\n")
    return path, len(path.read_bytes().split(b"\n")) - 1, "not UTF-8 text"


def vig_terms_latin1(s):
    path = s / "lists" / "sscm_dictionary.csv"
    _set_line(path, 2, b"Sociability," + LATIN1 + b",high,high_s1")
    return path, 2, "not UTF-8 text"


def vig_activities_latin1(s):
    path = s / "lists" / "activities.json"
    path.write_bytes(path.read_bytes().replace(b"Cooking", LATIN1, 1))
    line = next(k for k, x in enumerate(path.read_bytes().split(b"\n"), 1) if LATIN1 in x)
    return path, line, "not UTF-8 text"


def vig_activities_array(s):
    (s / "lists" / "activities.json").write_text('["Cooking", "Cycling"]')
    return s / "lists" / "activities.json", None, "expected an object at the top level, got an array"


def vig_category_string(s):
    _edit_json(s / "lists" / "activities.json", lambda d: d.update({next(iter(d)): "Cooking"}))
    return s / "lists" / "activities.json", None, r'\[".*"\] must be an array, got a string'


def vig_activity_number(s):
    _edit_json(s / "lists" / "activities.json", lambda d: d[next(iter(d))].append(7))
    return s / "lists" / "activities.json", None, r'\[".*"\]\[\d+\] must be a string, got a number \(7\)'


def vig_roles_entry_string(s):
    _edit_json(s / "lists" / "roles.json", lambda d: d[next(iter(d))].__setitem__(0, "cook"))
    return s / "lists" / "roles.json", None, r'\[".*"\]\[0\]: entry must be an object, got a string'


def vig_role_number(s):
    _edit_json(s / "lists" / "roles.json", lambda d: d[next(iter(d))][0].update(role=3))
    return s / "lists" / "roles.json", None, r"role must be a string, got a number \(3\)"


def vig_conflicting_roles(s):
    def edit(d):
        first = d[next(iter(d))][0]
        d[next(iter(d))].append({**first, "role": "another role"})
    _edit_json(s / "lists" / "roles.json", edit)
    return s / "lists" / "roles.json", None, r"duplicate roles entry for activity .*: conflicts with \[.*\]\[0\]"


def vig_identical_terms(s):
    path = s / "lists" / "sscm_dictionary.csv"
    path.write_text(path.read_text() + path.read_text().splitlines()[1] + "\n")
    return path, len(path.read_text().splitlines()), "duplicate term 'friendly': repeats line 2"


def vig_conflicting_descriptor(s):
    path = s / "lists" / "maledes.csv"
    first = path.read_text().splitlines()[1]
    axis = first.split(",")[0]
    path.write_text(path.read_text() + first.replace(axis, "religion", 1) + "\n")
    return path, len(path.read_text().splitlines()), (rf"conflicting duplicate descriptor '.*': line 2 has axis '{axis}', "
                                                      r"line \d+ has 'religion'")


def vig_descriptor_same_file_name(s):
    path = s / "lists" / "femaledes.csv"
    first = path.read_text().splitlines()[1]
    descriptor = first.split(",")[2]
    path.write_text(path.read_text() + first.replace(descriptor, descriptor.upper().replace(" ", "  ")) + "\n")
    return path, len(path.read_text().splitlines()), "has the same file name as line 2"


def focus_truncated_image(s):
    path = s / "focus" / "ceo" / "1" / "Black_woman.jpg"
    path.write_bytes(path.read_bytes()[:100])
    return path, None, "image does not decode"


def focus_undecodable_file_name(s):
    import os

    folder = os.fsencode(s / "focus" / "ceo" / "1")
    path = Path(os.fsdecode(folder + b"/Asian_man\xe9.jpg"))
    shutil.copy(s / "focus" / "ceo" / "1" / "Asian_man.jpg", path)
    return path, None, "unknown file name"


CASES = {
    "focus-bios": (None, [bios_csv_latin1, bios_jsonl_latin1, bios_jsonl_array, bios_jsonl_string, bios_jsonl_number,
                          bios_jsonl_invalid, bios_biography_number, bios_occupation_null, bios_name_array,
                          bios_not_parquet, bios_truncated_parquet, bios_conflicting_duplicate, bios_identical_duplicate,
                          bios_ragged_csv]),
    "fact-or-fair": (FOF, [fof_table_latin1, fof_json_latin1, fof_classes_array, fof_categories_string,
                           fof_option_groups_string, fof_definition_null, fof_scenario_number, fof_background_number,
                           fof_names_null, fof_duplicate_json_key, fof_conflicting_rows, fof_identical_rows]),
    "fact-or-fair-repo": (FOF_REPO, [fof_repo_latin1]),
    "cf-vqa": (CF, [cf_latin1, cf_line_array, cf_line_number, cf_pair_id_number, cf_question_null, cf_score_boolean,
                    cf_conflicting_pairs, cf_identical_pairs]),
    "cf-vqa-csv": (CF_CSV, [cf_csv_latin1, cf_csv_ragged]),
    "vignette": (VIG, [vig_identities_latin1, vig_terms_latin1, vig_activities_latin1, vig_activities_array,
                       vig_category_string, vig_activity_number, vig_roles_entry_string, vig_role_number,
                       vig_conflicting_roles, vig_identical_terms, vig_conflicting_descriptor,
                       vig_descriptor_same_file_name]),
    "focus": (FOCUS, [focus_truncated_image, focus_undecodable_file_name]),
}


def _args(command, src: Path, bad: Path) -> list[str]:
    if command is None:  # focus-bios: the corrupted file is the source
        return ["focus-bios", "--source", str(bad)]
    return command(src)


@pytest.mark.parametrize("command,corrupt", [pytest.param(c, f, id=f.__name__) for c, fs in CASES.values() for f in fs])
def test_bad_input_fails_with_file_line_reason_and_writes_nothing(pristine, tmp_path, capsys, command, corrupt):
    from lm_eval_bias.datasets_builder.cli import _printable

    src = tmp_path / "src"
    shutil.copytree(pristine, src, symlinks=True)
    bad, line, reason = corrupt(src)
    out = tmp_path / "out"
    code = main(["build", *_args(command, src, bad), "--output", str(out)])
    captured = capsys.readouterr()
    assert code == 2, captured
    where = re.escape(_printable(str(bad))) + (f":{line}" if line is not None else "")
    assert re.fullmatch(rf"error: {where}: .*{reason}.*\n", captured.err), captured.err
    assert "Traceback" not in captured.err + captured.out
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.")]


def test_clean_sources_still_build(pristine, tmp_path, capsys):
    """The pristine copies are valid: each failure above comes from its one corruption."""
    for name, args in [("bios", ["focus-bios", "--source", str(pristine / "bios.parquet")]), ("fof", FOF(pristine)),
                       ("cf", CF_CSV(pristine)), ("vig", VIG(pristine))]:
        assert main(["build", *args, "--output", str(tmp_path / name)]) == 0, capsys.readouterr().err
        assert (tmp_path / name / "README.md").is_file()
