"""``lm-eval-bias``: a drop-in for the ``lm_eval`` command with the plugin built in.

- ``lm-eval-bias run|ls|validate ...`` are lm-eval's own sub-commands and flags, with the plugin's
  task folder added to ``--include_path`` (a user's own ``--include_path`` is kept as well) and the
  plugin's models (``bias-probe``) registered. As with ``lm_eval``, a bare ``lm-eval-bias --model ...``
  means ``run``.
- ``lm-eval-bias tasks-dir`` prints the plugin's task folder, for the plain harness CLI:
  ``lm_eval --include_path "$(lm-eval-bias tasks-dir)" --tasks focus_2afc_income ...``.
- ``lm-eval-bias build <dataset> ...`` runs a dataset builder (``build --help`` lists them).
- ``lm-eval-bias score fact-or-fair-t2i --labels FILE`` scores text-to-image generations from
  face-attribute labels with the FACT-OR-FAIR metrics.
- ``lm-eval-bias report RUN_DIR ... --output DIR`` writes HTML bias cards, figures, tables and a leaderboard.
- ``lm-eval-bias demo`` builds a small synthetic FOCUS set and runs REFLECT on the planted-bias
  ``bias-probe`` model, offline.

Credential-like model arguments (``api_key``, ``hf_token``, ``auth_token``, ... see
:func:`is_credential_name`) given to ``run`` are replaced by ``<redacted>`` in everything lm-eval
records — the results JSON (``config.model_args`` and every task's ``metadata``), logged samples,
log lines and the printed summary — with a warning on stderr. lm-eval's API backends read their keys
from the environment (``OPENAI_API_KEY`` ...), not from ``--model_args``; the real value still
reaches the model's constructor, for the backends that do take one (``auth_token`` of the ``local-*``
backends, ``token`` of ``hf``).

Unless ``LMEVAL_HASHMM`` is set, it is set to 0: lm-eval would otherwise PNG-encode every image of
every logged sample to hash it (measured 0.14 s per 1024-px photo-like image: about 20 min for the
8,640 image references of one 2AFC scenario).
Logged samples identify images by their FOCUS ``image_id`` in the doc instead.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import re
import sys
from typing import Any, Iterator

from lm_eval_bias import __version__, tasks_dir

_HARNESS_COMMANDS = ("run", "ls", "validate")

# -- credentials in --model_args (the redaction itself: lm_eval_bias.core.redaction) ------------------------
from lm_eval_bias.core.redaction import (  # noqa: E402 - re-exported: callers and tests import them from here
    CREDENTIAL_WORDS,
    NOT_CREDENTIALS,
    REDACTED,
    Redactor,
    is_credential_name,
    redact_model_args,
    redact_text,
    restore,
)

#: lm-eval backend -> where it reads its credential from
CREDENTIAL_ENV = {
    "openai-completions": "OPENAI_API_KEY", "openai-chat-completions": "OPENAI_API_KEY",
    "local-completions": "OPENAI_API_KEY", "local-chat-completions": "OPENAI_API_KEY",
    "azure-openai-chat-completions": "AZURE_OPENAI_API_KEY",
    "anthropic-completions": "ANTHROPIC_API_KEY", "anthropic-chat": "ANTHROPIC_API_KEY",
    "anthropic-chat-completions": "ANTHROPIC_API_KEY",
    "litellm": "the provider's variable (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...)",
    "litellm-chat": "the provider's variable (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...)",
    "litellm-chat-completions": "the provider's variable (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...)",
    "textsynth": "TEXTSYNTH_API_SECRET_KEY", "watsonx_llm": "WATSONX_API_KEY",
    "hf": "HF_TOKEN", "hf-multimodal": "HF_TOKEN", "vllm": "HF_TOKEN", "vllm-vlm": "HF_TOKEN",
    "vllm-vlm-guided": "HF_TOKEN",
}


class _ScrubFilter(logging.Filter):
    """Handler filter replacing secret values in a log record's message by :data:`REDACTED`."""

    def __init__(self, redaction: "_Redaction") -> None:
        super().__init__()
        self.redaction = redaction

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        scrubbed = self.redaction.text(message)
        if scrubbed != message:
            record.msg, record.args = scrubbed, None
        return True


