"""The package's house rules (docs/index.md, "Repository layout"): one folder per benchmark, a core that
knows no benchmark, no import cycles, and the old import paths as deprecated aliases of the new modules."""

from __future__ import annotations

import ast
import importlib
import sys
import warnings
from pathlib import Path

import pytest

import lm_eval_bias

PACKAGE = Path(lm_eval_bias.__file__).resolve().parent
BENCHMARKS = ("reflect", "fact_or_fair", "cf_vqa", "vignette")
#: what core/ may not import: every benchmark and everything built on top of the benchmarks
ABOVE_CORE = BENCHMARKS + ("report", "cli", "samples", "analysis", "models", "tasks", "stats", "leaderboard",
                           "demo", "guard", "datasets_builder")
ALIAS_MARKER = "from lm_eval_bias._moved import alias"


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ["lm_eval_bias", *path.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = _modules()
ALIASES = {name: path for name, path in MODULES.items() if ALIAS_MARKER in path.read_text(encoding="utf-8")}


def _imports(path: Path) -> set[str]:
    """Every lm_eval_bias module ``path`` imports, at module level or inside a function."""
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("lm_eval_bias"):
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                targets.add(full if full in MODULES else node.module)
        elif isinstance(node, ast.Import):
            targets.update(a.name for a in node.names if a.name.startswith("lm_eval_bias"))
    return {t for t in targets if t in MODULES and t != "lm_eval_bias"}


GRAPH = {name: _imports(path) - {name} for name, path in MODULES.items() if name not in ALIASES}


def _area(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_the_graph_is_read_from_real_imports():
    # the checks below would pass vacuously on an empty graph
    assert "lm_eval_bias.core.bootstrap" in GRAPH["lm_eval_bias.reflect.twoafc"]
    assert "lm_eval_bias.vignette.schema" in GRAPH["lm_eval_bias.vignette.tasks"]
    assert len(ALIASES) >= 40


def test_no_benchmark_imports_another():
    crossing = [(m, t) for m, targets in GRAPH.items() for t in targets
                if _area(m) in BENCHMARKS and _area(t) in BENCHMARKS and _area(m) != _area(t)]
    assert crossing == []


def test_core_knows_no_benchmark():
    upward = [(m, t) for m, targets in GRAPH.items() if _area(m) == "core"
              for t in targets if _area(t) in ABOVE_CORE]
    assert upward == []


def test_no_import_cycles():
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    cycles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(GRAPH.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = 2

    for module in sorted(GRAPH):
        if module not in state:
            visit(module, [module])
    assert cycles == []


def test_the_cycle_check_finds_a_planted_cycle(monkeypatch):
    planted = {"a": {"b"}, "b": {"c"}, "c": {"a"}}
    monkeypatch.setattr(sys.modules[__name__], "GRAPH", planted)
    with pytest.raises(AssertionError):
        test_no_import_cycles()


@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_each_benchmark_folder_opens_with_its_map(benchmark):
    doc = importlib.import_module(f"lm_eval_bias.{benchmark}").__doc__ or ""
    assert ".txt" in doc.splitlines()[0]  # the paper
    assert "docs/paper-map.md" in doc
    for module in ("tasks.py", "report.py", "synthetic.py", f"task_yamls/{benchmark}/"):
        assert module in doc, module
    children = {name: MODULES[name] for name in MODULES
                if name.startswith(f"lm_eval_bias.{benchmark}.") and name.count(".") == 2 and name not in ALIASES}
    missing = [n for n, path in children.items()
               if (f"{n.rsplit('.', 1)[1]}/" if path.name == "__init__.py" else f"{n.rsplit('.', 1)[1]}.py") not in doc]
    assert missing == [], f"modules of {benchmark}/ the map does not mention: {missing}"


@pytest.mark.parametrize("old", sorted(ALIASES))
def test_old_import_paths_warn_and_are_the_new_module(old):
    source = ALIASES[old].read_text(encoding="utf-8")
    new = source.split('alias(__name__, "')[1].split('"')[0]
    saved = sys.modules.pop(old, None)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            module = importlib.import_module(old)
        assert module is importlib.import_module(new)
        assert any(issubclass(w.category, DeprecationWarning) and new in str(w.message) for w in caught)
    finally:
        if saved is not None:
            sys.modules[old] = saved
