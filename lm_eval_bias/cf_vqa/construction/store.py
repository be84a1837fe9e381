"""Stage files of the construction pipeline and the readers of finished stages.

Every stage file is JSONL, one finished item per line, written with flush + fsync (:class:`AppendLog`);
a torn last line (a killed process) is dropped with a warning and its item is redone. ``--shard i/n``
(and torchrun / accelerate ranks) deal the items round-robin over their sorted keys
(:func:`lm_eval_bias.core.imagegen.shard_items`) and write ``<stem>.shard-i-of-n.jsonl``
(``.rank-r-of-w``); :func:`read_stage` reads the union of a stage's files and :func:`merge_stage`
writes it as the stage's single file.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import os
import re
from pathlib import Path
from typing import Any, Iterable

from lm_eval_bias.core import imagegen
from lm_eval_bias.core.sharding import parse_shard


log = logging.getLogger("lm_eval_bias")


class StageError(ValueError):
    """A stage cannot run or an input is invalid; one line (``file:row: reason`` where there is a row)."""


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to a temp file in the same folder, fsync, then ``os.replace``."""
    imagegen.write_bytes_atomic(text.encode("utf-8"), path)


def write_jsonl_atomic(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    write_text_atomic(path, "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows))


def csv_text(columns: tuple[str, ...], rows: list[dict[str, Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(columns), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def part_suffix(shard: str | None) -> str:
    """The file suffix of this process's part: ``.shard-i-of-n`` for ``--shard i/n``, and
    ``.rank-r-of-w`` when started by torchrun / accelerate (:func:`lm_eval_bias.core.imagegen.process_rank`);
    "" for a single unsharded process."""
    parsed, rank = parse_shard(shard), imagegen.process_rank(shard)
    suffix = "" if parsed is None else f".shard-{parsed[0]}-of-{parsed[1]}"
    if rank is not None and rank[1] > 1:
        suffix += f".rank-{rank[0]}-of-{rank[1]}"
    return suffix


def read_jsonl_tolerant(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a stage file. A torn last line (no newline, or not JSON: a process killed
    while writing) is ignored with a warning; a bad line elsewhere is an error naming the line."""
    if not path.is_file():
        return []
    lines = path.read_text(encoding="utf-8").split("\n")
    complete, tail = lines[:-1], lines[-1]
    rows = []
    for number, line in enumerate(complete, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            if number == len(complete) and not tail:
                log.warning("%s:%d: torn last line ignored (an interrupted write)", path, number)
                continue
            raise StageError(f"{path}:{number}: not a JSON object line (edit or delete the line)") from None
        if not isinstance(row, dict):
            raise StageError(f"{path}:{number}: not a JSON object line (edit or delete the line)")
        rows.append(row)
    if tail.strip():
        log.warning("%s:%d: torn last line ignored (an interrupted write)", path, len(lines))
    return rows


def _drop_torn_tail(path: Path) -> None:
    """Cut a torn last line off before appending (so the next line starts on a line of its own)."""
    if not path.is_file():
        return
    data = path.read_bytes()
    good = data if data.endswith(b"\n") or not data else data[: data.rfind(b"\n") + 1]
    lines = good.split(b"\n")
    if len(lines) >= 2 and lines[-2].strip():
        try:
            json.loads(lines[-2])
        except json.JSONDecodeError:
            good = b"\n".join(lines[:-2]) + (b"\n" if len(lines) > 2 else b"")
    if good != data:
        write_text_atomic(path, good.decode("utf-8"))


class AppendLog:
    """Append JSON lines with flush + fsync after each (``calls.jsonl`` and the stage files)."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        _drop_torn_tail(path)
        self._handle = open(path, "a", encoding="utf-8")

    def append(self, entry: dict[str, Any]) -> None:
        self._handle.write(json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> "AppendLog":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


#: stage name -> (file stem, key field)
STAGES: dict[str, tuple[str, str]] = {
    "proposals": ("proposals", "caption_id"),
    "describe": ("descriptions", "pair_id"),
    "quality": ("quality", "item_id"),
}


def stage_files(workdir: Path, stem: str) -> list[Path]:
    """The stage's merged file and its part files (``<stem>.shard-...jsonl``, ``<stem>.rank-...jsonl``),
    merged file first."""
    parts = [p for p in workdir.glob(f"{stem}.*.jsonl") if re.fullmatch(r"(\.(shard|rank)-\d+-of-\d+)+", p.name[len(stem):-6])]
    return [workdir / f"{stem}.jsonl", *sorted(parts)]


def read_stage(workdir: Path, stem: str, key: str) -> dict[str, dict[str, Any]]:
    """Finished items of a stage, from all its files: within a file a later line for a key supersedes an
    earlier one (a retry); across files an ``ok`` item wins over a ``failed`` one, and two different
    ``ok`` items for one key are an error (two shards produced it differently)."""
    items: dict[str, dict[str, Any]] = {}
    origin: dict[str, Path] = {}
    for path in stage_files(workdir, stem):
        latest: dict[str, dict[str, Any]] = {}
        for row in read_jsonl_tolerant(path):
            if key not in row:
                raise StageError(f"{path}: a line has no {key!r}")
            latest[str(row[key])] = row
        for k, row in latest.items():
            if k not in items:
                items[k], origin[k] = row, path
                continue
            old = items[k]
            if old == row:
                continue
            if old.get("status") == "ok" and row.get("status") == "ok":
                raise StageError(f"{key} {k!r} differs between {origin[k].name} and {path.name}; delete one of them")
            if row.get("status") == "ok":
                items[k], origin[k] = row, path
    return items


def merge_stage(workdir: Path, stem: str, key: str) -> tuple[Path, int]:
    """Write the union of a stage's files as ``<stem>.jsonl`` (sorted by key), then delete the shard files."""
    items = read_stage(workdir, stem, key)
    target = workdir / f"{stem}.jsonl"
    write_jsonl_atomic(target, [items[k] for k in sorted(items)])
    for path in stage_files(workdir, stem)[1:]:
        path.unlink()
    return target, len(items)


def shard_items(items: list[dict[str, Any]], key: str, shard: str | None) -> list[dict[str, Any]]:
    """This process's items in key order: :func:`lm_eval_bias.core.imagegen.shard_items` (round-robin over
    the sorted keys for ``--shard i/n``, then over torchrun / accelerate ranks), the same split on every
    machine."""
    mine = imagegen.shard_items(items, shard, key=lambda r: str(r[key]))
    return sorted(mine, key=lambda r: str(r[key]))


def todo(items: list[dict[str, Any]], key: str, done: dict[str, dict[str, Any]], retry_failed: bool) -> list[dict[str, Any]]:
    return [i for i in items if str(i[key]) not in done or (retry_failed and done[str(i[key])].get("status") != "ok")]


def slug(text: str, limit: int = 40) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:limit].strip("-") or "x"


def described_pairs(workdir: Path) -> dict[str, dict[str, Any]]:
    stem, key = STAGES["describe"]
    return {k: v for k, v in read_stage(workdir, stem, key).items() if v.get("status") == "ok"}


def validated_pairs(workdir: Path) -> dict[str, dict[str, Any]] | None:
    """``ratings.jsonl`` by pair id, or None before any import."""
    path = workdir / "ratings.jsonl"
    return {r["pair_id"]: r for r in read_jsonl_tolerant(path)} if path.is_file() else None


def images_stem(image_set: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}", image_set):
        raise StageError(f"--image-set must be letters, digits, '_' or '-', got {image_set!r}")
    return f"images-{image_set}"


def generated_pairs(workdir: Path, image_set: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in read_stage(workdir, images_stem(image_set), "pair_id").items() if v.get("status") == "ok"}


def image_sets(workdir: Path) -> list[str]:
    names = {p.name.split(".")[0][len("images-"):] for p in workdir.glob("images-*.jsonl")}
    return sorted(names)