class _ModelWithSecrets:
    """Stands for a registered model class: builds the model from model_args with the redacted
    values put back, so lm-eval records ``<redacted>`` while the constructor gets the real value."""

    def __init__(self, cls: Any, original: dict) -> None:
        self._cls, self._original = cls, original

    def create_from_arg_obj(self, arg_dict: dict, additional_config: dict | None = None):
        return self._cls.create_from_arg_obj(restore(arg_dict, self._original), additional_config)

    def create_from_arg_string(self, arg_string: str, additional_config: dict | None = None):
        if REDACTED not in arg_string:
            return self._cls.create_from_arg_string(arg_string, additional_config)
        from lm_eval.utils import simple_parse_args_string

        return self.create_from_arg_obj(simple_parse_args_string(arg_string), additional_config)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cls, name)


class _Redaction(Redactor):
    """What one ``run`` redacted (:class:`~lm_eval_bias.core.redaction.Redactor`: originals to rebuild
    the model, secret texts to scrub), and how it is applied to lm-eval for the run."""

    def warn(self, model: str | None) -> None:
        if not self.keys:
            return
        env = CREDENTIAL_ENV.get(str(model or ""))
        where = (f"{model} reads it from {env}" if env else
                 "e.g. openai-chat-completions and local-chat-completions read OPENAI_API_KEY")
        print(f"warning: --model_args {', '.join(self.keys)} redacted: the results JSON, logged samples and log "
              f"show {REDACTED} instead of the value. lm-eval's API backends read credentials from the "
              f"environment, not from --model_args ({where}); the value is still passed to the model's "
              "constructor for backends that take it.", file=sys.stderr)

    @contextlib.contextmanager
    def applied(self) -> Iterator[None]:
        """Model classes that rebuild the real values, config-file model_args redacted, and every log
        handler scrubbing the secret texts — for the duration of the run."""
        import lm_eval.api.registry as registry
        from lm_eval.config.evaluate_config import EvaluatorConfig

        get_model, load_yaml = registry.get_model, EvaluatorConfig.__dict__["load_yaml_config"]

        def get_model_with_secrets(name: str):
            cls = get_model(name)
            return _ModelWithSecrets(cls, self.original) if self.keys else cls

        def load_yaml_redacted(config_path):
            config = load_yaml.__func__(config_path)
            if isinstance(config, dict) and config.get("model_args"):
                before = list(self.keys)
                config["model_args"] = self.redact(config["model_args"])
                if self.keys != before:
                    self.warn(config.get("model"))
            return config

        scrub = _ScrubFilter(self)
        handlers = [h for name in (None, "lm_eval") for h in logging.getLogger(name).handlers]
        registry.get_model = get_model_with_secrets
        EvaluatorConfig.load_yaml_config = staticmethod(load_yaml_redacted)
        for handler in handlers:
            handler.addFilter(scrub)
        try:
            yield
        finally:
            registry.get_model = get_model
            EvaluatorConfig.load_yaml_config = load_yaml
            for handler in handlers:
                handler.removeFilter(scrub)

    @contextlib.contextmanager
    def parsing(self) -> Iterator[None]:
        """Hold back lm-eval's log records while the command line is parsed (``--model_args`` given
        twice logs both values), then emit them scrubbed."""
        held: list[logging.LogRecord] = []

        class Hold(logging.Filter):
            def filter(self, record: logging.LogRecord) -> bool:
                held.append(record)
                return False

        hold = Hold()
        loggers = [logging.getLogger(name) for name in ("lm_eval._cli", "lm_eval._cli.utils", "lm_eval._cli.run")]
        for each in loggers:
            each.addFilter(hold)
        try:
            yield
        finally:
            for each in loggers:
                each.removeFilter(hold)
            for record in held:
                record.msg, record.args = self.text(record.getMessage()), None
                logging.getLogger(record.name).handle(record)


def _build_main(argv: list[str]) -> int:
    from lm_eval_bias.datasets_builder.cli import add_build_subcommands

    parser = argparse.ArgumentParser(prog="lm-eval-bias build", description="Build a dataset in Hugging Face Hub layout.")
    subparsers = parser.add_subparsers(dest="dataset", metavar="DATASET", required=True)
    add_build_subcommands(subparsers)
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


