"""Every metric in the docs links to the test that checks it by hand (issue 30).

Each benchmark page and docs/statistics.md, docs/parsing.md end with a "## Checked by hand" table: one row
per metric or quantity the page defines, its paper section, and the tests that assert hand-computed (or
analytically known) values of it, as relative links ``[`test_name`](../tests/<dir>/test_<x>.py)``. This
file keeps the tables honest without running anything: every linked test file exists, every cited test is
defined in it (read with ``ast``), every row cites at least one test, metric links point at anchors of the
page, and no page loses rows.
"""

from __future__ import annotations

import ast
import re
from functools import lru_cache
from pathlib import Path

import pytest

from tests.cli.test_docs import anchors

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
HEADING = "## Checked by hand"
COLUMNS = ["metric", "paper", "checked by hand in"]
#: rows written when the tables were added (the floor: a page may gain rows, never silently lose them)
MIN_ROWS = {"reflect.md": 40, "fact-or-fair.md": 22, "cf-vqa.md": 15, "vignette.md": 33, "statistics.md": 10,
            "parsing.md": 9}
TEST_LINK = re.compile(r"\[`(test_\w+)`\]\(((?:\.\./)+tests/[\w/]+\.py)\)")
ANY_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CELL_SPLIT = re.compile(r"(?<!\\)\|")


def checked_by_hand_rows(text: str) -> list[list[str]]:
    """The cells of the rows of the page's "Checked by hand" table (header and separator left out)."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.strip() == HEADING]
    assert len(starts) == 1, f"expected exactly one {HEADING!r} heading, found {len(starts)}"
    section = []
    for line in lines[starts[0] + 1:]:
        if re.match(r"^#{1,2} ", line):
            break
        section.append(line)
    table = [line.strip() for line in section if line.strip().startswith("|")]
    assert len(table) >= 2, f"{HEADING!r} has no table"
    header = [c.strip() for c in CELL_SPLIT.split(table[0].strip("|"))]
    assert header == COLUMNS, f"columns {header}, expected {COLUMNS}"
    assert set(table[1].replace("|", "").replace(" ", "")) <= {"-", ":"}, f"no separator row: {table[1]}"
    rows = [[c.strip() for c in CELL_SPLIT.split(line.strip().strip("|"))] for line in table[2:]]
    for row in rows:
        assert len(row) == len(COLUMNS), f"row with {len(row)} cells: {row}"
    return rows


@lru_cache(maxsize=None)
def defined_tests(path: Path) -> frozenset[str]:
    """Test functions defined at module level (and in ``Test*`` classes) of a test file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            names.update(n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
    return frozenset(names)


@pytest.fixture(scope="module", params=sorted(MIN_ROWS))
def page(request):
    path = DOCS / request.param
    return path, checked_by_hand_rows(path.read_text(encoding="utf-8"))


def test_every_page_has_its_rows(page):
    path, rows = page
    assert len(rows) >= MIN_ROWS[path.name], f"{path.name}: {len(rows)} rows, expected at least {MIN_ROWS[path.name]}"


def test_every_row_names_a_metric_a_section_and_a_test(page):
    path, rows = page
    for metric, paper, tests in rows:
        assert metric and paper, f"{path.name}: row without metric or paper section: {metric!r} | {paper!r}"
        assert TEST_LINK.search(tests), f"{path.name}: row {metric!r} cites no test"
        assert len(TEST_LINK.findall(tests)) == len(ANY_LINK.findall(tests)), (
            f"{path.name}: row {metric!r} links something other than a test: write each test as "
            "[`test_name`](../tests/<dir>/test_<x>.py)")


def test_every_cited_test_exists(page):
    path, rows = page
    problems = []
    for metric, _, tests in rows:
        for name, target in TEST_LINK.findall(tests):
            file = (path.parent / target).resolve()
            if not file.is_file():
                problems.append(f"{metric}: {target} does not exist")
            elif name not in defined_tests(file):
                problems.append(f"{metric}: {name} is not defined in {target}")
    assert not problems, f"{path.name}: " + "; ".join(problems)


def test_metric_links_point_at_anchors_of_the_page(page):
    path, rows = page
    ids = anchors(path)
    missing = [t for metric, _, _ in rows for t in ANY_LINK.findall(metric) if t.startswith("#") and t[1:] not in ids]
    assert not missing, f"{path.name}: metric links without an anchor: {missing}"
    others = [t for metric, _, _ in rows for t in ANY_LINK.findall(metric) if not t.startswith("#")]
    assert not others, f"{path.name}: metric links must point into the page: {others}"


def test_parser_reads_a_hand_made_table():
    text = "\n".join(["# P", "## Checked by hand", "", "| metric | paper | checked by hand in |", "|---|---|---|",
                      "| [`x`](#x), \\|d\\| | Sec. 1 | [`test_a`](../tests/core/test_a.py), [`test_b`](../tests/core/test_a.py) |",
                      "", "## Next", "| a | b | c |"])
    rows = checked_by_hand_rows(text)
    assert len(rows) == 1 and rows[0][0] == "[`x`](#x), \\|d\\|"
    assert TEST_LINK.findall(rows[0][2]) == [("test_a", "../tests/core/test_a.py"), ("test_b", "../tests/core/test_a.py")]
    with pytest.raises(AssertionError, match="exactly one"):
        checked_by_hand_rows("# P\n| metric | paper | checked by hand in |")
