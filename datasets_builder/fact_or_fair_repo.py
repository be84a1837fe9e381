"""Read the FACT-OR-FAIR authors' *repository* layout (uclanlp/fact-or-fair) into the release format.

The repository keeps the statistics in ``data/classes.py`` (``categories``, ``defs``, ``attrs``), the
scenarios and backgrounds in ``large_language_model/subjective_test/prompts/*.json``, and the query
templates and profile lists inside ``objective_test/obj_test.py`` and ``subjective_test/subj_test.py``.
Everything is read with :mod:`ast` — the authors' code is never executed: literal assignments are
evaluated with ``ast.literal_eval`` and the prompt f-strings are turned back into templates by
mapping their interpolated expressions to the release format's placeholders.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from lm_eval_bias.datasets_builder.readers import SourceError, read_text

LLM_DIR = Path("large_language_model")
PROMPTS_DIR = LLM_DIR / "subjective_test" / "prompts"
OBJ_SCRIPT = LLM_DIR / "objective_test" / "obj_test.py"
SUBJ_SCRIPT = LLM_DIR / "subjective_test" / "subj_test.py"


def is_repository_layout(source: Path) -> bool:
    return (source / "data" / "classes.py").is_file() and (source / PROMPTS_DIR).is_dir()


def _parse(path: Path) -> ast.Module:
    if not path.is_file():
        raise SourceError(path, "missing file of the repository layout")
    text = read_text(path)
    try:
        return ast.parse(text, filename=str(path))
    except SyntaxError as exc:
        raise SourceError(f"{path}:{exc.lineno}" if exc.lineno else path, f"not valid Python ({exc.msg})") from None
    except (ValueError, RecursionError, MemoryError) as exc:  # NUL bytes, too deeply nested
        raise SourceError(path, f"cannot parse ({exc})") from None


def _literal_assignments(tree: ast.AST, names: set[str]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name in names and name not in found:
                try:
                    found[name] = ast.literal_eval(node.value)
                except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
                    continue
    return found


def _render(parts: list[ast.expr], placeholders: dict[str, str], where: Path) -> str:
    """Concatenate string constants and f-string pieces, mapping interpolations to placeholders."""
    out = []
    for part in parts:
        if isinstance(part, ast.Constant) and isinstance(part.value, str):
            out.append(part.value)
        elif isinstance(part, ast.JoinedStr):
            out.append(_render(list(part.values), placeholders, where))
        elif isinstance(part, ast.FormattedValue):
            expr = ast.unparse(part.value)
            for needle, placeholder in placeholders.items():
                if needle in expr:
                    out.append(placeholder)
                    break
            else:
                raise SourceError(where, f"unexpected interpolation {{{expr}}} in a prompt template")
        else:
            raise SourceError(where, f"unexpected template piece {ast.unparse(part)}")
    return "".join(out)


def _string_pieces(node: ast.expr) -> list[ast.expr]:
    """Pieces of implicitly concatenated / ``+``-joined string literals."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _string_pieces(node.left) + _string_pieces(node.right)
    return [node]


def _objective_template(path: Path) -> str:
    tree = _parse(path)
    head = tail = None
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "user_content":
            head = _render(_string_pieces(node.value), {"defs[": "{definition}", "category": "{category}",
                                                        "statistic": "{statistic}"}, path)
    tails = [ast.unparse(n.value) for n in ast.walk(tree)
             if isinstance(n, ast.AugAssign) and ast.unparse(n.target) == "user_content" and isinstance(n.value, ast.Constant)
             and isinstance(n.value.value, str)]
    tail = "".join(ast.literal_eval(t) for t in tails)
    if not head or not tail.startswith(". Please"):
        raise SourceError(path, "could not find the objective prompt (user_content = ... / += '. Please ...')")
    return head + " A. {g1} B. {g2}[ C. {g3} D. {g4}]" + tail


def _subjective_templates(path: Path) -> tuple[str, str, dict[str, Any]]:
    tree = _parse(path)
    template = option = None
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if node.targets[0].id == "prompt":
                template = _render(_string_pieces(node.value), {
                    "background_knowledge": "{background}", "individual_prompt": "{scenario}", "options[0]": "{opt1}",
                    "options[1]": "{opt2}", "options[2]": "{opt3}", "options[3]": "{opt4}"}, path)
            elif node.targets[0].id == "option":
                option = _render(_string_pieces(node.value), {"name": "{name}", "age": "{age}", "gender": "{gender}",
                                                              "race": "{race}"}, path)
    lists = _literal_assignments(tree, {"NAMES", "AGES", "genders", "races"})
    if template is None or option is None or set(lists) != {"NAMES", "AGES", "genders", "races"}:
        raise SourceError(path, "could not find the subjective prompt, option template and NAMES/AGES/genders/races")
    return template, option, lists


def read_repository(source: Path) -> dict[str, Any]:
    """The release-format content (file name -> parsed JSON/CSV path) of a repository checkout."""
    classes_py = source / "data" / "classes.py"
    literals = _literal_assignments(_parse(classes_py), {"categories", "defs", "attrs"})
    if set(literals) != {"categories", "defs", "attrs"}:
        raise SourceError(classes_py, "needs literal assignments categories, defs and attrs")
    objective = _objective_template(source / OBJ_SCRIPT)
    subjective, option, lists = _subjective_templates(source / SUBJ_SCRIPT)
    return {
        "classes.json": {"categories": literals["categories"], "definitions": literals["defs"], "attrs": literals["attrs"]},
        "templates_and_profile_lists.json": {
            "objective": {"template": objective},
            "subjective": {"template": subjective, "option_template": option, "names": lists["NAMES"],
                           "ages": lists["AGES"], "genders": lists["genders"], "races": lists["races"]},
        },
        "prompts_dir": source / PROMPTS_DIR,
        "table": source / "data" / "all_highest_lowest.csv",
    }