def _with_plugin_tasks(include_path):
    """``--include_path`` value that adds the plugin's task folder to the user's (if any), unless the
    harness indexes the plugin's ``lm_eval.tasks`` entry point itself (:mod:`lm_eval_bias.core.harness`)."""
    from lm_eval_bias.core.harness import harness_loads_plugin_tasks

    if harness_loads_plugin_tasks():
        return include_path
    ours = str(tasks_dir())
    if not include_path:
        return ours
    theirs = include_path if isinstance(include_path, list) else [include_path]
    return [ours] + [p for p in theirs if p != ours]


def run_harness(argv: list[str]) -> None:
    """Run lm-eval's CLI on ``argv`` with the plugin's tasks and models available."""
    os.environ.setdefault("LMEVAL_HASHMM", "0")
    from lm_eval.utils import setup_logging

    from lm_eval_bias.core.registration import register_plugin

    register_plugin()
    from lm_eval._cli import HarnessCLI

    setup_logging()
    saved = sys.argv
    sys.argv = ["lm-eval-bias", *argv]
    redaction = _Redaction()
    redaction.scan_argv(argv)
    try:
        cli = HarnessCLI()
        _name_as_lm_eval_bias(cli)
        with redaction.parsing():
            try:
                args = cli.parse_args()
            except ValueError as exc:  # lm-eval's parse of a JSON --model_args / --gen_kwargs / --metadata
                if _DEBUG:
                    raise
                print(f"error: {argv[0] if argv and not argv[0].startswith('-') else 'run'}: bad argument: "
                      f"{redaction.text(str(exc))}", file=sys.stderr)
                raise SystemExit(2) from None
            if getattr(args, "command", None) == "run" and getattr(args, "model_args", None):
                args.model_args = redaction.redact(args.model_args)
    finally:
        sys.argv = saved
    redaction.warn(getattr(args, "model", None))
    if getattr(args, "command", None) in ("run", "validate"):
        unknown = unknown_task_errors(getattr(args, "tasks", None), getattr(args, "include_path", None))
        if unknown:
            for line in unknown:
                print(f"error: {line}", file=sys.stderr)
            raise SystemExit(2)
    if hasattr(args, "include_path"):
        args.include_path = _with_plugin_tasks(args.include_path)
    if getattr(args, "command", None) == "run" and getattr(args, "model", None) and getattr(args, "tasks", None):
        from lm_eval_bias.guard import ImageBudgetError, check_image_budget

        tasks = args.tasks if isinstance(args.tasks, list) else str(args.tasks).split(",")
        try:
            check_image_budget(args.model, args.model_args, [t.strip() for t in tasks])
        except ImageBudgetError as exc:
            print(f"error: {exc}", file=sys.stderr)
            raise SystemExit(2) from None
    if getattr(args, "command", None) == "run" and getattr(args, "tasks", None):  # before lm-eval loads the model
        from lm_eval_bias.core.data import DataSourceError

        try:
            check_task_data(args.tasks, args.model_args, getattr(args, "metadata", None), getattr(args, "config", None))
        except DataSourceError as exc:
            print(f"error: {exc}", file=sys.stderr)
            raise SystemExit(2) from None
    if getattr(args, "command", None) in ("run", "validate") and _only_plugin_tasks(getattr(args, "tasks", None)):
        _skip_builtin_task_index()
    from lm_eval_bias.core.data import DataSourceError
    from lm_eval_bias.models.deferred import MissingExtraError

    try:
        if getattr(args, "command", None) == "run":
            with redaction.applied():
                cli.execute(args)
        else:
            cli.execute(args)
    except DataSourceError as exc:  # no dataset, or one of the wrong shape: the message says what to do
        print(f"error: {redaction.text(str(exc))}", file=sys.stderr)
        raise SystemExit(2) from None
    except MissingExtraError as exc:  # a plugin backend whose extra is not installed (lm_eval_bias/models/deferred.py)
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    except Exception as exc:  # a backend's error (HTTP 401 ... for url: ...?key=...): one line, credentials redacted
        text = redaction.text(str(exc))
        if isinstance(exc, ValueError) and text.startswith("Tasks not found: "):  # names that are not the plugin's
            print(f"error: {text}; `lm-eval-bias ls tasks` lists them", file=sys.stderr)
            raise SystemExit(2) from None
        if _DEBUG:
            exc.args = (text,)
            raise
        if _is_model_argument_error(exc):  # a misspelled or missing model argument: the user's input
            print(f"error: --model_args: {text}{_argument_hint(exc, redaction.original)}", file=sys.stderr)
            raise SystemExit(2) from None
        print(f"error: {args.command}: {type(exc).__name__}: {text}{_argument_hint(exc, redaction.original)} "
              "(rerun with --debug for the traceback)", file=sys.stderr)
        raise SystemExit(1) from None


