"""``lm-eval-bias leaderboard build --from SOURCE --output DIR``: a leaderboard from submissions.

SOURCE is a folder or a Hub dataset id (downloaded with ``HfApi().snapshot_download``, at ``--revision``)
holding ``submissions/<id>/`` packages (:mod:`lm_eval_bias.leaderboard.submit`) and the leaderboard's
pins, ``leaderboard.json``::

    {"datasets": {"focus": {"manifest_sha256": "...", "revision": "<commit>", "hub_id": "org/focus"}},
     "settings": {"answer_extraction": "strict", "method": "generate"},
     "tasks": {"focus_2afc_income": {"docs": 4320}}}

(``--pins FILE`` reads them from elsewhere; ``--pin NAME=LOCATION`` pins a dataset from a folder or a
Hub id ``org/name[@revision]`` directly; ``settings`` defaults to strict extraction of generated
answers; ``tasks`` is optional.) Every submission is verified again from its files
(:func:`verify_submission`): packaged files unchanged, the run's checks
(:func:`lm_eval_bias.leaderboard.verify.check_run`) with its recorded resampling settings, the
provenance matching the files, every dataset matching the leaderboard's pin (manifest, and revision
where both name one), the leaderboard's settings, and the same docs as the other submissions of a task
(the most common doc set, or the pinned count). Rejected submissions are listed with their reason.

The accepted ones go through the report (:func:`lm_eval_bias.report.build_report`): per headline key
the models ranked with ties decided by the paired cluster bootstrap, Holm-adjusted
(:mod:`lm_eval_bias.report.leaderboard`), cross-model Spearman (REFLECT Table 5), the bias cards; DIR
gets ``index.html``, ``leaderboard.csv`` / ``.json`` / ``.md``, ``submissions.json`` and
``submissions.md`` (accepted and rejected, with reasons), ``leaderboard_pins.json`` and a
``README.md`` whose front matter makes DIR a static Hugging Face Space (``sdk: static``).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lm_eval_bias.leaderboard.verify import RunCheck, SubmissionError, check_run, sha256_file

DEFAULT_SETTINGS = {"answer_extraction": "strict", "method": "generate"}


@dataclass
class Verdict:
    """One submission: accepted (``check``) or rejected (``reason``)."""

    id: str
    folder: Path
    model: str | None = None
    reason: str | None = None
    check: RunCheck | None = None
    record: dict[str, Any] | None = None


def read_pins(path: str | os.PathLike) -> dict[str, Any]:
    try:
        pins = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SubmissionError(f"{path}: not a readable leaderboard.json ({exc})") from None
    if not isinstance(pins, dict) or not isinstance(pins.get("datasets", {}), dict):
        raise SubmissionError(f"{path}: expected {{\"datasets\": {{name: {{manifest_sha256, revision}}}}, ...}}")
    return pins


def pin_dataset(spec: str) -> tuple[str, dict[str, Any]]:
    """``NAME=LOCATION`` (a folder, or a Hub id ``org/name[@revision]``) -> (name, identity)."""
    from lm_eval_bias.core import data

    name, _, location = spec.partition("=")
    if not name or not location:
        raise SubmissionError(f"--pin {spec!r}: expected NAME=FOLDER or NAME=org/name[@revision]")
    if not Path(location).expanduser().is_dir():
        repo_id, revision = data.split_revision(location)
        location = data.pinned_hub_location(repo_id, revision, name)
    try:
        identity = data.dataset_identity(str(Path(location).expanduser()) if Path(location).expanduser().is_dir() else location)
    except data.DataSourceError as exc:
        raise SubmissionError(f"--pin {spec}: {exc}") from None
    return name, {k: v for k, v in identity.items() if k != "folder"}


def verify_submission(folder: Path, pins: dict[str, Any]) -> Verdict:
    """Verify one ``submissions/<id>/`` package against the leaderboard's ``pins``."""
    verdict = Verdict(folder.name, folder)
    try:
        record = json.loads((folder / "submission.json").read_text(encoding="utf-8"))
        if not isinstance(record, dict) or not isinstance(record.get("files"), dict):
            raise ValueError("not a submission.json")
    except (OSError, ValueError) as exc:
        verdict.reason = f"no readable submission.json ({exc})"
        return verdict
    verdict.record, verdict.model = record, str(record.get("model"))
    try:
        _verify(folder, record, pins, verdict)
    except SubmissionError as exc:
        verdict.reason = str(exc)
    return verdict


