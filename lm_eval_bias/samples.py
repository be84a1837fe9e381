"""Read lm-eval ``--log_samples`` output back into the records the statistics work on.

Every logged sample carries its doc, its filtered response(s) and, under each headline key, the compact
record the task aggregated (:class:`lm_eval_bias.core.aggregation.HeadlineFamily`); the full record is
rebuilt from the doc and response with the task's own record builder (and checked against the compact
one), so everything the paper reports — the full 10x10 win-rate matrix, LOTO sign stability,
per-occupation salary gaps, answer distributions — is recomputed from the samples files alone, with the
same library functions the tasks use (:mod:`lm_eval_bias.analysis` is the entry point)::

    from lm_eval_bias import samples
    records = samples.load_records("results/", "focus_2afc_income")
    summary = samples.summarize("focus_2afc_income", records)
    summary.win_matrix, summary.loto

One output folder may hold several runs (lm-eval writes ``<output_path>/<model>/samples_<task>_<stamp>.jsonl``
next to ``results_<stamp>.json`` for every run). :func:`load_records` reads one run — or the shards of
one sharded run, which merge — and never silently concatenates separate runs: see :func:`choose_runs`.
"""

from __future__ import annotations

import glob
import json
import os
import re
import sys
import warnings
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable, NamedTuple

#: task name prefix -> task family
_FAMILIES: tuple[tuple[str, str], ...] = (
    ("focus_2afc_", "2afc"), ("focus_mcq_", "mcq"), ("focus_salary", "salary"),
    ("fact_or_fair_", "fact_or_fair"), ("cf_vqa", "cf_vqa"), ("vignette_", "vignette"),
)


def task_family(task: str) -> str:
    for prefix, family in _FAMILIES:
        if task.startswith(prefix):
            return family
    raise ValueError(f"{task!r} is not a task of this plugin (focus_*, fact_or_fair_*, cf_vqa*, vignette_*)")


# -- which samples files make one run --------------------------------------------------------------------
#: lm-eval's run stamp: ``datetime.now().isoformat().replace(":", "-")``
_STAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?")
#: answer-extraction mode of a record that does not say
DEFAULT_EXTRACTION = "strict"
#: scoring method of a record that does not say (records of the ``*_logprob`` tasks say "logprob")
DEFAULT_METHOD = "generate"
#: record fields naming a prompt setting that differs from the paper's (REFLECT 2AFC framing, MCQ
#: response format): records that differ in one are never merged into one result
SETTING_FIELDS: tuple[str, ...] = ("framing", "response_format", "salary_bounds")


def is_logprob_task(task: str) -> bool:
    """Whether ``task`` is scored by letter probabilities (``focus_*_logprob``, beyond the papers)."""
    return task.startswith("focus_") and task.endswith("_logprob")


class RunSelectionWarning(UserWarning):
    """Several runs of a task were found and one was chosen (the others are named)."""


class SampleFileWarning(UserWarning):
    """A samples file was usable but not clean: duplicated lines dropped, a truncated last line ignored."""


@dataclass(frozen=True)
class SampleRun:
    """One lm-eval run of one task: its ``samples_<task>_<stamp>.jsonl`` and the results JSON written
    with it (``results_<stamp>.json`` beside it), which says the model and the shard."""

    stamp: str
    sample_file: Path | None
    results_file: Path | None = None
    model: str | None = None  # model label (:func:`model_label`); None without a results file
    shard: tuple[int, int] | None = None  # (i, n) of ``--metadata '{"shard": "i/n"}'``
    settings: str = ""  # what the shards of one sharded run share (backend, model, prompts, generation)
    seeds: str = ""  # the run's random seeds (lm-eval's --seed, a model_args/gen_kwargs seed), JSON
    sampling: bool = False  # whether decoding samples (do_sample true or temperature > 0)

    @property
    def when(self) -> datetime | None:
        """The run's start, parsed from its stamp (None: not an lm-eval stamp, cannot be ordered)."""
        if not _STAMP.fullmatch(self.stamp):
            return None
        day, _, time = self.stamp.partition("T")
        return datetime.fromisoformat(f"{day}T{time[:8].replace('-', ':')}{time[8:]}")

    def describe(self) -> str:
        what = [self.model or "no results JSON beside it"]
        if self.shard:
            what.append(f"shard {self.shard[0]}/{self.shard[1]}")
        return f"{self.stamp} [{', '.join(what)}] {self.sample_file or self.results_file}"


