"""Reading builder inputs so that every problem names the file (and line) and the reason.

Every builder reads its text, JSON, JSONL, CSV and parquet inputs through this module. A problem
raises :class:`SourceError` (``path`` = the file, as ``FILE:LINE`` when there is a line; ``reason``),
which ``lm-eval-bias build`` prints as ``error: <file>: <reason>`` with exit status 2; no Python
traceback, and nothing is written (builders validate everything before writing, and write atomically).

What is refused, and how it is reported:

- text that is not UTF-8 (a UTF-8 byte-order mark is accepted and dropped): ``FILE:LINE: not UTF-8
  text (byte 0xe9 at byte 12 of the line) ...``;
- unreadable files (permissions, a folder where a file is expected): ``FILE: cannot read (...)``;
- invalid JSON, including ``NaN``/``Infinity`` and an object with the same key twice (JSON would
  silently keep only the last one): ``FILE:LINE: not valid JSON (...)`` / ``duplicate key ...``;
- a JSONL line that is not a JSON object, a JSON file whose top level has the wrong type, and a field
  of the wrong type (:func:`expect_str` and friends): ``... expected a JSON object, got an array``;
- CSV rows with more or fewer fields than the header, a header naming a column twice, missing
  required columns, and CSV syntax errors (e.g. NUL bytes);
- a ``.parquet`` file that is not parquet, or is truncated: ``FILE: not a readable parquet file (...)``.

Duplicate rows (:class:`KeyedRows`): two rows with the same key are an error that names both lines,
whether they conflict (``conflicting duplicate ...: line 3 has highest_race 'Black', line 7 has
'Asian'``) or are identical (``... repeats line 3``). Identical duplicates are refused rather than
dropped because a repeated row is usually a copy-paste slip whose intended edit is missing, and
because a silently deduplicated source would not be the file its checksum and row count describe.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable


class SourceError(ValueError):
    """Invalid builder input: ``path`` is the offending file or folder (``FILE:LINE`` where there is a
    line), ``reason`` what is wrong."""

    def __init__(self, path: str | os.PathLike, reason: str) -> None:
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason}")


@dataclass(frozen=True)
class Loc:
    """Where a row comes from: a line of a text file, or a row of a parquet file (1-based)."""

    path: str
    number: int | None = None
    unit: str = "line"

    def __str__(self) -> str:
        if self.number is None:
            return self.path
        return f"{self.path}:{self.number}" if self.unit == "line" else f"{self.path}: {self.unit} {self.number}"

    def ref(self, other: "Loc | None" = None) -> str:
        """How to refer to this place from an error about ``other`` ("line 3", or the full place
        when ``other`` is another file)."""
        if self.number is None:
            return self.path
        if other is not None and other.path != self.path:
            return str(self)
        return f"{self.unit} {self.number}"


def describe(value: Any) -> str:
    """JSON type name of ``value`` for error messages ("null", "a number (3)", "an array", ...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({'true' if value else 'false'})"
    if isinstance(value, (int, float)):
        return f"a number ({value!r})"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- bytes and text ---------------------------------------------------------------------------------
def read_bytes(path: str | os.PathLike) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise SourceError(path, f"cannot read ({exc.strerror or exc})") from None


def decode_utf8(data: bytes, path: str | os.PathLike) -> str:
    """``data`` (the bytes of ``path``) as text; a UTF-8 byte-order mark is dropped."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise SourceError(f"{path}:{line}", f"not UTF-8 text (byte 0x{data[exc.start]:02x} at byte {column} of the line); "
                                            "save the file as UTF-8") from None
    return text[1:] if text.startswith("\ufeff") else text


def read_text(path: str | os.PathLike) -> str:
    """The file's text (UTF-8)."""
    return decode_utf8(read_bytes(path), path)


# -- JSON and JSONL ---------------------------------------------------------------------------------
class _DuplicateKey(Exception):
    def __init__(self, key: str, identical: bool) -> None:
        self.key, self.identical = key, identical


class _BadConstant(Exception):
    pass


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise _DuplicateKey(key, obj[key] == value)
        obj[key] = value
    return obj


def _constant(name: str) -> Any:
    raise _BadConstant(name)


def _key_lines(text: str, key: str) -> list[int]:
    pattern = re.compile(re.escape(json.dumps(key, ensure_ascii=False)) + r"\s*:")
    return [text.count("\n", 0, m.start()) + 1 for m in pattern.finditer(text)]


def parse_json(text: str, path: str | os.PathLike, line: int | None = None) -> Any:
    """Parse ``text`` (a whole file, or line ``line`` of a JSONL file) strictly."""
    try:
        return json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant)
    except json.JSONDecodeError as exc:
        at = line if line is not None else exc.lineno
        raise SourceError(f"{path}:{at}", f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    except _BadConstant as exc:
        raise SourceError(Loc(str(path), line), f"not valid JSON ({exc.args[0]} is not a JSON number)") from None
    except _DuplicateKey as exc:
        kind = "twice with the same value" if exc.identical else "twice with different values"
        if line is not None:
            raise SourceError(f"{path}:{line}", f"duplicate key {exc.key!r}: one object has it {kind} "
                                                "(JSON keeps only the last)") from None
        lines = _key_lines(text, exc.key)
        seen = f" (the key is on lines {', '.join(map(str, lines))})" if lines else ""
        raise SourceError(path, f"duplicate key {exc.key!r}: one object has it {kind}, and JSON keeps only the "
                                f"last{seen}") from None
    except RecursionError:
        raise SourceError(Loc(str(path), line), "not valid JSON (nested too deeply)") from None


def read_json(path: str | os.PathLike, expect: type | tuple[type, ...] | None = dict) -> Any:
    """A JSON file's value, whose top level must be of type ``expect`` (``dict``: an object)."""
    value = parse_json(read_text(path), path)
    if expect is not None and not isinstance(value, expect):
        wanted = "an object" if expect is dict else "an array" if expect is list else str(expect)
        raise SourceError(path, f"expected {wanted} at the top level, got {describe(value)}")
    return value


def read_jsonl(path: str | os.PathLike) -> list[tuple[Loc, dict[str, Any]]]:
    """``(place, object)`` per non-blank line; every line must be a JSON object. Lines end at ``\\n``
    only (U+2028 and friends are valid inside JSON strings)."""
    rows = []
    for line_no, line in enumerate(read_text(path).split("\n"), 1):
        if not line.strip():
            continue
        value = parse_json(line, path, line_no)
        if not isinstance(value, dict):
            raise SourceError(f"{path}:{line_no}", f"expected a JSON object per line, got {describe(value)}")
        rows.append((Loc(str(path), line_no), value))
    return rows


# -- CSV ----------------------------------------------------------------------------------------------
def read_csv(path: str | os.PathLike, required: Iterable[str] = ()) -> tuple[list[str], list[tuple[Loc, dict[str, str]]]]:
    """``(header, [(place, row)])`` of a CSV file with a header row. Header names are stripped of
    surrounding spaces; every row must have as many fields as the header (blank lines are skipped);
    the place of a row is the line it starts on."""
    reader = csv.reader(io.StringIO(read_text(path), newline=""))

    def rows():
        while True:
            try:
                yield next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                raise SourceError(f"{path}:{reader.line_num}", f"not valid CSV ({exc})") from None

    it = rows()
    header = next(it, None)
    if not header:
        raise SourceError(path, "empty file: expected a header row")
    header = [h.strip() for h in header]
    twice = sorted({h for h in header if header.count(h) > 1})
    if twice:
        raise SourceError(f"{path}:1", f"the header names column(s) {twice} more than once")
    missing = [c for c in required if c not in header]
    if missing:
        raise SourceError(f"{path}:1", f"needs columns {sorted(required)}, has {header}")
    out = []
    previous_end = reader.line_num
    for fields in it:
        start, previous_end = previous_end + 1, reader.line_num
        if not fields:
            continue
        if len(fields) != len(header):
            raise SourceError(f"{path}:{start}", f"has {len(fields)} fields, the header has {len(header)}")
        out.append((Loc(str(path), start), dict(zip(header, fields))))
    return header, out


# -- parquet ------------------------------------------------------------------------------------------
def read_parquet(path: str | os.PathLike) -> list[tuple[Loc, dict[str, Any]]]:
    """``(place, row)`` per row of a parquet file (places are "row N", 1-based)."""
    import pyarrow.parquet as pq

    if not Path(path).is_file():
        raise SourceError(path, "file does not exist")
    try:
        rows = pq.read_table(path).to_pylist()
    except Exception as exc:  # noqa: BLE001 - pyarrow raises ArrowInvalid, OSError, ... for broken files
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        detail = detail.replace(f"Could not open Parquet input source '{path}': ", "")
        raise SourceError(path, f"not a readable parquet file ({detail})") from None
    return [(Loc(str(path), k, "row"), row) for k, row in enumerate(rows, 1)]


def read_table(path: str | os.PathLike) -> list[tuple[Loc, dict[str, Any]]]:
    """Rows of a ``.csv``, ``.jsonl`` or ``.parquet`` file, chosen by the extension."""
    suffix = Path(path).suffix.lower()
    if suffix == ".jsonl":
        return read_jsonl(path)
    if suffix == ".csv":
        return read_csv(path)[1]
    if suffix == ".parquet":
        return read_parquet(path)
    raise SourceError(path, "expected a .csv, .jsonl or .parquet file")


# -- types ----------------------------------------------------------------------------------------------
def expect_str(value: Any, where: Any, field: str, *, optional: bool = False, nonempty: bool = False) -> str | None:
    """``value`` if it is a string (or ``None`` when ``optional``); :class:`SourceError` otherwise."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise SourceError(where, f"{field} must be a string, got {describe(value)}")
    if nonempty and not value.strip():
        raise SourceError(where, f"{field} is empty")
    return value


def expect_dict(value: Any, where: Any, field: str) -> dict:
    if not isinstance(value, dict):
        raise SourceError(where, f"{field} must be an object, got {describe(value)}")
    return value


def expect_list(value: Any, where: Any, field: str) -> list:
    if not isinstance(value, (list, tuple)):
        raise SourceError(where, f"{field} must be an array, got {describe(value)}")
    return list(value)


def expect_str_list(value: Any, where: Any, field: str, *, nonempty: bool = False) -> list[str]:
    items = expect_list(value, where, field)
    for k, item in enumerate(items):
        expect_str(item, where, f"{field}[{k}]")
    if nonempty and not items:
        raise SourceError(where, f"{field} is empty")
    return items


def field_name(*parts: Any) -> str:
    """JSON-path-like name of a nested field: ``field_name("attrs", "race", "Crime Rate")`` is
    ``attrs["race"]["Crime Rate"]``; a ``None`` head names a top-level key: ``["Crime Rate"][0]``."""
    head, *rest = parts
    return ("" if head is None else str(head)) + "".join(f"[{json.dumps(p, ensure_ascii=False)}]" for p in rest)


# -- duplicates -----------------------------------------------------------------------------------------
class KeyedRows:
    """First occurrence of each key; :meth:`add` of a key seen before raises :class:`SourceError` at
    the second place, naming the first: identical rows "repeat" it, different rows "conflict" with it
    (the differing fields are listed). See the module docstring for why identical rows are refused."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.first: dict[Any, tuple[Loc, Any]] = {}

    def add(self, key: Any, where: Loc, content: Any) -> None:
        if key in self.first:
            raise self.error(key, where, content)
        self.first[key] = (where, content)

    def error(self, key: Any, where: Loc, content: Any) -> SourceError:
        first, before = self.first[key]
        label = f"{self.what} {key!r}"
        if before == content:
            return SourceError(where, f"duplicate {label}: repeats {first.ref(where)} (identical duplicate rows are "
                                      "not allowed; delete one)")
        if isinstance(before, dict) and isinstance(content, dict):
            fields = [k for k in dict.fromkeys([*before, *content]) if before.get(k) != content.get(k)]
            diff = "; ".join(f"{first.ref(where)} has {k} {_short(before.get(k))}, {where.ref()} has {_short(content.get(k))}"
                             for k in fields[:3])
        else:
            diff = f"{first.ref(where)} has {_short(before)}, {where.ref()} has {_short(content)}"
        return SourceError(where, f"conflicting duplicate {label}: {diff}; keep only the correct row")