def _verify(folder: Path, record: dict[str, Any], pins: dict[str, Any], verdict: Verdict) -> None:
    from lm_eval_bias.core import data

    listed = record["files"]
    present = {p.relative_to(folder).as_posix() for p in (folder / "run").rglob("*") if p.is_file()}
    for path in sorted(set(listed) | present):
        if path not in listed:
            raise SubmissionError(f"{path}: not listed in submission.json (added after packaging)")
        if path not in present:
            raise SubmissionError(f"{path}: listed in submission.json but missing (removed after packaging)")
        if sha256_file(folder / path) != listed[path]:
            raise SubmissionError(f"{path}: changed after packaging (sha256 differs from submission.json)")
    check = check_run(folder / "run", resampling=record.get("resampling") or {})
    if check.model != record.get("model"):
        raise SubmissionError(f"the run is of {check.model!r}, submission.json says {record.get('model')!r}")
    claimed = record.get("tasks") or {}
    if set(claimed) != set(check.tasks):
        raise SubmissionError(f"submission.json lists tasks {sorted(claimed)}, the run holds {sorted(check.tasks)}")
    wanted = {**DEFAULT_SETTINGS, **(pins.get("settings") or {})}
    if check.settings != wanted:
        differs = ", ".join(f"{k} {check.settings[k]} (the leaderboard's: {wanted[k]})"
                            for k in wanted if check.settings.get(k) != wanted[k])
        raise SubmissionError(f"other settings than the leaderboard's: {differs}")
    for name, task in sorted(check.tasks.items()):
        claim = claimed[name]
        if (claim.get("docs"), claim.get("doc_ids_sha256")) != (task.docs, task.doc_ids_sha256):
            raise SubmissionError(f"{name}: submission.json's doc count / doc ids do not match the samples")
        expected = ((pins.get("tasks") or {}).get(name) or {}).get("docs")
        if expected is not None and expected != task.docs:
            raise SubmissionError(f"{name}: {task.docs} docs, the leaderboard's {name} has {expected}")
        for dataset, identity in sorted((claim.get("datasets") or {}).items()):
            pin = (pins.get("datasets") or {}).get(dataset)
            if pin is None:
                raise SubmissionError(f"{name}: dataset {dataset} is not pinned by this leaderboard")
            if pin.get("revision") and identity.get("revision") and pin["revision"] != identity["revision"]:
                raise SubmissionError(f"{name}: dataset {dataset} at revision {identity['revision']}, the leaderboard "
                                      f"pins {pin['revision']}")
            if identity.get("manifest_sha256") != pin.get("manifest_sha256"):
                raise SubmissionError(f"{name}: dataset {dataset} has other files (manifest "
                                      f"{str(identity.get('manifest_sha256'))[:12]}) than the leaderboard's "
                                      f"({str(pin.get('manifest_sha256'))[:12]})")
        revisions = {data.split_revision(location)[1] for location in task.locations}
        first = next(iter(sorted((claim.get("datasets") or {}).items())), (None, {}))[1]
        if task.locations and revisions != {first.get("revision")}:
            raise SubmissionError(f"{name}: the docs name data revision(s) {sorted(map(str, revisions))}, "
                                  f"submission.json {first.get('revision')}")
    verdict.check = check


def _same_docs(verdicts: list[Verdict], pins: dict[str, Any]) -> None:
    """Reject accepted submissions whose doc set of a task differs from the most common one (unless the
    leaderboard pins the task's doc ids)."""
    by_task: dict[str, list[tuple[Verdict, str]]] = collections.defaultdict(list)
    for v in verdicts:
        if v.check is not None:
            for name, task in v.check.tasks.items():
                by_task[name].append((v, task.doc_ids_sha256))
    for name, entries in by_task.items():
        pinned = ((pins.get("tasks") or {}).get(name) or {}).get("doc_ids_sha256")
        reference = pinned or collections.Counter(d for _, d in entries).most_common(1)[0][0]
        for verdict, digest in entries:
            if digest != reference and verdict.check is not None:
                verdict.reason = (f"{name}: other docs than the leaderboard's ({'pinned' if pinned else 'most common'} "
                                  f"doc set {reference[:12]}, this one {digest[:12]})")
                verdict.check = None


def _source_folder(source: str, revision: str | None, tmp: Path) -> Path:
    path = Path(source).expanduser()
    if path.is_dir():
        return path
    from lm_eval_bias.leaderboard.submit import is_local_target

    if is_local_target(source):
        raise SubmissionError(f"--from {source}: no such folder")
    from huggingface_hub import HfApi

    try:
        return Path(HfApi().snapshot_download(source, repo_type="dataset", revision=revision,
                                              local_dir=str(tmp / "source")))
    except Exception as exc:  # noqa: BLE001 - one line: the repository and the cause
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise SubmissionError(f"--from {source}: could not download the Hub dataset ({type(exc).__name__}: {first})") from None


def _markdown_cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _space_readme(title: str, accepted: int) -> str:
    return ("---\n"
            f"title: {json.dumps(title)}\n"
            "emoji: ⚖️\n"
            "colorFrom: gray\n"
            "colorTo: blue\n"
            "sdk: static\n"
            "app_file: index.html\n"
            "pinned: false\n"
            "tags:\n  - lm-eval-bias\n  - leaderboard\n"
            "---\n\n"
            f"# {title}\n\n"
            f"{accepted} verified submission(s). Built by `lm-eval-bias leaderboard build`: every result was recomputed "
            "from its logged samples, on the pinned datasets (`leaderboard_pins.json`). Ranks: `leaderboard.md`, "
            "`leaderboard.csv`, `leaderboard.json`; submissions and rejections with reasons: `submissions.md`.\n")


