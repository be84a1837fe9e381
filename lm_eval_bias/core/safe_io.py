"""Reading users' files and writing the commands' outputs, with the rules every sub-command states.

Reading (:func:`read_text_file`, :func:`read_jsonl_objects`):

- a file that does not exist, is a folder or cannot be read: :class:`InputError` naming it;
- text must be UTF-8; a UTF-8 byte-order mark is accepted and dropped; UTF-16/32 (recognised by their
  byte-order marks) and other bytes that are not UTF-8 are refused, naming the byte offset and the fix
  (save the file as UTF-8);
- JSONL: every non-blank line one JSON object; ``null``, a list, a number or text that is not JSON
  is an error naming ``FILE:LINE``, except a last line without its newline that does not parse, which
  is a *truncated* line (a run killed while writing): with ``allow_truncated_last`` it is dropped and
  reported (:attr:`JsonlRead.truncated`), else an error.

Writing (:func:`atomic_write_text`, :func:`staged_folder`): nothing half-written is ever left. A
file is written to a temporary sibling and renamed into place (``os.replace``); a folder of outputs
is written into a temporary sibling folder that only replaces the target when complete (a target
holding other files is merged file by file, each rename atomic). A target that is an existing file
where a folder is expected (or the reverse) is an :class:`InputError` before anything is written.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

__all__ = ["InputError", "JsonlRead", "atomic_write_text", "check_output_folder", "read_jsonl_objects",
           "read_text_file", "staged_folder"]

_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"), (b"\xff\xfe", "UTF-16"),
         (b"\xfe\xff", "UTF-16"))


class InputError(ValueError):
    """A user's input or output path cannot be used: the message is ``<what>: <why>`` (with the fix)."""


def read_text_file(path: str | os.PathLike, what: str = "file") -> str:
    """The UTF-8 text of ``path`` (a UTF-8 byte-order mark dropped); :class:`InputError` otherwise."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: {what} not found")
    if path.is_dir():
        raise InputError(f"{path}: {what} is a folder, expected a file")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read {what} ({exc.strerror or exc})") from None
    for bom, name in _BOMS:
        if data.startswith(bom):
            raise InputError(f"{path}: {what} is {name} text; save it as UTF-8")
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: {what} is not UTF-8 (byte {exc.start}: {data[exc.start:exc.start + 1]!r}); "
                         "save it as UTF-8") from None


@dataclass
class JsonlRead:
    """Objects of a JSONL file, each with its line number; ``truncated``: a last line dropped."""

    rows: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    truncated: int | None = None  # line number of the dropped, truncated last line


def read_jsonl_objects(path: str | os.PathLike, what: str = "JSONL file", allow_truncated_last: bool = False,
                       text: str | None = None) -> JsonlRead:
    """Every non-blank line of ``path`` as a JSON object (see the module docstring for the rules)."""
    text = read_text_file(path, what) if text is None else text
    out = JsonlRead()
    lines = text.split("\n")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError as exc:
            last = number == len(lines)  # no newline after it
            if last and allow_truncated_last:
                out.truncated = number
                break
            cut = " (truncated: the file ends inside it)" if last else ""
            raise InputError(f"{path}:{number}: not JSON{cut} ({exc.msg} at column {exc.colno})") from None
        if not isinstance(value, dict):
            raise InputError(f"{path}:{number}: expected a JSON object, got {_kind(value)}")
        out.rows.append((number, value))
    return out


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list"}.get(
        type(value), type(value).__name__)


def check_output_folder(path: str | os.PathLike, what: str = "--output") -> Path:
    """``path`` as an output folder: :class:`InputError` when it is an existing file (or under one)."""
    path = Path(path)
    for part in (path, *path.parents):
        if part.exists() and not part.is_dir():
            raise InputError(f"{what}: {part} is a file, expected a folder (choose another path)")
    return path


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary sibling and ``os.replace``: readers see the old
    file or the new one, never a part."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{path}: is a folder, expected a file path")
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            out.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


@contextlib.contextmanager
def staged_folder(target: str | os.PathLike, replace: bool = False) -> Iterator[Path]:
    """A temporary sibling folder to write ``target``'s outputs into. On success its content is moved
    into ``target``: the whole folder renamed when ``target`` does not exist (or ``replace``: the old
    folder is then swapped out and removed), else file by file (each ``os.replace`` atomic), keeping
    ``target``'s other files. On any error the temporary folder is removed and ``target`` is untouched."""
    target = check_output_folder(target)
    target.absolute().parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".partial", dir=target.absolute().parent))
    try:
        yield stage
        if not target.exists():
            os.replace(stage, target)
        elif replace:
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.absolute().parent))
            os.replace(target, old / "x")
            os.replace(stage, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            for file in sorted(p for p in stage.rglob("*") if p.is_file()):
                dest = target / file.relative_to(stage)
                if dest.is_dir():
                    raise InputError(f"{dest}: is a folder, cannot write a file there")
                dest.parent.mkdir(parents=True, exist_ok=True)
                os.replace(file, dest)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
