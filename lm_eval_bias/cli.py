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
    from datasets_builder.cli import add_build_subcommands

    parser = argparse.ArgumentParser(prog="lm-eval-bias build", description="Build a dataset in Hugging Face Hub layout.")
    subparsers = parser.add_subparsers(dest="dataset", metavar="DATASET", required=True)
    add_build_subcommands(subparsers)
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


def _with_plugin_tasks(include_path):
    """``--include_path`` value that adds the plugin's task folder to the user's (if any)."""
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
        with redaction.parsing():
            args = cli.parse_args()
            if getattr(args, "command", None) == "run" and getattr(args, "model_args", None):
                args.model_args = redaction.redact(args.model_args)
    finally:
        sys.argv = saved
    redaction.warn(getattr(args, "model", None))
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
    if getattr(args, "command", None) in ("run", "validate") and _only_plugin_tasks(getattr(args, "tasks", None)):
        _skip_builtin_task_index()
    if getattr(args, "command", None) == "run":
        with redaction.applied():
            cli.execute(args)
    else:
        cli.execute(args)


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


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["tasks-dir"]:
        print(tasks_dir())
        return 0
    if argv[:1] == ["build"]:
        return _build_main(argv[1:])
    if argv[:2] == ["score", "fact-or-fair-t2i"]:
        from lm_eval_bias.t2i_scoring import main as t2i_main

        return t2i_main(argv[2:])
    if argv[:1] == ["report"]:
        return _report_main(argv[1:])
    if argv[:1] == ["demo"]:
        from lm_eval_bias.demo import main as demo_main

        return demo_main(argv[1:])
    if argv[:1] in (["--version"], ["version"]):
        print(f"lm-eval-bias {__version__}")
        return 0
    if not argv or argv[:1] in (["-h"], ["--help"]):
        print(__doc__.strip())
        print("\nlm-eval's own help follows.\n")
        run_harness(["--help"])
        return 0
    run_harness(argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