def model_label(results: dict[str, Any]) -> str:
    """The model of a results JSON: ``pretrained=`` (local / Hub models) or ``model=`` (API models) of
    its model_args, else the backend name with its model_args, credentials shown as ``<redacted>``
    (lm-eval's ``model_name`` is a random id for models without either). Constrained decoding
    (``*-guided`` backends) is marked ``[guided]`` and lenient answer extraction ``[lenient]``, so
    neither is ever taken for (or merged with) the plain, strictly parsed model; runs of letter tasks
    scored by probability (``focus_*_logprob``) are marked ``[logprob]``."""
    config = results.get("config") or {}
    model = str(config.get("model") or "model")
    args = _model_args(config)
    marks = " [guided]" if model.endswith("-guided") else ""
    if any((c or {}).get("metadata", {}).get("answer_extraction") == "lenient"
           for c in (results.get("configs") or {}).values()):
        marks += " [lenient]"
    if any(is_logprob_task(str((c or {}).get("task") or name)) for name, c in (results.get("configs") or {}).items()):
        marks += " [logprob]"  # answers scored by letter probabilities: never merged with generated ones
    for key in ("pretrained", "model"):
        if args.get(key):
            return str(args[key]) + marks
    shown = ",".join(f"{k}={v}" for k, v in args.items())
    return (f"{model} ({shown})" if shown else model) + marks


def _model_args(config: dict[str, Any]) -> dict[str, Any]:
    """model_args of a results JSON's config as a dict, credential-like values redacted."""
    from lm_eval_bias.core.redaction import redact_model_args

    args = config.get("model_args") or {}
    if isinstance(args, str):
        from lm_eval.utils import simple_parse_args_string

        args = simple_parse_args_string(args) if args.strip() else {}
    return redact_model_args(args) if isinstance(args, dict) else {}


def run_of_results(results: dict[str, Any], task: str, stamp: str, results_file: Path | None,
                   sample_file: Path | None) -> SampleRun:
    """The :class:`SampleRun` of ``task`` in a results JSON (already read)."""
    from lm_eval_bias.core.sharding import parse_shard

    config = results.get("config") or {}
    task_config = (results.get("configs") or {}).get(task) or {}
    meta = dict(task_config.get("metadata") or {})
    try:
        shard = parse_shard(meta.get("shard"))
    except ValueError:
        shard = None
    model_args = _model_args(config)
    # lm-eval's CLI copies model_args into every task's metadata: compared through the model label
    meta = {k: v for k, v in meta.items() if k not in ("shard", "config_source") and k not in model_args}
    settings = json.dumps({
        "backend": config.get("model"), "model": model_label(results), "limit": config.get("limit"),
        "gen_kwargs": config.get("gen_kwargs"), "generation_kwargs": task_config.get("generation_kwargs"),
        "version": (results.get("versions") or {}).get(task), "n_shot": (results.get("n-shot") or {}).get(task),
        "metadata": meta, "chat_template_sha": results.get("chat_template_sha"),
        "system_instruction_sha": results.get("system_instruction_sha"),
        "fewshot_as_multiturn": results.get("fewshot_as_multiturn"),
    }, sort_keys=True, default=str)
    seeds = {k: config.get(k) for k in ("random_seed", "numpy_seed", "torch_seed", "fewshot_seed")}
    seeds["model_args_seed"] = model_args.get("seed")
    seeds["gen_kwargs_seed"] = _kwargs_dict(config.get("gen_kwargs")).get("seed")
    sampling = _samples(config.get("gen_kwargs")) or _samples(task_config.get("generation_kwargs"))
    return SampleRun(stamp, sample_file, results_file, model_label(results), shard, settings,
                     json.dumps(seeds, sort_keys=True, default=str), sampling)


def _kwargs_dict(kwargs: Any) -> dict[str, Any]:
    """gen_kwargs as lm-eval records them: a dict, or a ``k=v,k=v`` string."""
    if isinstance(kwargs, dict):
        return kwargs
    if isinstance(kwargs, str) and kwargs.strip():
        from lm_eval.utils import simple_parse_args_string

        return simple_parse_args_string(kwargs)
    return {}


def _samples(kwargs: Any) -> bool:
    """Whether generation kwargs sample: ``do_sample`` true, or a temperature above 0 without
    ``do_sample`` false."""
    kw = _kwargs_dict(kwargs)
    do_sample = kw.get("do_sample")
    if isinstance(do_sample, str):
        do_sample = do_sample.strip().lower() == "true"
    if do_sample is False:
        return False
    try:
        temperature = float(kw.get("temperature", 0) or 0)
    except (TypeError, ValueError):
        temperature = 0.0
    return bool(do_sample) or temperature > 0


