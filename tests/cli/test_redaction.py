"""Credentials never reach an output file, a log line or a report page, wherever they sit in a value:
URL user-info and query parameters of ``base_url``, a header value whose name does not look like a
credential, nested JSON in ``--model_args``, a credential-named argument, and the error message of a
backend that fails (``401 ... for url: ...?key=...``).

The runs are real: ``lm-eval-bias run`` (in-process, through :func:`lm_eval_bias.cli.main`) with
``local-chat-completions`` against a tiny HTTP server on 127.0.0.1 started here (answering, then
refusing with 401), and with ``bias-probe``; then ``lm-eval-bias report`` over their folders. Every
file written and everything printed is grepped for each planted secret."""

from __future__ import annotations

import contextlib
import http.server
import json
import logging
import sys
import threading
from pathlib import Path

import pytest

from lm_eval_bias.cli import main
from lm_eval_bias.core.redaction import (
    REDACTED,
    Redactor,
    redact_model_args,
    redact_text,
    redact_url,
    restore,
    secret_parts,
)

TASK = "focus_mcq_education"
SECRETS = {
    "userinfo": "PassWdUser1x",
    "query": "QueryKey2xyz",
    "header": "HeaderVal3xyz",
    "nested_json": "NestedJson4xyz",
    "argument": "ArgSecret5xyz",
    "json_arg": "JsonArgSecret6",
}


# -- the rules, value by value --------------------------------------------------------------------------------
def test_urls_lose_userinfo_and_credential_query_values_only():
    assert redact_url("https://bob:pw1234@api.example.com/v1/chat/completions?key=abc123&api-version=2024") == (
        f"https://{REDACTED}@api.example.com/v1/chat/completions?key={REDACTED}&api-version=2024")
    assert redact_url("https://x.blob.core.windows.net/c?sv=2020&sig=s3cr3t%2B&se=1") == (
        f"https://x.blob.core.windows.net/c?sv=2020&sig={REDACTED}&se=1")
    assert redact_url("http://127.0.0.1:8000/v1?model=qwen") == "http://127.0.0.1:8000/v1?model=qwen"
    assert redact_text("401 Client Error: Unauthorized for url: http://h/v1?access_token=tok999. Retry") == (
        f"401 Client Error: Unauthorized for url: http://h/v1?access_token={REDACTED}. Retry")
    assert redact_text("Authorization: Bearer sk-12345678") == f"Authorization: Bearer {REDACTED}"
    assert redact_text("seen abcdef and abc", ["abcdef", "abc"]) == f"seen {REDACTED} and abc"  # < 4 chars kept


def test_model_args_headers_nested_json_and_urls():
    args = {"model": "m", "base_url": "http://u:p4ss@h/v1?key=K1234", "header": {"X-Trace": "H1234", "Accept": "json"},
            "extra": json.dumps({"client": {"api_key": "J1234"}, "n": 1}), "api_key": "A1234", "use_auth_token": True,
            "max_tokens": 8}
    redacted = redact_model_args(args)
    assert redacted == {"model": "m", "base_url": f"http://{REDACTED}@h/v1?key={REDACTED}",
                        "header": {"X-Trace": REDACTED, "Accept": REDACTED},
                        "extra": json.dumps({"client": {"api_key": REDACTED}, "n": 1}), "api_key": REDACTED,
                        "use_auth_token": True, "max_tokens": 8}
    assert sorted(secret_parts(args, redacted)) == sorted(["u:p4ss", "K1234", "H1234", "json", "J1234", "A1234"])
    assert restore(redacted, args) == args
    assert redact_model_args(json.dumps({"auth": {"token": "T1234"}, "seed": 1})) == {"auth": {"token": REDACTED},
                                                                                     "seed": 1}
    redactor = Redactor()
    redactor.scan_argv(["--model_args", "base_url=http://h/x?key=K5678,seed=1", '{"header": {"X": "H5678"}}'])
    assert "K5678" not in redactor.text("failed for http://h/x?key=K5678 and H5678")
    redactor.scan_argv(['{"seed": 1, "api_key": "M1234", '])  # malformed JSON, echoed by lm-eval's parse error
    assert redactor.text('Invalid JSON: {"seed": 1, "api_key": "M1234", ') == f'Invalid JSON: {{"seed": 1, "api_key": "{REDACTED}", '


def test_a_malformed_model_args_error_is_one_line_without_the_secret(capsys):
    code = None
    try:
        with _lm_eval_logs_here():
            code = main(["run", "--model", "bias-probe", "--model_args", '{"seed": 1, "api_key": "Malformed7x", ',
                         "--tasks", TASK])
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2 and err.strip().splitlines()[-1].startswith("error: run: bad argument: Invalid JSON")
    assert "Malformed7x" not in err and "Traceback" not in err


