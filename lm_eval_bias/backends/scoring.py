"""Log-likelihoods of continuations after prompts *with images*: ``hf-multimodal-logprobs`` and ``vllm-vlm-logprobs``.

lm-eval 0.4.13's multimodal backends answer only ``generate_until`` when a request carries images
(``hf-multimodal`` raises NotImplementedError for ``loglikelihood``; ``vllm-vlm`` inherits the text-only
one, which drops the images). The plugin's letter tasks scored by probability (``focus_*_logprob``,
``multiple_choice`` over the answer letters; ``docs/probability-scoring.md``) need them, so these two
backends implement ``loglikelihood`` for requests ``(context, continuation, {"visual": [images]})``;
every other request type, and all their model_args, are those of the parent backend.

What is computed (both backends): the context is prepared exactly as ``generate_until`` prepares it
(``<image>`` placeholders replaced by the model's image token when no chat template was applied, at most
``max_images`` images, ``image_width`` / ``image_height`` / ``image_max_side`` resizing, the processor's
special tokens), trailing whitespace of the context moved to the continuation (as lm-eval does for text
models), and the continuation's tokens are those that tokenizing ``context + continuation`` adds to the
tokens of ``context`` (lm-eval's rule). The answer is ``(sum of log p(token | everything before it) over
the continuation's tokens, whether every continuation token is the argmax)`` — lm-eval's
``(loglikelihood, is_greedy)``. A request without images (or without the image dict at all) is scored
the same way with text only.

- ``hf-multimodal-logprobs`` (:class:`HFMultimodalLogprobsLM`, subclass of
  ``lm_eval.models.hf_vlms.HFMultimodalLM``): requests with the same context and images are encoded once
  (one processor call: the images are processed once per doc, not once per answer letter), and
  requests whose continuations are one token long share one forward pass of the context, read at its
  last position (a 2AFC doc costs one forward pass for A and B). Longer continuations get one forward
  pass over context + continuation. Forward passes are batched ``batch_size`` at a time (right-padded,
  with an attention mask), grouping inputs whose image tensors can be concatenated.
- ``vllm-vlm-logprobs`` (:class:`VLLMVLMLogprobs`, subclass of ``lm_eval.models.vllm_vlms.VLLM_VLM``):
  with ``logprob_source=token_ids`` (default) the requests of one context with one-token
  continuations become one engine request for the context alone with ``SamplingParams(max_tokens=1,
  temperature=0, logprob_token_ids=[the continuation tokens])``: vLLM returns the exact log-probability
  of each listed token (from the raw logits, whatever its rank; at most 128 ids per request), and the
  greedy token. Other continuations, and ``logprob_source=prompt_logprobs``, send ``context +
  continuation`` with ``prompt_logprobs=1``, which returns the log-probability of every prompt token
  (exact, whatever its rank) and the top-1 token at each position. Requests are sent to the engine
  ``batch_size`` at a time (``auto``: all at once). ``data_parallel_size > 1`` is refused (lm-eval's
  data-parallel path would score without these rules).

Both store each answer in lm-eval's request cache under the request's full key (images included), so
``--use_cache`` runs that die mid-way resume.

The classes are built on first use, so importing the plugin never imports torch, transformers or vLLM.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import Any

logger = logging.getLogger(__name__)

IMAGE_PLACEHOLDER = "<image>"
#: vLLM's limit on ``SamplingParams.logprob_token_ids`` (``vllm.sampling_params.MAX_LOGPROB_TOKEN_IDS``).
MAX_LOGPROB_TOKEN_IDS = 128
LOGPROB_SOURCES = ("token_ids", "prompt_logprobs")


def split_trailing_whitespace(context: str, continuation: str) -> tuple[str, str]:
    """lm-eval's ``_encode_pair`` rule: trailing whitespace of the context belongs to the continuation."""
    n = len(context) - len(context.rstrip())
    if n:
        return context[:-n], context[-n:] + continuation
    return context, continuation


def continuation_tokens(tokenizer, context: str, continuation: str) -> list[int]:
    """Tokens that tokenizing ``context + continuation`` adds to the tokens of ``context`` (lm-eval's
    rule, text only: image placeholders stay one token each, which does not change the tail). A
    tokenizer that merges across the boundary is warned about; the tail is still what is scored."""
    whole = list(tokenizer(context + continuation)["input_ids"])
    head = list(tokenizer(context)["input_ids"])
    if whole[: len(head)] != head:
        logger.warning("tokenizing context + continuation changes the context's last tokens (%r): the continuation is "
                       "scored as the tokens after the context's length", continuation)
    tokens = whole[len(head):]
    if not tokens:
        raise ValueError(f"continuation {continuation!r} adds no token to the context")
    return tokens