def _is_model_argument_error(exc: BaseException) -> bool:
    """bias-probe's refusal of an argument, or a model constructor's TypeError about its arguments."""
    from lm_eval_bias.models.bias_probe import ModelArgumentError

    if isinstance(exc, ModelArgumentError) or (isinstance(exc, ValueError) and str(exc).startswith("Invalid JSON")):
        return True  # bias-probe's own check; lm-eval's parse of a JSON --model_args
    return isinstance(exc, TypeError) and bool(
        re.search(r"__init__\(\) (?:missing \d+ required|got an unexpected keyword argument)", str(exc)))


def _argument_hint(exc: BaseException, model_args: Any) -> str:
    """``; did you mean 'pretrained' (--model_args has 'pretrainde')?`` when a model's constructor
    misses a required argument that a given model argument misspells."""
    import difflib

    if not isinstance(exc, TypeError) or not isinstance(model_args, dict):
        return ""
    missing = re.search(r"missing \d+ required (?:positional |keyword-only )?arguments?: (.+)$", str(exc))
    hints = []
    for name in re.findall(r"'(\w+)'", missing.group(1)) if missing else []:
        close = difflib.get_close_matches(name, [str(k) for k in model_args], n=1, cutoff=0.6)
        if close:
            hints.append(f"did you mean {name!r} (--model_args has {close[0]!r})?")
    return "; " + " ".join(hints) if hints else ""


#: lm-eval sub-commands whose help and error messages name them as ``lm-eval-bias <command>``
_LM_EVAL_NAME = re.compile(r"\blm-eval (?=(?:run|ls|list|validate)\b)")


def _name_as_lm_eval_bias(cli) -> None:
    """Make lm-eval's parsers call themselves ``lm-eval-bias run|ls|validate`` (usage lines, examples,
    argparse errors), and say in each description what the plugin adds."""
    parser = getattr(cli, "_parser", None)
    subparsers = getattr(cli, "_subparsers", None)
    if parser is None or subparsers is None:  # another lm-eval layout: keep its own names
        return
    parser.prog = "lm-eval-bias"
    for name, sub in subparsers.choices.items():
        sub.prog = f"lm-eval-bias {name}"
        if sub.usage:
            sub.usage = re.sub(r"^lm-eval \S+", f"lm-eval-bias {name}", sub.usage)
        if sub.epilog:
            sub.epilog = _LM_EVAL_NAME.sub("lm-eval-bias ", sub.epilog)
        for action in sub._actions:
            if isinstance(action.help, str):
                action.help = _LM_EVAL_NAME.sub("lm-eval-bias ", action.help)
        models = " and its models (bias-probe) registered" if name == "run" else ""
        note = f"lm-eval's `{name}`, with the lm-eval-bias tasks available{models}."
        sub.description = f"{sub.description}\n\n{note}" if sub.description else note


_YAML_KEY = re.compile(rb"^[ \t]*(?:-[ \t]*)?[\"']?(?:task|group|tag)[\"']?[ \t]*:[ \t]*([^\n#]*)", re.M)
_YAML_BLOCK = re.compile(rb"^[ \t]*[\"']?(?:task|group|tag)[\"']?[ \t]*:[ \t]*(?:#[^\n]*)?\n((?:[ \t]*-[^\n]*\n?)+)",
                         re.M)
_YAML_ITEM = re.compile(rb"^[ \t]*-[ \t]*([^\s#:]+)[ \t]*(?:#[^\n]*)?$", re.M)


