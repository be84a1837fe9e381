"""Credentials out of everything the plugin and lm-eval write: results JSON, logged samples, log lines,
report pages and error messages.

What counts as a credential, wherever it sits in a value:

- a model argument (or a member of a nested dict, or of a JSON object given as a string) whose *name*
  looks like one (:func:`is_credential_name`: ``api_key``, ``hf_token``, ``Authorization``, ...);
- every value of a header mapping (a member named ``header``, ``headers``, ``extra_headers`` or
  ``default_headers``), whatever the header's name (``X-Goog-Api-Key``, ``X-Custom``: a proxy may
  authenticate by any header);
- in any URL inside a value or a text: the user-info (``https://user:pass@host``) and the value of every
  query parameter whose name is credential-like or one of :data:`URL_SECRET_PARAMS` (``?key=``,
  ``?sig=``, ``?code=``: Google, Azure SAS and OAuth put keys there);
- a ``Bearer``/``Basic`` token in a text (``Authorization: Bearer sk-...``);
- any text :class:`Redactor` was told is secret (the values found in ``--model_args``), wherever it
  appears later, e.g. in an exception message raised by a backend (``401 ... for url: ...?key=...``).

Every credential is replaced by :data:`REDACTED`. Nothing here imports the harness at module level.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterable
from urllib.parse import unquote_plus, urlsplit, urlunsplit

REDACTED = "<redacted>"
#: words that make a model-argument name credential-like (case-insensitive substrings)
CREDENTIAL_WORDS = ("key", "token", "secret", "password", "passwd", "auth", "credential")
#: lm-eval / vLLM / transformers model arguments that contain one of those words but hold no secret
NOT_CREDENTIALS = frozenset({
    "add_bos_token", "think_end_token", "custom_prefix_token_id", "prefix_token_id", "image_token_id",
    "max_tokens_to_sample", "max_num_batched_tokens", "max_tokens", "max_new_tokens",
})
#: names of members holding HTTP headers: every value under them is redacted, whatever the header name
HEADER_NAMES = frozenset({"header", "headers", "extra_headers", "default_headers", "http_headers"})
#: URL query parameters that carry credentials without a credential-like name
URL_SECRET_PARAMS = frozenset({"sig", "signature", "code", "x-amz-signature", "x-goog-signature", "x-amz-credential",
                               "x-amz-security-token"})
#: secrets shorter than this are not scrubbed from free text (it would garble unrelated words)
MIN_SECRET_LENGTH = 4
_TOKENIZER = re.compile(r"tokeni[sz]")
#: a URL with a scheme, up to whitespace or a quote / closing bracket
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`)\]}]*[^\s'\"<>`)\]}.,;:]")
#: ``name: value`` / ``name=value`` with optional quotes, in text that is not valid JSON
_LOOSE_PAIR = re.compile(r"""["']?([A-Za-z_][\w.-]*)["']?\s*[:=]\s*["']?([^"',}\s]+)""")
#: ``Bearer <token>`` / ``Basic <token>`` (any case)
_BEARER = re.compile(r"\b(Bearer|Basic|Token)\s+(?!<redacted>)[A-Za-z0-9._~+/=-]{4,}", re.I)

__all__ = ["CREDENTIAL_WORDS", "HEADER_NAMES", "NOT_CREDENTIALS", "REDACTED", "URL_SECRET_PARAMS", "Redactor",
           "hidden_values", "is_credential_name", "redact_model_args", "redact_text", "redact_url", "redact_value",
           "restore", "secret_parts"]


def is_credential_name(name: Any) -> bool:
    """Whether a model-argument name looks like it holds a credential: it contains key, token, secret,
    password, passwd, auth or credential (any case; ``api_key``, ``hf_token``, ``access_token``,
    ``Authorization``), unless it is a tokenizer setting (``tokenizer``, ``tokenized_requests``) or
    one of :data:`NOT_CREDENTIALS` (``add_bos_token``, ``max_tokens`` ...)."""
    lowered = str(name).lower()
    if lowered in NOT_CREDENTIALS:
        return False
    return any(word in _TOKENIZER.sub("", lowered) for word in CREDENTIAL_WORDS)


def _secret_param(name: str) -> bool:
    return is_credential_name(name) or name.lower() in URL_SECRET_PARAMS


def redact_url(url: str) -> str:
    """``url`` with its user-info (``user:pass@``) and the values of credential-like query parameters
    (:func:`is_credential_name` or :data:`URL_SECRET_PARAMS`) replaced by :data:`REDACTED`; other
    parts unchanged. A text that does not parse as a URL is returned as it is."""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:
            netloc = f"{REDACTED}@{netloc.rsplit('@', 1)[1]}"
        query = "&".join(f"{k}={REDACTED}" if sep and v and _secret_param(unquote_plus(k)) else k + sep + v
                         for k, sep, v in (item.partition("=") for item in parts.query.split("&"))) \
            if parts.query else parts.query
        if netloc == parts.netloc and query == parts.query:
            return url
        return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    except ValueError:
        return url


def redact_text(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every known secret (longest first), every URL's credentials (:func:`redact_url`)
    and every ``Bearer``/``Basic`` token replaced by :data:`REDACTED`."""
    if not isinstance(text, str) or not text:
        return text
    for secret in sorted({s for s in secrets if isinstance(s, str) and len(s) >= MIN_SECRET_LENGTH}, key=len,
                         reverse=True):
        text = text.replace(secret, REDACTED)
    if "://" in text:
        text = _URL.sub(lambda m: redact_url(m.group(0)), text)
    return _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)


def redact_value(value: Any, name: Any = None) -> Any:
    """A model-argument value with its credentials redacted: the whole value when ``name`` is
    credential-like (booleans and None kept: ``use_auth_token=True`` holds no secret), every value
    of a header mapping, dicts and lists recursively, a string holding a JSON object or list parsed,
    redacted and written back, URLs in strings through :func:`redact_url`. The input is not changed."""
    if name is not None and is_credential_name(name):
        if isinstance(value, dict):
            return {k: REDACTED for k in value}
        if value is None or isinstance(value, bool) or value == REDACTED:
            return value
        return REDACTED
    if name is not None and str(name).lower() in HEADER_NAMES:
        if isinstance(value, dict):
            return {k: (v if v is None or v == REDACTED else REDACTED) for k, v in value.items()}
        if isinstance(value, str) and value.strip().startswith("{"):
            parsed = _json(value)
            if isinstance(parsed, dict):
                return json.dumps({k: REDACTED for k in parsed})
    if isinstance(value, dict):
        return {k: redact_value(v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact_value(v) for v in value)
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in ("{", "["):
            parsed = _json(stripped)
            if isinstance(parsed, (dict, list)):
                redacted = redact_value(parsed)
                return value if redacted == parsed else json.dumps(redacted)
        return redact_text(value)
    return value


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def redact_model_args(args: Any) -> Any:
    """``args`` (a dict, possibly nested, or an lm-eval ``key=value,...`` string, parsed to a dict;
    a JSON object string is parsed too) with every credential replaced by :data:`REDACTED` (see the
    module docstring for what counts). The input is not changed."""
    if isinstance(args, str):
        stripped = args.strip()
        parsed = _json(stripped) if stripped.startswith("{") else None
        if isinstance(parsed, dict):
            args = parsed
        else:
            from lm_eval.utils import simple_parse_args_string

            args = simple_parse_args_string(args) if stripped else {}
    if not isinstance(args, dict):
        return args
    return {key: redact_value(value, key) for key, value in args.items()}


def hidden_values(original: Any, redacted: Any, path: str = "") -> list[tuple[str, Any]]:
    """(dotted name, original value) of every value :func:`redact_model_args` changed."""
    if isinstance(redacted, dict) and isinstance(original, dict):
        return [hit for key, value in redacted.items() if key in original
                for hit in hidden_values(original[key], value, f"{path}.{key}" if path else str(key))]
    if isinstance(redacted, (list, tuple)) and isinstance(original, (list, tuple)) and len(redacted) == len(original):
        return [hit for i, (o, r) in enumerate(zip(original, redacted)) for hit in hidden_values(o, r, f"{path}[{i}]")]
    if isinstance(redacted, str) and REDACTED in redacted and original is not None and original != redacted:
        return [(path, original)]
    return []


def secret_parts(original: Any, redacted: Any) -> list[str]:
    """The texts a redaction removed: a whole value, or the parts of a URL / JSON string that
    :data:`REDACTED` replaced (to scrub them from log lines and error messages)."""
    found: list[str] = []
    for _, value in hidden_values(original, redacted):
        if isinstance(value, (dict, list)):
            found += [str(v) for v in _leaves(value)]
            continue
        text = str(value)
        shown = redact_value(text)
        if shown == text:  # a whole value (credential-like name)
            found.append(text)
            continue
        found += _removed(text, shown)
    return [t for t in found if len(t) >= MIN_SECRET_LENGTH and t != REDACTED]


def _leaves(value: Any) -> Iterable[Any]:
    if isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _leaves(v)
    elif value is not None and not isinstance(value, bool):
        yield value


def _removed(text: str, shown: str) -> list[str]:
    """The pieces of ``text`` that became :data:`REDACTED` in ``shown``."""
    pieces = [re.escape(p) for p in shown.split(REDACTED)]
    match = re.fullmatch("(.*?)".join(pieces), text, re.S)
    if match:
        return [g for g in match.groups() if g]
    return [text]


def restore(value: Any, original: Any) -> Any:
    """``value`` (a redacted copy of ``original``) with each redacted value put back from ``original``
    at the same place."""
    if isinstance(value, dict) and isinstance(original, dict):
        return {k: restore(v, original[k]) if k in original else v for k, v in value.items()}
    if isinstance(value, str) and REDACTED in value and original is not None and original != value:
        return original
    return value


class Redactor:
    """The secrets of one command: the texts to scrub from logs, messages and files, collected from
    model arguments (:meth:`redact`) and the command line (:meth:`scan_argv`)."""

    def __init__(self) -> None:
        self.original: dict = {}
        self.secrets: list[str] = []
        self.keys: list[str] = []

    def add_secrets(self, texts: Iterable[str]) -> None:
        texts = {t for t in texts if isinstance(t, str) and len(t) >= MIN_SECRET_LENGTH and t != REDACTED}
        self.secrets = sorted(set(self.secrets) | texts, key=len, reverse=True)

    def redact(self, model_args: Any) -> Any:
        """``model_args`` redacted; the originals and the secret texts are remembered."""
        if isinstance(model_args, str):
            stripped = model_args.strip()
            parsed = _json(stripped) if stripped.startswith("{") else None
            if isinstance(parsed, dict):
                model_args = parsed
            else:
                from lm_eval.utils import simple_parse_args_string

                model_args = simple_parse_args_string(model_args) if stripped else {}
        if not isinstance(model_args, dict):
            return model_args
        redacted = redact_model_args(model_args)
        self.original = {**self.original, **model_args}
        self.add_secrets(secret_parts(model_args, redacted))
        self.keys += [name for name, _ in hidden_values(model_args, redacted) if name not in self.keys]
        return redacted

    def scan_argv(self, argv: list[str]) -> None:
        """Note, as secrets to scrub, every credential on the command line: credential-like
        ``key=value`` pairs and JSON members, URL user-info and query keys — also values a later
        ``--model_args`` overrides, which lm-eval logs while parsing ("Overwriting api_key: ...")."""
        for arg in argv:
            arg = str(arg)
            parsed = _json(arg.strip()) if arg.strip()[:1] in ("{", "[") else None
            if isinstance(parsed, (dict, list)):
                self.add_secrets(secret_parts(parsed, redact_value(parsed)))
                continue
            pairs = [part.split("=", 1) for part in arg.split(",") if "=" in part]
            as_dict = {key.strip().lstrip("-"): value.strip() for key, value in pairs}
            if as_dict:
                self.add_secrets(secret_parts(as_dict, {k: redact_value(v, k) for k, v in as_dict.items()}))
            if "://" in arg:
                self.add_secrets(_removed(arg, redact_text(arg)))
            # malformed JSON or odd quoting (lm-eval then echoes the text in its error): name: value pairs
            self.add_secrets(value for name, value in _LOOSE_PAIR.findall(arg) if is_credential_name(name))

    def text(self, text: str) -> str:
        """``text`` with every known secret, URL credential and bearer token redacted."""
        return redact_text(text, self.secrets)