def _request_parts(request) -> tuple[str, str, list]:
    args = request.args
    context, continuation = args[0], args[1]
    aux = args[2] if len(args) > 2 and isinstance(args[2], dict) else {}
    return context, continuation, list(aux.get("visual") or [])


def _group_key(context: str, images: list) -> tuple:
    """Requests with the same prepared context and the same image objects share their encoding."""
    return (context, tuple(id(image) for image in images))


# --------------------------------------------------------------------------------------------------
# hf-multimodal-logprobs
# --------------------------------------------------------------------------------------------------
def _hf_class():
    import torch
    import torch.nn.functional as F
    from lm_eval.models.hf_vlms import HFMultimodalLM
    from lm_eval.models.utils import replace_placeholders, resize_image
    from tqdm import tqdm

    class HFMultimodalLogprobsLM(HFMultimodalLM):
        """``hf-multimodal`` with ``loglikelihood`` for requests with images (module docstring)."""

        def _prepare(self, request) -> tuple[str, str, list]:
            context, continuation, images = _request_parts(request)
            if not self.chat_applied:
                context = replace_placeholders(context, IMAGE_PLACEHOLDER, self.image_token, self.max_images)
            images = [resize_image(img, self.image_width, self.image_height, self.image_max_side)
                      for img in images[: self.max_images]]
            if self.rgb:
                images = [img.convert("RGB") for img in images]
            context, continuation = split_trailing_whitespace(context, continuation)
            return context, continuation, images

        def _encode_context(self, context: str, images: list) -> tuple[list[int], dict, dict]:
            """(context tokens with image tokens expanded, per-image tensors, per-token extra tensors)."""
            if images:
                per_text = images if getattr(self.config, "model_type", "") == "llava" else [images]
                encoding = self.processor(text=[context], images=per_text, return_tensors="pt")
            else:
                encoding = self.processor(text=[context], return_tensors="pt")
            ids = encoding.pop("input_ids")
            encoding.pop("attention_mask", None)
            per_token, per_image = {}, {}
            for key, value in encoding.items():
                if isinstance(value, torch.Tensor) and value.dim() >= 2 and tuple(value.shape[:2]) == tuple(ids.shape):
                    per_token[key] = value[0]
                elif isinstance(value, torch.Tensor):
                    per_image[key] = value
            return ids[0].tolist(), per_image, per_token

        def loglikelihood(self, requests, disable_tqdm: bool = False) -> list[tuple[float, bool]]:
            if not requests:
                return []
            groups: dict[tuple, dict[str, Any]] = {}
            targets: list[tuple[tuple, list[int]]] = []
            for request in requests:
                context, continuation, images = self._prepare(request)
                key = _group_key(context, images)
                if key not in groups:
                    groups[key] = {"context": context, "images": images}
                targets.append((key, continuation_tokens(self.tokenizer, context, continuation)))
            # one unit = one forward pass: a context (+ a continuation prefix) and the requests read from it
            units: dict[tuple, list[int]] = defaultdict(list)
            for index, (key, tokens) in enumerate(targets):
                units[(key, tuple(tokens[:-1]))].append(index)
            encoded = {}
            for key, group in groups.items():
                encoded[key] = self._encode_context(group["context"], group["images"])
            plan = []
            for (key, prefix), members in units.items():
                ctx_ids, per_image, per_token = encoded[key]
                signature = tuple(sorted((k, tuple(v.shape[1:]), str(v.dtype)) for k, v in per_image.items()))
                signature += tuple(sorted((k, tuple(v.shape[1:]), str(v.dtype)) for k, v in per_token.items()))
                plan.append((signature, len(ctx_ids) + len(prefix), key, prefix, members))
            plan.sort(key=lambda u: (u[0], -u[1]))
            results: list[tuple[float, bool] | None] = [None] * len(requests)
            batch = max(1, int(self.batch_size))
            pbar = tqdm(total=len(requests), disable=(disable_tqdm or self.rank != 0),
                        desc="Scoring continuations with text+image input")
            start = 0
            while start < len(plan):
                chunk = [plan[start]]
                while (start + len(chunk) < len(plan) and len(chunk) < batch
                       and plan[start + len(chunk)][0] == chunk[0][0]):
                    chunk.append(plan[start + len(chunk)])
                start += len(chunk)
                self._score_chunk(chunk, encoded, targets, requests, results)
                pbar.update(sum(len(u[4]) for u in chunk))
            pbar.close()
            return results  # type: ignore[return-value]

        def _score_chunk(self, chunk, encoded, targets, requests, results) -> None:
            longest = max(u[1] for u in chunk)
            if longest > self.max_length:
                raise ValueError(f"a prompt of {longest} tokens (images expanded) exceeds max_length {self.max_length}; "
                                 "raise max_length or shrink the images (image_max_side)")
            pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
            input_ids = torch.full((len(chunk), longest), pad, dtype=torch.long)
            attention = torch.zeros((len(chunk), longest), dtype=torch.long)
            per_image: dict[str, list] = defaultdict(list)
            per_token: dict[str, Any] = {}
            for row, (_, length, key, prefix, _) in enumerate(chunk):
                ctx_ids, images, tokens = encoded[key]
                input_ids[row, :length] = torch.tensor(ctx_ids + list(prefix), dtype=torch.long)
                attention[row, :length] = 1
                for name, value in images.items():
                    per_image[name].append(value)
                for name, value in tokens.items():
                    if name not in per_token:
                        per_token[name] = torch.zeros((len(chunk), longest, *value.shape[1:]), dtype=value.dtype)
                    per_token[name][row, : len(ctx_ids)] = value
            kwargs = {name: torch.cat(values, dim=0) for name, values in per_image.items()}
            kwargs.update(per_token)
            kwargs = {name: (value.to(self.device, self.model.dtype) if value.is_floating_point() else value.to(self.device))
                      for name, value in kwargs.items()}
            with torch.no_grad():
                logits = self.model(input_ids=input_ids.to(self.device), attention_mask=attention.to(self.device),
                                    **kwargs).logits
            for row, (_, length, key, prefix, members) in enumerate(chunk):
                n_ctx = len(encoded[key][0])
                # positions n_ctx - 1 ... length - 1 predict the continuation tokens
                logprobs = F.log_softmax(logits[row, n_ctx - 1: length].float(), dim=-1)
                greedy = logprobs.argmax(dim=-1).tolist()
                for index in members:
                    tokens = targets[index][1]
                    value = float(sum(logprobs[m, t] for m, t in enumerate(tokens)))
                    answer = (value, all(greedy[m] == t for m, t in enumerate(tokens)))
                    results[index] = answer
                    self.cache_hook.add_partial("loglikelihood", requests[index].args, answer)

    return HFMultimodalLogprobsLM