def _yaml_names(folders, among=None) -> set[str]:
    """Task, group and tag names (and group members) in the YAML files under ``folders``, read as text;
    with ``among``, only those names, reading only files that contain one of them.

    A generous superset of what lm-eval's index holds (no YAML parsing, no ``!function`` import), and
    fast enough (~1 s for lm-eval's 14k files) to check a name before that index is built."""
    wanted = [n.encode("utf-8") for n in among] if among is not None else None
    names: set[bytes] = set()
    for folder in folders:
        folder = os.path.expanduser(str(folder))
        if os.path.isfile(folder):
            walk = [(os.path.dirname(folder), [], [os.path.basename(folder)])]
        else:
            walk = os.walk(folder)
        for root, _, files in walk:
            for file in files:
                if not (file.endswith((".yaml", ".yml", "_yaml")) or "." not in file):
                    continue
                try:
                    with open(os.path.join(root, file), "rb") as handle:
                        text = handle.read()
                except OSError:
                    continue
                if wanted is not None and not any(n in text for n in wanted):
                    continue
                for value in _YAML_KEY.findall(text):
                    names.update(v.strip().strip(b"'\"") for v in value.strip().strip(b"[]").split(b","))
                for block in _YAML_BLOCK.findall(text):
                    names.update(v.strip(b"'\"") for v in _YAML_ITEM.findall(block))
    found = {n.decode("utf-8", "replace") for n in names if n}
    return found if among is None else found & set(among)


def plugin_task_names() -> list[str]:
    """Names of the plugin's tasks and groups (its task folder's ``task:`` and ``group:`` entries)."""
    names: list[str] = []
    pattern = re.compile(r"^(?:task|group):[ \t]*([^\s#]+)", re.M)
    for path in sorted(tasks_dir().rglob("*.yaml")):
        names += [n for n in pattern.findall(path.read_text(encoding="utf-8")) if n not in names]
    return names


#: datasets (:data:`lm_eval_bias.core.data.DEFAULT_HUB_IDS` names) read by each plugin task module's doc loaders
_MODULE_DATASETS = {"reflect": ("focus",), "fact_or_fair": ("fact_or_fair",), "cf_vqa": ("cf_vqa",),
                    "vignette": ("vignette",)}