def seed_replicates(runs: list[SampleRun]) -> bool:
    """Whether ``runs`` are repeated samples of one setting: at least two unsharded runs with a results
    JSON, identical model and settings (backend, prompts, generation, metadata, task version), sampling
    decoding, and pairwise different seeds. Such runs are merged by :func:`choose_runs`, each run's
    records marked with its ``replicate`` index (REFLECT App. C.5: repeated sampling)."""
    if len(runs) < 2 or any(r.results_file is None or r.shard is not None or not r.sampling for r in runs):
        return False
    return (len({(r.model, r.settings) for r in runs}) == 1
            and len({r.seeds for r in runs}) == len(runs))


def _stamp_of(file: Path, task: str) -> str | None:
    """The run stamp of ``samples_<task>_<stamp>.jsonl``; None for another task's file that the glob
    also matched (``samples_cf_vqa_*`` matches ``samples_cf_vqa_explanation_<stamp>.jsonl``)."""
    prefix = f"samples_{task}_"
    if not (file.name.startswith(prefix) and file.name.endswith(".jsonl")):
        return None
    stamp = file.name[len(prefix):-len(".jsonl")]
    if _STAMP.fullmatch(stamp):
        return stamp
    if re.search(r"_" + _STAMP.pattern + "$", stamp):  # <other task suffix>_<stamp>
        return None
    return stamp  # not an lm-eval stamp (a file written by hand): its own, unordered run


def _results_file(sample_file: Path, stamp: str) -> Path | None:
    """The results JSON lm-eval wrote with ``sample_file``: ``results_<stamp>.json`` beside it (or
    ``<name>_<stamp>.json`` when ``--output_path`` named a .json file)."""
    exact = sample_file.parent / f"results_{stamp}.json"
    if exact.is_file():
        return exact
    if not _STAMP.fullmatch(stamp):
        return None
    others = [p for p in sample_file.parent.glob(f"*_{stamp}.json") if not p.name.startswith("samples_")]
    return others[0] if len(others) == 1 else None


