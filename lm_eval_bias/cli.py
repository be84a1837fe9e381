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

# -- credentials in --model_args ------------------------------------------------------------------------
REDACTED = "<redacted>"
#: words that make a model-argument name credential-like (case-insensitive substrings)
CREDENTIAL_WORDS = ("key", "token", "secret", "password", "passwd", "auth", "credential")
#: lm-eval / vLLM / transformers model arguments that contain one of those words but hold no secret
NOT_CREDENTIALS = frozenset({
    "add_bos_token", "think_end_token", "custom_prefix_token_id", "prefix_token_id", "image_token_id",
    "max_tokens_to_sample", "max_num_batched_tokens", "max_tokens", "max_new_tokens",
})
_TOKENIZER = re.compile(r"tokeni[sz]")
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


def is_credential_name(name: Any) -> bool:
    """Whether a model-argument name looks like it holds a credential: it contains key, token, secret,
    password, passwd, auth or credential (any case; ``api_key``, ``hf_token``, ``access_token``,
    ``Authorization``), unless it is a tokenizer setting (``tokenizer``, ``tokenized_requests``) or
    one of :data:`NOT_CREDENTIALS` (``add_bos_token``, ``max_tokens`` ...)."""
    lowered = str(name).lower()
    if lowered in NOT_CREDENTIALS:
        return False
    return any(word in _TOKENIZER.sub("", lowered) for word in CREDENTIAL_WORDS)


def redact_model_args(args: Any) -> Any:
    """``args`` (a dict, possibly nested, or an lm-eval ``key=value,...`` string, parsed to a dict)
    with every credential-like value replaced by :data:`REDACTED` (booleans and None are kept:
    ``use_auth_token=True`` holds no secret). The input is not changed."""
    if isinstance(args, str):
        from lm_eval.utils import simple_parse_args_string

        args = simple_parse_args_string(args) if args.strip() else {}
    if not isinstance(args, dict):
        return args
    out = {}
    for key, value in args.items():
        if isinstance(value, dict):
            out[key] = redact_model_args(value) if not is_credential_name(key) else {k: REDACTED for k in value}
        elif is_credential_name(key) and value is not None and not isinstance(value, bool) and value != REDACTED:
            out[key] = REDACTED
        else:
            out[key] = value
    return out


def _hidden(original: Any, redacted: Any, path: str = "") -> list[tuple[str, Any]]:
    """(dotted name, original value) of every value :func:`redact_model_args` replaced."""
    if isinstance(redacted, dict) and isinstance(original, dict):
        return [hit for key, value in redacted.items() if key in original
                for hit in _hidden(original[key], value, f"{path}.{key}" if path else str(key))]
    if isinstance(redacted, str) and redacted == REDACTED and original is not None and original != REDACTED:
        return [(path, original)]
    return []


def _unredact(value: Any, original: Any) -> Any:
    """``value`` with each :data:`REDACTED` put back from ``original`` at the same place."""
    if isinstance(value, dict) and isinstance(original, dict):
        return {k: _unredact(v, original[k]) if k in original else v for k, v in value.items()}
    if isinstance(value, str) and value == REDACTED and original is not None:
        return original
    return value


def _scrub(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    return text


class _ScrubFilter(logging.Filter):
    """Handler filter replacing secret values in a log record's message by :data:`REDACTED`."""

    def __init__(self, redaction: "_Redaction") -> None:
        super().__init__()
        self.redaction = redaction

    def filter(self, record: logging.LogRecord) -> bool:
        if self.redaction.secrets:
            message = record.getMessage()
            scrubbed = _scrub(message, self.redaction.secrets)
            if scrubbed != message:
                record.msg, record.args = scrubbed, None
        return True


class _ModelWithSecrets:
    """Stands for a registered model class: builds the model from model_args with the redacted
    values put back, so lm-eval records ``<redacted>`` while the constructor gets the real value."""

    def __init__(self, cls: Any, original: dict) -> None:
        self._cls, self._original = cls, original

    def create_from_arg_obj(self, arg_dict: dict, additional_config: dict | None = None):
        return self._cls.create_from_arg_obj(_unredact(arg_dict, self._original), additional_config)

    def create_from_arg_string(self, arg_string: str, additional_config: dict | None = None):
        if REDACTED not in arg_string:
            return self._cls.create_from_arg_string(arg_string, additional_config)
        from lm_eval.utils import simple_parse_args_string

        return self.create_from_arg_obj(simple_parse_args_string(arg_string), additional_config)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cls, name)


