"""Chat-model clients for the Counterfactual VQA construction pipeline (``lm-eval-bias generate cf-vqa``).

Every client has ``.model_id`` (recorded as the pair's ``question_source``), ``.settings`` (what
changes the answers; never a credential) and ``.chat(messages) -> str`` (the raw answer text of one
OpenAI-style message list); a client that can batch also has ``.chat_many(conversations) -> list[str]``
(vLLM offline, the planted model), which the pipeline then uses. A call that cannot be completed raises :class:`ChatError` with a one-line
reason that names no credential.

- ``openai``: any OpenAI-compatible ``POST {base_url}/chat/completions`` endpoint (OpenAI, a
  ``vllm serve`` server, ...). The key is read from the environment variable named by
  ``api_key_env`` (default ``OPENAI_API_KEY``) at call time and sent only in the Authorization header;
  without it no header is sent (local servers). Bounded retries with exponential backoff on 429,
  5xx, timeouts and connection errors; other HTTP errors fail at once.
- ``vllm``: vLLM offline, ``vllm.LLM(model).chat`` (imported lazily; the ``vllm`` extra).
- ``planted``: :class:`lm_eval_bias.cf_vqa.planted_chat.PlantedChat`, deterministic answers for
  tests and demos (the chat counterpart of the ``bias-probe`` model).
"""

from __future__ import annotations

import os
import time
from typing import Any, Protocol


class ChatError(RuntimeError):
    """A chat call failed (after its retries); the message is one line and names no credential.
    ``transient``: the endpoint itself failed (unreachable, 429 or 5xx after every retry), so the
    pipeline stops the stage (finished items are kept; rerun later) instead of failing item after item;
    otherwise (e.g. HTTP 400 for one request) only that item's attempt failed."""

    def __init__(self, message: str, *, transient: bool = False):
        super().__init__(message)
        self.transient = transient


class ChatClient(Protocol):
    model_id: str
    settings: dict[str, Any]

    def chat(self, messages: list[dict[str, str]]) -> str: ...


def _number(value: str) -> bool | int | float | str:
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    for cast in (int, float):
        try:
            return cast(value)
        except ValueError:
            pass
    return value


def parse_chat_args(pairs: list[str] | None) -> dict[str, Any]:
    """``["temperature=0.7", "max_tokens=512", "enforce_eager=true"]`` ->
    ``{"temperature": 0.7, "max_tokens": 512, "enforce_eager": True}`` (numbers and true/false are typed)."""
    out: dict[str, Any] = {}
    for item in pairs or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--chat-arg must look like KEY=VALUE, got {item!r}")
        out[key.strip()] = _number(value.strip())
    return out


class OpenAIChat:
    """An OpenAI-compatible chat-completions endpoint."""

    def __init__(self, model: str, *, base_url: str = "https://api.openai.com/v1", api_key_env: str = "OPENAI_API_KEY",
                 temperature: float | None = None, max_tokens: int | None = None, retries: int = 3,
                 timeout: float = 120.0, backoff: float = 2.0, seed: int | None = None):
        if retries < 0:
            raise ValueError(f"retries must be >= 0, got {retries}")
        self.model_id = model
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self.retries, self.timeout, self.backoff = int(retries), float(timeout), float(backoff)
        self.sampling = {k: v for k, v in (("temperature", temperature), ("max_tokens", max_tokens), ("seed", seed))
                         if v is not None}
        self.settings = {"backend": "openai", "model": model, "base_url": self.base_url, **self.sampling}

    def chat(self, messages: list[dict[str, str]]) -> str:
        import requests

        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        body = {"model": self.model_id, "messages": messages, **self.sampling}
        url = f"{self.base_url}/chat/completions"
        last = "no attempt"
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            try:
                response = requests.post(url, headers=headers, json=body, timeout=self.timeout)
            except requests.RequestException as exc:
                last = f"{type(exc).__name__} contacting {url}"
                continue
            if response.status_code == 429 or response.status_code >= 500:
                last = f"HTTP {response.status_code} from {url}"
                continue
            if response.status_code >= 400:
                hint = f" (is {self.api_key_env} set?)" if response.status_code in (401, 403) else ""
                raise ChatError(f"HTTP {response.status_code} from {url}{hint}")
            try:
                return str(response.json()["choices"][0]["message"]["content"] or "")
            except (ValueError, KeyError, IndexError, TypeError):
                last = f"unreadable chat-completions response from {url}"
                continue
        raise ChatError(f"{last} (gave up after {self.retries + 1} attempts)", transient=True)


class VLLMChat:
    """vLLM offline: ``LLM(model, **engine_args).chat``."""

    def __init__(self, model: str, *, temperature: float = 0.0, max_tokens: int = 1024, seed: int = 0,
                 **engine_args: Any):
        try:
            from vllm import LLM, SamplingParams
        except ImportError as exc:
            raise ChatError(f"the vllm backend needs vLLM installed (pip install 'lm-eval-bias[vllm]'): {exc}") from None
        self.model_id = model
        self.llm = LLM(model=model, seed=seed, **engine_args)
        self.params = SamplingParams(temperature=temperature, max_tokens=max_tokens, seed=seed)
        self.settings = {"backend": "vllm", "model": model, "temperature": temperature, "max_tokens": max_tokens,
                         "seed": seed, **{k: v for k, v in engine_args.items()}}

    def chat(self, messages: list[dict[str, str]]) -> str:
        return self.chat_many([messages])[0]

    def chat_many(self, conversations: list[list[dict[str, str]]]) -> list[str]:
        """One batched ``LLM.chat`` call over several conversations (answers in order). vLLM refuses a
        request it cannot take (e.g. a prompt longer than ``max_model_len``) with a ValueError: that is
        the request's failure (:class:`ChatError`, not transient), not the stage's."""
        try:
            outputs = self.llm.chat(conversations, self.params, use_tqdm=False)
        except ValueError as exc:
            raise ChatError(f"vLLM refused the request: {' '.join(str(exc).split())[:300]}") from None
        return [output.outputs[0].text for output in outputs]