# -- real runs -------------------------------------------------------------------------------------------------
class _ChatServer(http.server.ThreadingHTTPServer):
    """OpenAI-style chat completions: answers "A", or 401 for paths under /deny/. Records the headers
    and URLs it got (the real credentials must still reach the backend)."""

    def __init__(self):
        self.seen: list[tuple[str, dict]] = []
        super().__init__(("127.0.0.1", 0), _Handler)


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.seen.append((self.path, dict(self.headers)))
        if self.path.startswith("/deny/"):
            body, status = b'{"error": "unauthorized"}', 401
        else:
            body, status = json.dumps({"choices": [{"index": 0, "message": {"content": "A"}}]}).encode(), 200
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def chat_server():
    server = _ChatServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _api_args(port: int, path: str) -> str:
    return json.dumps({
        "model": "probe-chat",
        "base_url": f"http://alice:{SECRETS['userinfo']}@127.0.0.1:{port}{path}?key={SECRETS['query']}",
        "header": {"X-Trace-Id": SECRETS["header"]},
        "extra_body": json.dumps({"client": {"api_key": SECRETS["nested_json"]}}),
        "max_retries": 1, "tokenized_requests": False, "timeout": 20,
    })


@contextlib.contextmanager
def _lm_eval_logs_here():
    """lm-eval configures its log handler once per process, on the sys.stderr of that moment (maybe an
    earlier test's closed capture): point it at the current stderr, where the greps look."""
    handlers = [h for h in logging.getLogger("lm_eval").handlers if isinstance(h, logging.StreamHandler)]
    saved = [h.stream for h in handlers]
    for handler in handlers:
        handler.stream = sys.stderr  # not setStream: it flushes the old, possibly closed, stream
    try:
        yield
    finally:
        for handler, stream in zip(handlers, saved):
            handler.stream = stream


def _run(argv, capfd) -> tuple[int, str]:
    try:
        with _lm_eval_logs_here():
            code = main(argv)
    except SystemExit as exc:
        code = exc.code
    captured = capfd.readouterr()
    return code, captured.out + captured.err


def _assert_clean(text: str, where: str) -> None:
    for place, secret in SECRETS.items():
        assert secret not in text, f"{place} secret in {where}"


@pytest.mark.slow
def test_no_secret_in_any_output_log_or_report_page(focus_env, chat_server, tmp_path, capfd, monkeypatch):
    monkeypatch.setenv("LM_EVAL_BIAS_BOOTSTRAP_ITERS", "10")
    monkeypatch.setenv("OPENAI_API_KEY", "unused-env-key")
    port = chat_server.server_address[1]
    common = ["--tasks", TASK, "--limit", "2", "--log_samples", "--verbosity", "DEBUG", "--show_config"]
    logs = []

    api_out = tmp_path / "api"
    code, text = _run(["run", "--model", "local-chat-completions", "--model_args", _api_args(port, "/v1/chat/completions"),
                       "--apply_chat_template", "--output_path", str(api_out), *common], capfd)
    logs.append(text)
    assert code in (0, None), text[-3000:]
    assert len(chat_server.seen) == 2
    path, headers = chat_server.seen[0]
    assert path.endswith(f"?key={SECRETS['query']}") and headers["X-Trace-Id"] == SECRETS["header"]  # real values used

    code, text = _run(["run", "--model", "local-chat-completions", "--model_args",
                       _api_args(port, "/deny/v1/chat/completions"), "--apply_chat_template",
                       "--output_path", str(tmp_path / "denied"), *common], capfd)
    logs.append(text)
    assert code == 1
    last = text.strip().splitlines()[-1]
    assert last.startswith("error: run: HTTPError: 401 Client Error") and f"?key={REDACTED}" in last, last
    assert "Traceback" not in text

    probe_out = tmp_path / "probe"
    probe_args = json.dumps({"seed": 1, "api_key": SECRETS["argument"], "auth": {"token": SECRETS["json_arg"]}})
    code, text = _run(["run", "--model", "bias-probe", "--model_args", probe_args, "--output_path", str(probe_out),
                       *common], capfd)
    logs.append(text)
    assert code in (0, None), text[-3000:]

    report = tmp_path / "report"
    code, text = _run(["report", str(api_out), str(probe_out), "--output", str(report)], capfd)
    logs.append(text)
    assert code == 0, text[-2000:]

    for i, text in enumerate(logs):
        _assert_clean(text, f"console of command {i}")
    written = [p for root in (api_out, tmp_path / "denied", probe_out, report) for p in root.rglob("*") if p.is_file()]
    assert any(p.name.endswith(".html") for p in written) and any(p.name.startswith("results_") for p in written)
    for file in written:
        _assert_clean(file.read_bytes().decode("utf-8", "replace"), str(file))
    results = json.loads(next(api_out.rglob("results_*.json")).read_text())
    assert results["config"]["model_args"]["base_url"] == (
        f"http://{REDACTED}@127.0.0.1:{port}/v1/chat/completions?key={REDACTED}")
    assert results["configs"][TASK]["metadata"]["header"] == {"X-Trace-Id": REDACTED}