class _Redaction:
    """What one ``run`` redacted: originals (to rebuild the model) and the secret texts (to scrub logs)."""

    def __init__(self) -> None:
        self.original: dict = {}
        self.secrets: list[str] = []
        self.keys: list[str] = []

    def redact(self, model_args: Any) -> Any:
        if isinstance(model_args, str):
            from lm_eval.utils import simple_parse_args_string

            model_args = simple_parse_args_string(model_args) if model_args.strip() else {}
        if not isinstance(model_args, dict):
            return model_args
        redacted = redact_model_args(model_args)
        self.original = {**self.original, **model_args}
        hidden = _hidden(model_args, redacted)
        texts = {str(value) for _, value in hidden if len(str(value)) >= 4}  # shorter: scrubbing would garble logs
        self.secrets = sorted(set(self.secrets) | texts, key=len, reverse=True)
        self.keys += [name for name, _ in hidden if name not in self.keys]
        return redacted

    def scan_argv(self, argv: list[str]) -> None:
        """Note, as secrets to scrub from log lines, every credential-like ``key=value`` (or JSON
        member) on the command line — also values a later ``--model_args`` overrides, which lm-eval
        logs while parsing ("Overwriting api_key: ... -> ...")."""
        import json

        def walk(obj: Any) -> list[str]:
            if not isinstance(obj, dict):
                return []
            found = []
            for key, value in obj.items():
                if isinstance(value, dict):
                    found += [str(v) for v in value.values()] if is_credential_name(key) else walk(value)
                elif is_credential_name(key) and value is not None and not isinstance(value, bool):
                    found.append(str(value))
            return found

        texts: list[str] = []
        for arg in argv:
            try:
                texts += walk(json.loads(arg))
            except ValueError:
                pairs = (part.split("=", 1) for part in str(arg).split(",") if "=" in part)
                texts += [value.strip() for key, value in pairs if is_credential_name(key.strip().lstrip("-"))]
        texts = [t for t in texts if len(t) >= 4 and t != REDACTED]
        self.secrets = sorted(set(self.secrets) | set(texts), key=len, reverse=True)

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
                record.msg, record.args = _scrub(record.getMessage(), self.secrets), None
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
    harness indexes the plugin's ``lm_eval.tasks`` entry point itself (:mod:`lm_eval_bias.harness`)."""
    from lm_eval_bias.harness import harness_loads_plugin_tasks

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

    from lm_eval_bias.registration import register_plugin

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
            args = cli.parse_args()
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
        from lm_eval_bias.data import DataSourceError

        try:
            check_task_data(args.tasks, args.model_args, getattr(args, "metadata", None), getattr(args, "config", None))
        except DataSourceError as exc:
            print(f"error: {exc}", file=sys.stderr)
            raise SystemExit(2) from None
    if getattr(args, "command", None) in ("run", "validate") and _only_plugin_tasks(getattr(args, "tasks", None)):
        _skip_builtin_task_index()
    from lm_eval_bias.data import DataSourceError

    try:
        if getattr(args, "command", None) == "run":
            with redaction.applied():
                cli.execute(args)
        else:
            cli.execute(args)
    except DataSourceError as exc:  # no dataset, or one of the wrong shape: the message says what to do
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    except ValueError as exc:  # lm-eval's "Tasks not found: a, b" for names that are not the plugin's
        if not str(exc).startswith("Tasks not found: "):
            raise
        print(f"error: {exc}; `lm-eval-bias ls tasks` lists them", file=sys.stderr)
        raise SystemExit(2) from None


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


#: datasets (:data:`lm_eval_bias.data.DEFAULT_HUB_IDS` names) read by each plugin task module's doc loaders
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
        for module, function in re.findall(r"^custom_dataset:\s*!function lm_eval_bias\.tasks\.(\w+)\.(\w+)", text, re.M):
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
    """Raise :class:`~lm_eval_bias.data.DataSourceError` (whose message says how to build or point to
    the data) when a requested plugin task's dataset cannot be found — before lm-eval imports torch
    and loads the model. Reads ``hub_id`` / ``bios_hub_id`` as the tasks will (``--model_args``
    merged with ``--metadata``). Skipped with ``--config`` (its file may point tasks elsewhere); a
    dataset that is there is not loaded here."""
    if config:
        return
    from lm_eval_bias import data

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
    "build": "build a dataset (focus, focus-bios, fact-or-fair, cf-vqa, vignette) from the authors' files",
    "score": "score outputs made outside the harness (fact-or-fair-t2i: text-to-image face labels)",
    "report": "HTML bias cards, figures, tables and a leaderboard from run folders",
    "reflect-compare": "REFLECT Tables 7, 8, 10, 4 and App. B.2 mirroring: two runs compared, with intervals",
    "vignette-import": "import the VIGNETTE authors' released model outputs as logged samples (for report)",
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
        "`lm-eval-bias COMMAND --help` shows a command's options. As with lm_eval, a bare",
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
    from lm_eval_bias import t2i_scoring

    parser = argparse.ArgumentParser(prog="lm-eval-bias score",
                                     description="Score model outputs made outside the harness.")
    scorers = parser.add_subparsers(dest="scorer", metavar="SCORER", required=True)
    t2i_scoring.make_parser(scorers.add_parser("fact-or-fair-t2i", help=t2i_scoring.SUMMARY))
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


def _vignette_import_main(argv: list[str]) -> int:
    from lm_eval_bias import vignette_import

    return vignette_import.main(argv)


def _reflect_compare_main(argv: list[str]) -> int:
    from lm_eval_bias.report import reflect_compare

    return reflect_compare.main(argv)


def _demo_main(argv: list[str]) -> int:
    from lm_eval_bias import demo

    return demo.main(argv, run_harness)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(main_help())
        return 0
    command, rest = argv[0], argv[1:]
    if command == "--version":
        return _version_main(rest)
    own = {"tasks-dir": _tasks_dir_main, "build": _build_main, "score": _score_main, "report": _report_main,
           "demo": _demo_main, "version": _version_main, "vignette-import": _vignette_import_main,
           "reflect-compare": _reflect_compare_main}
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