def build(source: str, output: str | os.PathLike, pins: dict[str, Any], revision: str | None = None,
          title: str = "lm-eval-bias leaderboard") -> list[Verdict]:
    """Verify every submission under ``source`` and write the leaderboard into ``output``."""
    from lm_eval_bias.core.safe_io import atomic_write_text, check_output_folder
    from lm_eval_bias.report import build_report

    check_output_folder(output)
    with tempfile.TemporaryDirectory(prefix="lm-eval-bias-leaderboard-") as tmp:
        folder = _source_folder(source, revision, Path(tmp))
        if not pins.get("datasets") and (folder / "leaderboard.json").is_file():
            pins = {**read_pins(folder / "leaderboard.json"), **{k: v for k, v in pins.items() if v}}
        if not pins.get("datasets"):
            raise SubmissionError("no pinned datasets: put leaderboard.json in SOURCE, or give --pins FILE or "
                                  "--pin NAME=LOCATION")
        packages = sorted(p.parent for p in (folder / "submissions").glob("*/submission.json"))
        if not packages:
            raise SubmissionError(f"--from {source}: no submissions/<id>/submission.json")
        verdicts = [verify_submission(p, pins) for p in packages]
        _same_docs(verdicts, pins)
        labels = collections.Counter(v.check.model for v in verdicts if v.check is not None)
        for verdict in verdicts:  # one entry per model: a second submission of a model is not ranked twice
            if verdict.check is not None and labels[verdict.check.model] > 1:
                labels[verdict.check.model] -= 1
                verdict.reason, verdict.check = "a later submission of the same model is on the leaderboard", None
        accepted = [v for v in verdicts if v.check is not None]
        if not accepted:
            raise SubmissionError("no submission passed verification: " +
                                  "; ".join(f"{v.id}: {v.reason}" for v in verdicts))
        build_report([v.folder / "run" for v in accepted], output)
        out = Path(output)
        listing = [{"id": v.id, "model": v.model, "accepted": v.check is not None, "reason": v.reason,
                    "tasks": sorted(v.check.tasks) if v.check else sorted(((v.record or {}).get("tasks") or {})),
                    "settings": v.check.settings if v.check else None} for v in verdicts]
        atomic_write_text(out / "submissions.json", json.dumps(listing, indent=2))
        rows = ["| submission | model | status |", "|---|---|---|"]
        rows += [f"| {_markdown_cell(e['id'])} | {_markdown_cell(e['model'])} | "
                 f"{'accepted' if e['accepted'] else 'rejected: ' + _markdown_cell(e['reason'])} |" for e in listing]
        atomic_write_text(out / "submissions.md", "# Submissions\n\n" + "\n".join(rows) + "\n")
        atomic_write_text(out / "leaderboard_pins.json", json.dumps(pins, indent=2, sort_keys=True))
        atomic_write_text(out / "README.md", _space_readme(title, len(accepted)))
    return verdicts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lm-eval-bias leaderboard",
                                     description="Leaderboards of verified lm-eval-bias submissions.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    make = commands.add_parser("build", help="verify every submission and write the leaderboard (a static Hub Space)",
                               description="Verify every submission under SOURCE (a folder or a Hub dataset id) "
                                           "against the pinned datasets and settings, and write the leaderboard "
                                           "(HTML, CSV, JSON, Markdown) as a static Hub Space. docs/leaderboard.md")
    make.add_argument("--from", dest="source", required=True, metavar="SOURCE",
                      help="folder or Hub dataset id holding submissions/<id>/ (and leaderboard.json)")
    make.add_argument("--output", required=True, metavar="DIR", help="leaderboard folder (index.html, leaderboard.*, README.md)")
    make.add_argument("--pins", metavar="FILE", help="leaderboard.json with the pinned datasets (default: SOURCE's)")
    make.add_argument("--pin", action="append", default=[], metavar="NAME=LOCATION",
                      help="pin a dataset from a folder or a Hub id org/name[@revision] (repeatable)")
    make.add_argument("--revision", help="revision of a Hub SOURCE (default: its main branch)")
    make.add_argument("--title", default="lm-eval-bias leaderboard", help="the Space's title")
    args = parser.parse_args(argv)
    try:
        pins: dict[str, Any] = read_pins(args.pins) if args.pins else {}
        for spec in args.pin:
            name, identity = pin_dataset(spec)
            pins.setdefault("datasets", {})[name] = identity
        verdicts = build(args.source, args.output, pins, args.revision, args.title)
    except SubmissionError as exc:
        print(f"error: leaderboard build: {exc}", file=sys.stderr)
        return 2
    except (OSError, ValueError) as exc:  # safe_io's InputError (an output that is a file) and I/O failures
        print(f"error: leaderboard build: {exc}", file=sys.stderr)
        return 2
    for verdict in verdicts:
        if verdict.check is None:
            print(f"rejected {verdict.id}: {verdict.reason}", file=sys.stderr)
    n = sum(v.check is not None for v in verdicts)
    print(f"wrote {Path(args.output) / 'index.html'} ({n} of {len(verdicts)} submission(s) accepted)")
    return 0