def plugin_task_datasets(tasks) -> list[str]:
    """The datasets that the plugin tasks and groups among ``tasks`` read (from their YAMLs'
    ``custom_dataset`` hooks; groups are expanded). Other names are ignored."""
    texts: dict[str, str] = {}
    for path in sorted(tasks_dir().rglob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        name = re.search(r"^(?:task|group):[ \t]*([^\s#]+)", text, re.M)
        if name:
            texts.setdefault(name.group(1), text)
    found: list[str] = []
    seen: set[str] = set()

    def visit(name: str) -> None:
        if name in seen or name not in texts:
            return
        seen.add(name)
        text = texts[name]
        for module, function in re.findall(r"^custom_dataset:\s*!function lm_eval_bias\.(\w+)\.tasks\.(\w+)", text, re.M):
            for dataset in _MODULE_DATASETS.get(module, ()) + (("focus_bios",) if function == "load_salary_docs" else ()):
                if dataset not in found:
                    found.append(dataset)
        if re.search(r"^group:", text, re.M):
            for member in re.findall(r"^  - ([^\s#:]+)[ \t]*$", text, re.M):
                visit(member)

    for name in (n.strip() for t in (tasks if isinstance(tasks, list) else [tasks]) for n in str(t).split(",")):
        visit(name)
    return found


def check_task_data(tasks, model_args=None, metadata=None, config=None) -> None:
    """Raise :class:`~lm_eval_bias.core.data.DataSourceError` (whose message says how to build or point to
    the data) when a requested plugin task's dataset cannot be found — before lm-eval imports torch
    and loads the model. Reads ``hub_id`` / ``bios_hub_id`` as the tasks will (``--model_args``
    merged with ``--metadata``). Skipped with ``--config`` (its file may point tasks elsewhere); a
    dataset that is there is not loaded here."""
    if config:
        return
    from lm_eval_bias.core import data

    merged: dict = {}
    for part in (model_args, metadata):
        if isinstance(part, str) and part.strip():
            from lm_eval.utils import simple_parse_args_string

            part = simple_parse_args_string(part)
        if isinstance(part, dict):
            merged.update(part)
    for name in plugin_task_datasets(tasks):
        hub_id = merged.get(data.HUB_ID_KEYS.get(name, "hub_id"))
        location = data.resolve_dataset_location(name, hub_id if isinstance(hub_id, str) and hub_id else None)
        if not os.path.isdir(location):
            data.check_hub_dataset(location, name)


def unknown_task_errors(tasks, include_path=None) -> list[str]:
    """``unknown task 'X'; did you mean 'Y'?`` for each requested name that is not a plugin task or group
    but close to one (difflib), unless the user's ``--include_path`` folders or lm-eval's built-in
    tasks define it. Names close to none of the plugin's, glob patterns and YAML paths are left to
    lm-eval. Costs milliseconds; ~1 s more when a name needs the built-in check."""
    import difflib

    if not tasks:
        return []
    requested = [n.strip() for t in (tasks if isinstance(tasks, list) else [tasks]) for n in str(t).split(",")]
    requested = [n for n in requested if n and not any(c in n for c in "*?[") and not n.endswith(".yaml")
                 and not os.path.exists(n)]
    ours = plugin_task_names()
    close = {name: difflib.get_close_matches(name, ours, n=1, cutoff=0.6) for name in requested if name not in ours}
    close = {name: match[0] for name, match in close.items() if match}
    if not close:
        return []
    import importlib.util

    builtin = importlib.util.find_spec("lm_eval.tasks")  # its folder, without importing it (~2 s)
    theirs = include_path if isinstance(include_path, list) else str(include_path or "").split(os.pathsep)
    folders = [p for p in theirs if p] + (list(builtin.submodule_search_locations or []) if builtin else [])
    others = _yaml_names(folders, among=close)
    return [f"unknown task {name!r}; did you mean {match!r}?" for name, match in close.items() if name not in others]


def _only_plugin_tasks(tasks) -> bool:
    """True when every requested task or group is one of the plugin's (then lm-eval's ~14k built-in
    task configs need not be indexed, which costs ~10 s at every start)."""
    if not tasks:
        return False
    from lm_eval_bias.guard import images_per_task

    names = tasks if isinstance(tasks, list) else str(tasks).split(",")
    known = images_per_task()
    return all(name.strip() in known for name in names)


def _skip_builtin_task_index() -> None:
    """Make this process's TaskManager skip lm-eval's built-in tasks unless a caller asks for them.

    lm-eval 0.4.13's CLI builds ``TaskManager(include_path=..., metadata=...)`` with no way to pass
    ``include_defaults``; we change only that default, in this process, for runs whose tasks are all
    the plugin's."""
    import functools

    from lm_eval.tasks import TaskManager

    original = TaskManager.__init__
    if getattr(original, "_lm_eval_bias_defaults_off", False):
        return

    @functools.wraps(original)
    def init(self, *args, include_defaults: bool = False, **kwargs):
        original(self, *args, include_defaults=include_defaults, **kwargs)

    init._lm_eval_bias_defaults_off = True  # type: ignore[attr-defined]
    TaskManager.__init__ = init


def _report_main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="lm-eval-bias report",
                                     description="HTML bias cards, figures, tables and a leaderboard from lm-eval output folders.")
    parser.add_argument("runs", nargs="+", help="lm-eval --output_path folders (results JSON + --log_samples files)")
    parser.add_argument("--output", required=True, help="report folder (index.html, figures/, tables/, leaderboard.*)")
    args = parser.parse_args(argv)
    from lm_eval_bias.report import build_report

    try:
        index = build_report(args.runs, args.output)
    except (FileNotFoundError, ValueError) as exc:  # no runs; runs that must not be merged
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {index}")
    return 0