def find_runs(path: str | os.PathLike, task: str) -> list[SampleRun]:
    """Every run of ``task`` with logged samples under ``path`` (a samples file, or an lm-eval output
    folder searched recursively), oldest first where stamps order them."""
    path = Path(path)
    if path.is_file():
        files = [path]
    else:
        files = sorted(Path(p) for p in glob.glob(str(path / "**" / f"samples_{task}_*.jsonl"), recursive=True))
        files = [f for f in files if _stamp_of(f, task) is not None]
        if not files:
            raise FileNotFoundError(f"no samples_{task}_*.jsonl under {path} (was lm-eval run with --log_samples?)")
    runs = []
    for file in files:
        stamp = _stamp_of(file, task) or file.stem
        results_file = _results_file(file, stamp)
        if results_file is None:
            runs.append(SampleRun(stamp, file))
            continue
        try:
            results = json.loads(results_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            runs.append(SampleRun(stamp, file))
            continue
        runs.append(run_of_results(results, task, stamp, results_file, file))
    return sorted(runs, key=lambda r: (r.when is None, r.when or datetime.min, str(r.sample_file)))


def _listing(runs: Iterable[SampleRun]) -> str:
    return "".join(f"\n  {run.describe()}" for run in runs)


def _matches(run: SampleRun, selector: Any) -> bool:
    if isinstance(selector, SampleRun):
        return selector == run
    text = str(selector)
    if text == run.stamp:
        return True
    try:
        target = Path(text).resolve()
    except (OSError, ValueError):
        return False
    return any(f is not None and Path(f).resolve() == target for f in (run.sample_file, run.results_file))


def _one_sharded_run(runs: list[SampleRun]) -> bool:
    """Whether ``runs`` are distinct shards of one sharded run (same n and settings, distinct i)."""
    if any(r.shard is None or r.results_file is None for r in runs):
        return False
    return (len({(r.model, r.settings, r.shard[1]) for r in runs}) == 1
            and len({r.shard[0] for r in runs}) == len(runs))


class Choice(NamedTuple):
    """Runs chosen by :func:`choose_runs`: ``warnings`` say what was chosen among several runs (or
    that shards are missing), ``notes`` what was merged."""

    runs: list[SampleRun]
    warnings: list[str]
    notes: list[str]


def choose_runs(runs: list[SampleRun], run: Any = None) -> Choice:
    """The runs whose samples make one result (a :class:`Choice`).

    - ``run`` given (a stamp, a samples or results file, a :class:`SampleRun`, or a list of them):
      exactly those runs, which must be one run or shards of one sharded run;
    - else one run, or the shards of one sharded run (``--metadata '{"shard": "i/n"}'``: same n,
      model and settings, distinct i), are used as they are; several runs of one model: the newest
      (a note names the others); runs of several models, runs that cannot be ordered (no lm-eval
      stamp), a shard present twice, or files with and without results JSON side by side: ValueError
      listing the runs. Several files without any results JSON (hand-copied shards) are merged with a
      note; :func:`read_records` still refuses a doc that occurs twice.
    """
    if not runs:
        raise FileNotFoundError("no runs")
    if run is not None:
        selectors = list(run) if isinstance(run, (list, tuple, set)) else [run]
        chosen = [r for r in runs if any(_matches(r, s) for s in selectors)]
        missing = [s for s in selectors if not any(_matches(r, s) for r in runs)]
        if missing:
            raise ValueError(f"run={', '.join(map(str, missing))} matches none of the runs found:{_listing(runs)}")
        if seed_replicates(chosen):
            return Choice(chosen, [_replicate_note(chosen)], [])
        identified = [r for r in chosen if r.results_file is not None]
        if (len(identified) > 1 and not _one_sharded_run(identified)) or 0 < len(identified) < len(chosen):
            raise ValueError(f"the runs selected are not one run or the shards of one sharded run:{_listing(chosen)}")
        return Choice(chosen, *_shard_notes(chosen))
    orphans = [r for r in runs if r.results_file is None]
    if orphans and len(orphans) < len(runs):
        raise ValueError("ambiguous: some samples files have no results JSON beside them (their run is unknown), "
                         f"others do; pass run= to choose:{_listing(runs)}")
    if orphans:
        warned = [f"{len(orphans)} samples files without results JSON merged as shards of one run (a doc found "
                  f"twice is refused):{_listing(orphans)}"] if len(orphans) > 1 else []
        return Choice(orphans, warned, [])
    models = sorted({r.model or "" for r in runs})
    if len(models) > 1:
        raise ValueError(f"ambiguous: runs of {len(models)} models ({'; '.join(models)}); pass one model's folder "
                         f"or run= to choose:{_listing(runs)}")
    sets: list[list[SampleRun]] = []
    groups: dict[tuple, list[SampleRun]] = {}
    for r in runs:
        if r.shard is None:
            sets.append([r])
        else:
            key = (r.settings, r.shard[1])
            if key not in groups:
                groups[key] = []
                sets.append(groups[key])
            groups[key].append(r)
    for members in groups.values():
        indices = [r.shard[0] for r in members]
        if len(set(indices)) < len(indices):
            twice = sorted({i for i in indices if indices.count(i) > 1})
            raise ValueError(f"ambiguous: shard {', '.join(f'{i}/{members[0].shard[1]}' for i in twice)} found in "
                             f"several runs; remove the superseded one or pass run= to choose:{_listing(members)}")
    if len(sets) == 1:
        return Choice(sets[0], *_shard_notes(sets[0]))
    if all(len(s) == 1 for s in sets) and seed_replicates([s[0] for s in sets]):
        merged = [s[0] for s in sets]
        return Choice(merged, [_replicate_note(merged)], [])
    if any(r.when is None for r in runs) or len({max(r.when for r in s) for s in sets}) < len(sets):
        raise ValueError(f"ambiguous: {len(sets)} runs that cannot be ordered by time; pass run= to choose:"
                         f"{_listing(runs)}")
    newest = max(sets, key=lambda s: max(r.when for r in s))
    others = [r for s in sets if s is not newest for r in s]
    warned, notes = _shard_notes(newest)
    warned.insert(0, f"{len(sets)} runs found; using the newest, {', '.join(r.stamp for r in newest)}, not:"
                     f"{_listing(others)}\n(pass run= to choose another)")
    return Choice(newest, warned, notes)


def _replicate_note(runs: list[SampleRun]) -> str:
    return (f"{len(runs)} runs differing only in their seeds, with sampling decoding, merged as repeated samples "
            f"(records carry replicate 0-{len(runs) - 1}, in this order):{_listing(runs)}")


def _shard_notes(runs: list[SampleRun]) -> tuple[list[str], list[str]]:
    """(warnings, notes) about the shards among ``runs``."""
    shards = [r.shard for r in runs if r.shard]
    if not shards or len(shards) < len(runs):
        return [], []
    n = shards[0][1]
    return ([f"only {len(shards)} of {n} shards present"], []) if len(shards) < n else ([], [f"{n} shards merged"])


def select_runs(path: str | os.PathLike, task: str, run: Any = None) -> list[SampleRun]:
    """The run (or the shards of one sharded run) of ``task`` under ``path`` whose samples to read,
    chosen by :func:`choose_runs`; a choice among several runs, or missing shards, is warned
    (:class:`RunSelectionWarning`)."""
    choice = choose_runs(find_runs(path, task), run)
    frame, level = sys._getframe(0), 1  # warn at the caller's line, outside this module
    while frame is not None and frame.f_code.co_filename == __file__:
        frame, level = frame.f_back, level + 1
    for text in choice.warnings:
        warnings.warn(f"{task} under {path}: {text}", RunSelectionWarning, stacklevel=level)
    return choice.runs


def sample_files(path: str | os.PathLike, task: str, run: Any = None) -> list[Path]:
    """The ``samples_<task>_*.jsonl`` files of one run of ``task`` under ``path`` (a file, or an lm-eval
    output folder searched recursively): the files of one run, or of the shards of one sharded run
    (see :func:`choose_runs` for how a run is chosen among several, and ``run=``)."""
    return [r.sample_file for r in select_runs(path, task, run) if r.sample_file is not None]


def load_records(path: str | os.PathLike, task: str, run: Any = None) -> list[dict[str, Any]]:
    """Per-doc records of ``task`` from its logged samples (one per doc, in file order), of one run or
    of the shards of one sharded run: several runs in ``path`` are never merged (the newest is used,
    with a :class:`RunSelectionWarning` naming the others; ``run=`` — a stamp like
    ``2025-01-31T12-00-00.123456``, a samples or results file, or a list of them — picks explicitly;
    runs of several models are an error). Records of strict and lenient answer extraction are never
    merged, and a doc found in two files is an error."""
    runs = [r for r in select_runs(path, task, run) if r.sample_file is not None]
    records = read_records([r.sample_file for r in runs], task, replicates=seed_replicates(runs))
    results = []
    for r in runs:
        try:
            results.append(json.loads(Path(r.results_file).read_text(encoding="utf-8")) if r.results_file else {})
        except (OSError, ValueError):
            results.append({})
    note = coverage_note(task, len(records), results)
    if note:
        warnings.warn(f"{task} under {path}: {note}", SampleFileWarning, stacklevel=2)
    return records


def coverage_note(task: str, n_records: int, results: list[dict[str, Any]]) -> str | None:
    """A note when the samples hold fewer docs than the results JSONs of their runs count
    (``n-samples.effective``, summed over shards / replicates): a samples file cut short at a line
    boundary, or lines removed. The statistics then use the docs present."""
    expected = 0
    for each in results:
        counts = ((each or {}).get("n-samples") or {}).get(task) if isinstance(each, dict) else None
        value = counts.get("effective") if isinstance(counts, dict) else None
        if not isinstance(value, int) or isinstance(value, bool):
            return None  # a run that does not say: nothing to compare with
        expected += value
    if expected and n_records < expected:
        return (f"the samples hold {n_records} of the {expected} docs the results JSON counts (a samples file cut "
                f"short?); the statistics use the {n_records}")
    return None


def _extraction(record: Any, sample: dict[str, Any]) -> str:
    mode = record.get("extraction") if isinstance(record, dict) else None
    return str(mode or sample.get("extraction") or DEFAULT_EXTRACTION)


def _doc_key(sample: dict[str, Any]) -> str | None:
    """Identity of a sample's doc: the plugin's ``doc_id`` in the doc (lm-eval's own ``doc_id`` is the
    index within one shard), else the doc itself."""
    doc = sample.get("doc")
    if isinstance(doc, dict):
        if "doc_id" in doc:
            return f"doc_id {doc['doc_id']}"
        return "doc " + json.dumps(doc, sort_keys=True, default=str)
    return f"doc_hash {sample['doc_hash']}" if sample.get("doc_hash") else None


def read_records(files: Iterable[str | os.PathLike], task: str, replicates: bool = False) -> list[dict[str, Any]]:
    """Per-doc records of ``task`` from ``files`` (one run, or the shards of one run), in file order.
    ValueError when records of different answer extraction (``"extraction"``: strict, the default, or
    lenient) or of different scoring methods (``"method"``: generate, the default, or logprob) would be
    merged, or when a doc occurs in two files. ``replicates``: the files are runs that differ only in
    their seeds (:func:`seed_replicates`): a doc may occur once in each, and every record gets the
    ``replicate`` index of its file (REFLECT statistics count each as further samples of the doc)."""
    records: list[dict[str, Any]] = []
    modes: dict[str, Path] = {}
    methods: dict[str, Path] = {}
    settings: dict[str, dict[Any, Path]] = {}
    seen: dict[str, Path] = {}
    files = [Path(f) for f in files]
    for file in files:
        docs: dict[str, Path] = {}
        reading = _SampleLines(file)  # rules: see _SampleLines
        with reading:
            for line_no, line, sample in reading:
                if reading.duplicate(_doc_key(sample), line, line_no):
                    continue
                record = sample_record(task, sample, f"{file}:{line_no}")
                mode = _extraction(record, sample)
                if modes and mode not in modes:
                    found = "; ".join(f"{m} in {f}" for m, f in modes.items())
                    raise ValueError(f"refusing to merge records of different answer extraction: {found}; {mode} in "
                                     f"{file}:{line_no} (strict and lenient runs are separate results)")
                modes.setdefault(mode, file)
                method = str((record.get("method") if isinstance(record, dict) else None) or DEFAULT_METHOD)
                if methods and method not in methods:
                    found = "; ".join(f"{m} in {f}" for m, f in methods.items())
                    raise ValueError(f"refusing to merge records of different scoring methods: {found}; {method} in "
                                     f"{file}:{line_no} (generated and probability-scored runs are separate results)")
                methods.setdefault(method, file)
                for field in SETTING_FIELDS:  # REFLECT prompt settings: never mixed within one result
                    value = record.get(field) if isinstance(record, dict) else None
                    value = tuple(value) if isinstance(value, list) else value
                    known = settings.setdefault(field, {})
                    if known and value not in known:
                        found = "; ".join(f"{v} in {f}" for v, f in known.items())
                        raise ValueError(f"refusing to merge records of different {field}: {found}; {value} in "
                                         f"{file}:{line_no}")
                    known.setdefault(value, file)
                doc = _doc_key(sample)
                if replicates:
                    if doc is not None and doc in docs:
                        raise ValueError(f"{doc[:200]} occurs twice in {file}")
                    if isinstance(record, dict):
                        record = {**record, "replicate": files.index(file)}
                    if doc is not None:
                        docs[doc] = file
                    records.append(record)
                    continue
                if doc is not None and doc in seen:
                    raise ValueError(f"{doc[:200]} occurs in {seen[doc]} and in {file}: these files are not shards of "
                                     "one run (select one run with run=)")
                if doc is not None:
                    docs.setdefault(doc, file)
                records.append(record)
        seen.update(docs)
    return records


class _SampleLines:
    """The samples of one file, as ``(line number, line, sample)``, by the stated rules:

    - UTF-8 (a byte-order mark dropped); a line that is not UTF-8, not JSON or not a JSON object
      (``null``, a list ...) is a ValueError naming ``FILE:LINE``;
    - a last line that ends without a newline and does not parse is a truncated line (a run killed
      while writing): ignored, with a :class:`SampleFileWarning` naming the count;
    - a doc's line repeated identically (a copy appended twice) is counted once, with a
      :class:`SampleFileWarning` naming the count (:meth:`duplicate`); the same doc with other
      content is a ValueError;
    - a file without any sample is a ValueError (no silent fallback to the results JSON)."""

    def __init__(self, file: Path) -> None:
        self.file, self.count, self.duplicates, self.truncated = file, 0, 0, None
        self._lines: dict[str, int] = {}

    def __enter__(self) -> "_SampleLines":
        return self

    def __exit__(self, kind, *_) -> None:
        if kind is not None:
            return
        if not self.count:
            raise ValueError(f"{self.file}: no samples (the file is empty{' but for a truncated line' if self.truncated else ''})")
        said = []
        if self.duplicates:
            said.append(f"{self.duplicates} duplicated sample lines (same doc, same content) counted once")
        if self.truncated:
            said.append(f"1 truncated last line (line {self.truncated}) ignored")
        if said:
            warnings.warn(f"{self.file}: {'; '.join(said)}", SampleFileWarning, stacklevel=3)

    def __iter__(self):
        with open(self.file, "rb") as handle:
            for line_no, raw in enumerate(handle, 1):
                if line_no == 1 and raw.startswith(b"\xef\xbb\xbf"):
                    raw = raw[3:]
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise ValueError(f"{self.file}:{line_no}: not UTF-8 (byte {exc.start} of the line)") from None
                if not line.strip():
                    continue
                try:
                    sample = json.loads(line)
                except ValueError as exc:
                    if not raw.endswith(b"\n"):  # the last line, cut short
                        self.truncated = line_no
                        return
                    raise ValueError(f"{self.file}:{line_no}: not JSON ({exc})") from None
                if not isinstance(sample, dict):
                    kind = "null" if sample is None else type(sample).__name__
                    raise ValueError(f"{self.file}:{line_no}: expected a JSON object (a logged sample), got {kind}")
                self.count += 1
                yield line_no, line, sample

    def duplicate(self, doc: str | None, line: str, line_no: int) -> bool:
        """Whether ``line`` repeats its doc's earlier line exactly (then skip it); ValueError when the
        doc came before with other content."""
        if doc is None:
            return False
        digest = hash(line.strip())
        if doc in self._lines:
            if self._lines[doc] != digest:
                raise ValueError(f"{self.file}:{line_no}: {doc[:200]} occurs twice in the file with different content")
            self.duplicates += 1
            return True
        self._lines[doc] = digest
        return False


def _record_key(task: str) -> str:
    """A result key under which every sample of ``task`` carries its compact record (its first headline key)."""
    return aggregation_family(task).headline[0]


def record_builder(task: str):
    """The function building a doc's full record of ``task`` from its doc and responses (the one the
    task's ``process_results`` uses)."""
    family = task_family(task)
    if family == "fact_or_fair":
        from lm_eval_bias.fact_or_fair import tasks as fact_or_fair

        return fact_or_fair.record_of
    if family == "cf_vqa":
        from lm_eval_bias.cf_vqa import tasks as cf_vqa

        return cf_vqa.record_of
    if family == "vignette":
        from lm_eval_bias.vignette import paraphrase, tasks as vignette

        return paraphrase.record_of if task[len("vignette_"):] in paraphrase.PARAPHRASE_TASKS else vignette.record_of
    from lm_eval_bias.reflect import tasks as reflect

    return reflect.RECORD_BUILDERS[family + ("_logprob" if is_logprob_task(task) else "")]


class RecordMismatchWarning(UserWarning):
    """A logged sample's compact record differs from the record rebuilt from its doc and response (the
    run's parser differs from this version's); the logged fields are used."""


def sample_record(task: str, sample: dict[str, Any], where: str = "sample") -> dict[str, Any]:
    """The full record of one logged sample of ``task``.

    Samples of this version carry the doc, the filtered response(s) and the compact record under each
    headline key: the record is rebuilt from the doc and response (:func:`record_builder`) and the
    fields the run aggregated are taken from the compact record (a difference, e.g. a run parsed by
    another version, is warned). Samples of earlier versions carried the whole record under a result
    key: it is used as it is."""
    family = aggregation_family(task)
    for key in (*family.headline, "valid_rate", "retained_rate", "s_fact", "consistency"):
        value = sample.get(key)
        if isinstance(value, dict):  # an earlier version's samples: the record itself
            return value
    # a key holding the compact record (not "", another part's key, nor a view's number)
    key = next((k for k in family.headline if isinstance(sample.get(k), str) and sample[k]), family.headline[0])
    if key not in sample or "doc" not in sample or "filtered_resps" not in sample:
        raise ValueError(f"{where}: sample has no {key!r} value with its doc and filtered_resps (not a {task} sample "
                         "logged with --log_samples?)")
    record = record_builder(task)(sample["doc"], sample["filtered_resps"])
    view = family.views.get(key)
    codec = view.codec if view is not None else family.codec
    if codec is not None and sample[key]:
        logged = sample[key]
        try:
            decoded = codec.decode(logged)
        except (TypeError, ValueError, IndexError, KeyError):  # logged by a version with another layout
            warnings.warn(f"{task} {where}: the logged value of {key!r} is not this version's compact record; the record "
                          "rebuilt from its doc and response is used", RecordMismatchWarning, stacklevel=2)
            return record
        if codec.decode(codec.encode(record)) != decoded:
            warnings.warn(f"{task} {where}: the logged record differs from the one rebuilt from its doc and response "
                          "(another parser version?); the logged fields are used", RecordMismatchWarning, stacklevel=2)
            for name in codec.fields:
                record[name] = decoded[name]
            if "samples" in decoded or "samples" in record:
                record["samples"] = decoded.get("samples")
                if record["samples"] is None:
                    record.pop("samples")
    return record


def summarize(task: str, records: list[dict[str, Any]]):
    """The statistics summary the task's aggregations report (REFLECT: estimates, stderr, CIs,
    tables; FACT-OR-FAIR: scores and rates; Counterfactual VQA: the result-key dict)."""
    family = task_family(task)
    if family == "fact_or_fair":
        from lm_eval_bias.fact_or_fair import tasks as fact_or_fair

        return fact_or_fair.summarize(records)
    if family == "cf_vqa":
        from lm_eval_bias.cf_vqa import tasks as cf_vqa

        return cf_vqa.summarize(records)
    if family == "vignette":
        from lm_eval_bias.vignette import tasks as vignette

        return vignette.summarize(records)
    from lm_eval_bias.reflect import tasks as reflect

    if is_logprob_task(task):
        return {"2afc": reflect.summarize_2afc_logprob, "mcq": reflect.summarize_mcq_logprob}[family](records)
    return {"2afc": reflect.summarize_2afc, "mcq": reflect.summarize_mcq, "salary": reflect.summarize_salary}[family](records)


def cf_vqa_pairs(records: list[dict[str, Any]]):
    """Counterfactual VQA pair responses from logged records, for ``lm_eval_bias.cf_vqa.stats``
    (``metrics_by(pairs, "subcategory")``, ``consistency_coverage_curve``, ``symmetric_refusal_curve``)."""
    from lm_eval_bias.cf_vqa import tasks as cf_vqa

    return cf_vqa.pairs_from_records(records)


# -- VIGNETTE ------------------------------------------------------------------------------------------
def vignette_option_table(records: list[dict[str, Any]]):
    """VIGNETTE identity-choice answers as the option table of ``lm_eval_bias.vignette.stats``
    (columns doc_id, identity, context, partner, selected, dimension, gender, paradigm, parameter,
    pair_kind): ``selection_frequency``, ``log_odds``, ``pair_comp_matrix``, ``polarity``,
    ``identity_fisher_tests`` all take it."""
    from lm_eval_bias.vignette import tasks as vignette

    return vignette.option_table(records)


def vignette_factuality_table(records: list[dict[str, Any]]):
    """VIGNETTE factuality answers (identity, question_type, dimension, gender, correct), for
    ``lm_eval_bias.vignette.stats.factuality_accuracy``."""
    from lm_eval_bias.vignette import tasks as vignette

    return vignette.factuality_table(records)


def vignette_sscm_terms(records: list[dict[str, Any]]) -> dict[str, tuple[str, str]]:
    """term -> (SSCM dimension, high|low) recorded in VIGNETTE stereotype samples (``polarity``'s map)."""
    from lm_eval_bias.vignette import tasks as vignette

    return vignette.sscm_terms(records)


# -- result keys from records (merged shards, reports) ----------------------------------------------------
def aggregation_family(task: str):
    """The :class:`~lm_eval_bias.core.aggregation.AggregationFamily` behind ``task``'s result keys."""
    family = task_family(task)
    if family == "fact_or_fair":
        from lm_eval_bias.fact_or_fair import tasks as fact_or_fair

        rest = task[len("fact_or_fair_"):]
        if rest.startswith("objective_"):
            return fact_or_fair.FAMILIES["objective"]
        context = rest[len("subjective_"):].rsplit("_", 1)[0]
        return fact_or_fair.FAMILIES[f"subjective_{context}"]
    if family == "cf_vqa":
        from lm_eval_bias.cf_vqa import tasks as cf_vqa

        prompt = task[len("cf_vqa_"):] if task != "cf_vqa" else "baseline"
        return cf_vqa.FAMILIES[prompt]
    if family == "vignette":
        from lm_eval_bias.vignette import tasks as vignette

        return vignette.FAMILIES[task[len("vignette_"):]]
    from lm_eval_bias.reflect import tasks as reflect

    return reflect.FAMILIES[family + ("_logprob" if is_logprob_task(task) else "")]


def result_values(task: str, records: list[dict[str, Any]], summary: Any = None, tables: bool = False) -> dict[str, float]:
    """Every result key of ``task`` computed from its records, exactly as the task's aggregations do
    (so the logged samples of several shards give the numbers of one unsharded run). ``tables``: also
    the keys of the REFLECT tables family (retention by group, per-occupation keys, missing cells) and of
    the per-presentation family (App. C.8), which cost a bootstrap each."""
    family = aggregation_family(task)
    summary = summarize(task, records) if summary is None else summary
    values = {key: float(reader(summary)) for key, reader in family.keys.items()}
    tables = table_family(task) if tables else None
    if tables is not None:
        table_summary = tables.summarize(records)
        values.update({key: float(reader(table_summary)) for key, reader in tables.keys.items()})
    by_presentation = presentation_family(task) if tables else None
    presented = [r for r in records if "presentation" in r] if by_presentation is not None else []
    if presented:  # App. C.8 keys: only docs of a source with a third presentation carry them
        presentation_summary = by_presentation.summarize(presented)
        values.update({key: float(reader(presentation_summary)) for key, reader in by_presentation.keys.items()})
    return values


def presentation_family(task: str):
    """The REFLECT per-presentation family (App. C.8: MCQ keys by man / woman / androgynous) whose keys
    ``task`` reports when its source has a third presentation, or None."""
    if not task.startswith("focus_") or is_logprob_task(task):
        return None
    from lm_eval_bias.reflect import tasks as reflect

    return reflect.PRESENTATION_FAMILIES.get(task_family(task))


def table_family(task: str):
    """The REFLECT tables family whose keys ``task`` also reports (retention by group, mean absolute and
    per-occupation salary gaps, missing cells), or None."""
    if not task.startswith("focus_") or is_logprob_task(task):
        return None
    from lm_eval_bias.reflect import tasks as reflect

    return reflect.TABLE_FAMILIES.get(task_family(task))