# --------------------------------------------------------------------------------------------------
# vllm-vlm-logprobs
# --------------------------------------------------------------------------------------------------
def _vllm_class():
    from lm_eval.models.utils import replace_placeholders, resize_image
    from lm_eval.models.vllm_vlms import VLLM_VLM
    from tqdm import tqdm
    from vllm import SamplingParams, TextPrompt

    class VLLMVLMLogprobs(VLLM_VLM):
        """``vllm-vlm`` with ``loglikelihood`` for requests with images (module docstring)."""

        def __init__(self, *args, logprob_source: str = "token_ids", **kwargs) -> None:
            if logprob_source not in LOGPROB_SOURCES:
                raise ValueError(f"vllm-vlm-logprobs: logprob_source must be one of {LOGPROB_SOURCES}, got {logprob_source!r}")
            super().__init__(*args, **kwargs)
            if self.data_parallel_size > 1:
                raise ValueError("vllm-vlm-logprobs does not support data_parallel_size > 1; use data_parallel_size=1, "
                                 "or several servers/shards (docs/backends.md#beyond-one-machine)")
            self.logprob_source = logprob_source

        def _prepare(self, request) -> tuple[str, str, list]:
            context, continuation, images = _request_parts(request)
            if not self.chat_applied:
                context = replace_placeholders(context, IMAGE_PLACEHOLDER, IMAGE_PLACEHOLDER, self.max_images)
            images = [resize_image(img, self.image_width, self.image_height, self.image_max_side)
                      for img in images[: self.max_images]]
            context, continuation = split_trailing_whitespace(context, continuation)
            return context, continuation, images

        @staticmethod
        def _prompt(text: str, images: list):
            if not images:
                return TextPrompt(prompt=text)
            from lm_eval_bias.backends import vllm_order

            prompt = TextPrompt(prompt=text, multi_modal_data={"image": images})
            if vllm_order._switches["uuids"] and vllm_order.uuids_supported():  # stable image ids, where accepted
                vllm_order.add_uuids(prompt)
            return prompt

        def loglikelihood(self, requests, disable_tqdm: bool = False) -> list[tuple[float, bool]]:
            if not requests:
                return []
            prepared = []
            groups: dict[tuple, list[int]] = defaultdict(list)
            for index, request in enumerate(requests):
                context, continuation, images = self._prepare(request)
                tokens = continuation_tokens(self.tokenizer, context, continuation)
                prepared.append((context, continuation, images, tokens))
                groups[_group_key(context, images)].append(index)
            # engine jobs: ("ids", prompt, token ids, member indices) or ("prompt", prompt, None, [index])
            jobs = []
            for members in groups.values():
                context, _, images, _ = prepared[members[0]]
                single = [i for i in members if len(prepared[i][3]) == 1]
                rest = [i for i in members if len(prepared[i][3]) != 1]
                if self.logprob_source == "token_ids" and single:
                    ids = sorted({prepared[i][3][0] for i in single})
                    for start in range(0, len(ids), MAX_LOGPROB_TOKEN_IDS):
                        part = set(ids[start: start + MAX_LOGPROB_TOKEN_IDS])
                        jobs.append(("ids", self._prompt(context, images), sorted(part),
                                     [i for i in single if prepared[i][3][0] in part]))
                else:
                    rest = members
                for i in rest:
                    ctx, cont, imgs, _ = prepared[i]
                    jobs.append(("prompt", self._prompt(ctx + cont, imgs), None, [i]))
            results: list[tuple[float, bool] | None] = [None] * len(requests)
            size = len(jobs) if self.batch_size == "auto" else max(1, int(self.batch_size))
            pbar = tqdm(total=len(requests), disable=(disable_tqdm or self.rank != 0),
                        desc="Scoring continuations with text+image input")
            for start in range(0, len(jobs), size):
                chunk = jobs[start: start + size]
                params = [SamplingParams(temperature=0.0, max_tokens=1, detokenize=False, logprob_token_ids=ids)
                          if kind == "ids" else
                          SamplingParams(temperature=0.0, max_tokens=1, detokenize=False, prompt_logprobs=1)
                          for kind, _, ids, _ in chunk]
                extra = {"lora_request": self.lora_request} if self.lora_request is not None else {}
                outputs = self.model.generate([prompt for _, prompt, _, _ in chunk], sampling_params=params,
                                              use_tqdm=False, **extra)
                for (kind, _, _, members), output in zip(chunk, outputs, strict=True):
                    for i in members:
                        tokens = prepared[i][3]
                        answer = self._from_ids(output, tokens[0]) if kind == "ids" else self._from_prompt(output, tokens)
                        results[i] = answer
                        self.cache_hook.add_partial("loglikelihood", requests[i].args, answer)
                    pbar.update(len(members))
            pbar.close()
            return results  # type: ignore[return-value]

        @staticmethod
        def _from_ids(output, token: int) -> tuple[float, bool]:
            completion = output.outputs[0]
            entry = completion.logprobs[0][token]
            return float(getattr(entry, "logprob", entry)), int(completion.token_ids[0]) == int(token)

        @staticmethod
        def _from_prompt(output, tokens: list[int]) -> tuple[float, bool]:
            n = len(tokens)
            prompt_ids = list(output.prompt_token_ids)
            if prompt_ids[-n:] != list(tokens):
                raise ValueError(f"vLLM tokenized the prompt's end as {prompt_ids[-n:]}, expected the continuation "
                                 f"{list(tokens)}")
            total, greedy = 0.0, True
            for position, token in zip(range(len(prompt_ids) - n, len(prompt_ids)), tokens):
                entries = output.prompt_logprobs[position]
                total += float(getattr(entries[token], "logprob", entries[token]))
                best = max(entries, key=lambda t: getattr(entries[t], "logprob", entries[t]))
                greedy = greedy and best == token
            return total, greedy

    return VLLMVLMLogprobs


_BUILDERS = {"HFMultimodalLogprobsLM": _hf_class, "VLLMVLMLogprobs": _vllm_class}
_CLASSES: dict[str, type] = {}


def __getattr__(name: str):
    """The backend classes are built on first use (importing them imports torch / vLLM)."""
    if name in _BUILDERS:
        if name not in _CLASSES:
            _CLASSES[name] = _BUILDERS[name]()
        return _CLASSES[name]
    raise AttributeError(name)