#: sub-commands, with the one line ``lm-eval-bias --help`` shows for each
COMMANDS: dict[str, str] = {
    "run": "evaluate a model on tasks (lm-eval's run, with the plugin's tasks and bias-probe model)",
    "ls": "list tasks, groups, subtasks or tags (lm-eval's ls, plugin tasks included)",
    "validate": "check that tasks exist (lm-eval's validate, plugin tasks included)",
    "tasks-dir": "print the plugin's task folder, for lm_eval --include_path",
    "build": "build a dataset (focus, focus-bios, fact-or-fair, cf-vqa, vignette, vignette-pata) from the authors' files",
    "score": "score outputs made outside the harness (fact-or-fair-t2i: text-to-image face labels)",
    "report": "HTML bias cards, figures, tables and a leaderboard from run folders",
    "reflect-compare": "REFLECT Tables 7, 8, 10, 4 and App. B.2 mirroring: two runs compared, with intervals",
    "replicate": "a run's values beside the numbers the papers print (paper: X · yours: Y [interval])",
    "vignette-import": "import the VIGNETTE authors' released model outputs as logged samples (for report)",
    "vignette-real-vs-synthetic": "VIGNETTE real vs synthetic images (PATA): Tables 12-19, Figs. 9-10 from two runs",
    "analyze": "the full analysis of runs from their logged samples: CSV, JSON and LaTeX tables",
    "generate": "generate a benchmark's data the way its paper did (vignette images, cf-vqa pairs)",
    "submit": "check a run and package it for a leaderboard (a Hub dataset id or a folder)",
    "leaderboard": "build a leaderboard from submissions, re-verifying each (leaderboard build ...)",
    "demo": "offline demo: synthetic FOCUS data, the planted-bias bias-probe model, REFLECT",
    "version": "print the version",
}


def main_help() -> str:
    """``lm-eval-bias --help``: the sub-commands, one line each."""
    width = max(map(len, COMMANDS))
    lines = [f"  {name:<{width}}  {text}" for name, text in COMMANDS.items()]
    return "\n".join([
        "usage: lm-eval-bias COMMAND [options]",
        "",
        "Social-bias audits of vision-language models (REFLECT/FOCUS, FACT-OR-FAIR, Counterfactual VQA,",
        "VIGNETTE) as lm-evaluation-harness tasks.",
        "",
        "commands:",
        *lines,
        "",
        "`lm-eval-bias COMMAND --help` shows a command's options; `--debug` (anywhere) shows a failure's",
        "traceback instead of its one `error:` line. As with lm_eval, a bare",
        "`lm-eval-bias --model ...` means `run`. Start with:",
        "  lm-eval-bias demo",
        "  LM_EVAL_BIAS_DATA_DIR=demo_out/data lm-eval-bias run --model bias-probe --tasks focus_2afc_income",
    ])


def _tasks_dir_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="lm-eval-bias tasks-dir",
        description="Print the folder of the plugin's task YAMLs, for the plain harness CLI: "
                    'lm_eval --include_path "$(lm-eval-bias tasks-dir)" --tasks focus_2afc_income ...')
    parser.parse_args(argv)
    print(tasks_dir())
    return 0


def _version_main(argv: list[str]) -> int:
    argparse.ArgumentParser(prog="lm-eval-bias version", description="Print the version.").parse_args(argv)
    print(f"lm-eval-bias {__version__}")
    return 0


def _score_main(argv: list[str]) -> int:
    from lm_eval_bias.fact_or_fair import t2i as t2i_scoring

    parser = argparse.ArgumentParser(prog="lm-eval-bias score",
                                     description="Score model outputs made outside the harness.")
    scorers = parser.add_subparsers(dest="scorer", metavar="SCORER", required=True)
    t2i_scoring.make_parser(scorers.add_parser("fact-or-fair-t2i", help=t2i_scoring.SUMMARY))
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


def _vignette_import_main(argv: list[str]) -> int:
    from lm_eval_bias.vignette import importer as vignette_import

    return vignette_import.main(argv)


def _replicate_main(argv: list[str]) -> int:
    from lm_eval_bias import replicate

    return replicate.main(argv)


def _vignette_real_vs_synthetic_main(argv: list[str]) -> int:
    from lm_eval_bias.vignette import real_images

    return real_images.main(argv)


def _reflect_compare_main(argv: list[str]) -> int:
    from lm_eval_bias.reflect import compare as reflect_compare

    return reflect_compare.main(argv)


def _generate_main(argv: list[str]) -> int:
    """``lm-eval-bias generate BENCHMARK ...``: each benchmark's generator owns its options."""
    generators = {"vignette": "lm_eval_bias.vignette.generate", "cf-vqa": "lm_eval_bias.cf_vqa.generate"}
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: lm-eval-bias generate {" + ",".join(generators) + "} [options]\n\n"
              "Generate a benchmark's data the way its paper did; `lm-eval-bias generate BENCHMARK --help`.")
        return 0
    if argv[0] not in generators:
        print(f"error: generate: unknown benchmark {argv[0]!r}; choose one of {', '.join(generators)}", file=sys.stderr)
        return 2
    import importlib

    # a step that reads a generator's output is its own module (it imports the generator, not the reverse)
    steps = {("vignette", "human-check"): "lm_eval_bias.vignette.human_check"}
    if tuple(argv[:2]) in steps:
        return int(importlib.import_module(steps[tuple(argv[:2])]).main(argv[2:]) or 0)
    return int(importlib.import_module(generators[argv[0]]).main(argv[1:]) or 0)


def _analyze_main(argv: list[str]) -> int:
    from lm_eval_bias import analysis

    return int(analysis.main(argv) or 0)


def _submit_main(argv: list[str]) -> int:
    from lm_eval_bias.leaderboard import submit

    return int(submit.main(argv) or 0)


def _leaderboard_main(argv: list[str]) -> int:
    from lm_eval_bias.leaderboard import build

    return int(build.main(argv) or 0)


def _demo_main(argv: list[str]) -> int:
    from lm_eval_bias import demo

    return demo.main(argv, run_harness)


#: ``--debug`` given: failures show their traceback instead of the one ``error:`` line
_DEBUG = False


def main(argv: list[str] | None = None) -> int:
    """Every failure ends in one line ``error: <what>: <why>`` on stderr and a non-zero exit (2: bad
    input or usage, 1: anything else), no traceback, unless ``--debug`` is given (anywhere)."""
    global _DEBUG
    argv = list(sys.argv[1:] if argv is None else argv)
    _DEBUG = "--debug" in argv
    argv = [a for a in argv if a != "--debug"]
    try:
        return _dispatch(argv)
    except (SystemExit, KeyboardInterrupt):
        raise
    except Exception as exc:  # noqa: BLE001 - the one-line contract; --debug shows the traceback
        if _DEBUG:
            if len(exc.args) == 1 and isinstance(exc.args[0], str):
                exc.args = (redact_text(exc.args[0]),)  # the traceback's message without credentials
            raise
        command = argv[0] if argv and not argv[0].startswith("-") else "run"
        print(f"error: {command}: {_one_line(exc)} (rerun with --debug for the traceback)", file=sys.stderr)
        return 1


def _one_line(exc: BaseException) -> str:
    """``exc`` as one line, credentials redacted: a file error names the file, others their type."""
    if isinstance(exc, OSError) and exc.filename:
        return redact_text(f"{os.fsdecode(exc.filename)}: {exc.strerror or exc}")
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 text ({exc.reason} at byte {exc.start})"
    text = " ".join(str(exc).split()) or "(no message)"
    return redact_text(f"{type(exc).__name__}: {text}")


def _dispatch(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(main_help())
        return 0
    command, rest = argv[0], argv[1:]
    if command == "--version":
        return _version_main(rest)
    own = {"tasks-dir": _tasks_dir_main, "build": _build_main, "score": _score_main, "report": _report_main,
           "demo": _demo_main, "version": _version_main, "vignette-import": _vignette_import_main,
           "reflect-compare": _reflect_compare_main, "generate": _generate_main, "analyze": _analyze_main,
           "submit": _submit_main, "leaderboard": _leaderboard_main, "replicate": _replicate_main,
           "vignette-real-vs-synthetic": _vignette_real_vs_synthetic_main}
    if command in own:
        return own[command](rest)
    if not command.startswith("-") and command not in _HARNESS_COMMANDS:
        import difflib

        close = difflib.get_close_matches(command, list(COMMANDS), n=1)
        hint = f"did you mean {close[0]!r}?" if close else "`lm-eval-bias --help` lists the commands"
        print(f"error: unknown command {command!r}; {hint}", file=sys.stderr)
        return 2
    run_harness(argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
