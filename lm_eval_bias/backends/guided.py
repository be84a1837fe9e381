"""``vllm-vlm-guided``: lm-eval's ``vllm-vlm`` with each answer constrained to the prompt's options.

VIGNETTE constrained its models' outputs to the valid choices (with Outlines). This backend does the
same with vLLM's guided choice (``StructuredOutputsParams(choice=...)``), per request, from the
answer format the plugin's prompts ask for (:func:`allowed_answers`):

- REFLECT 2AFC (``Answer with ONLY one letter: "A" or "B"``): ``A``, ``B``;
- REFLECT MCQ (``one capital letter from A to F``): the letters of that range;
- VIGNETTE (lettered ``Options:`` + "Answer with the letter of one option."): those letters;
- anything else (salary amounts, FACT-OR-FAIR JSON, Counterfactual VQA explanations): unconstrained.

It is a different model name on purpose: ``config.model`` in the results says ``vllm-vlm-guided``,
the report labels such runs ``[guided]`` and never merges them with free runs of the same weights.
All ``vllm-vlm`` model_args apply.
"""

from __future__ import annotations

import re

_TWO_LETTERS = re.compile(r'Answer with ONLY one letter: "([A-Z])" or "([A-Z])"')
_LETTER_RANGE = re.compile(r"one capital letter from ([A-Z]) to ([A-Z])")
_OPTION_LINE = re.compile(r"^([A-Z])\. ", re.MULTILINE)
_OPTIONS_INSTRUCTION = "Answer with the letter of one option."


def allowed_answers(prompt: str) -> list[str] | None:
    """The answers a plugin prompt allows, or None when its answer is not a letter."""
    found = _TWO_LETTERS.search(prompt)
    if found:
        return [found.group(1), found.group(2)]
    found = _LETTER_RANGE.search(prompt)
    if found:
        return [chr(c) for c in range(ord(found.group(1)), ord(found.group(2)) + 1)]
    if _OPTIONS_INSTRUCTION in prompt and "Options:\n" in prompt:
        letters = _OPTION_LINE.findall(prompt.split("Options:\n", 1)[1])
        return letters or None
    return None


def _model_class():
    from lm_eval.models.vllm_vlms import VLLM_VLM
    from vllm import SamplingParams
    from vllm.sampling_params import StructuredOutputsParams

    class GuidedVLLMVLM(VLLM_VLM):
        """vllm-vlm whose generations are restricted to :func:`allowed_answers` per request."""

        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)  # with data_parallel_size > 1 no engine is built here
            if self.data_parallel_size > 1:
                # lm-eval's data-parallel path builds its own SamplingParams in Ray workers, so the
                # constraint could not be applied; refuse rather than run unconstrained under this name.
                raise ValueError("vllm-vlm-guided does not support data_parallel_size > 1; use "
                                 "data_parallel_size=1, or several servers/shards (docs/backends.md#beyond-one-machine)")

        def _multimodal_model_generate(self, requests=None, generate=False, max_tokens=None, stop=None, **kwargs):
            if not generate or not requests:
                return super()._multimodal_model_generate(requests, generate, max_tokens, stop, **kwargs)
            params = []
            for request in requests:
                choices = allowed_answers(request["prompt"])
                if choices is None:  # VIGNETTE *_authors prompts list no options: the pair image identifies them
                    from lm_eval_bias.vignette.tasks import authors_choices

                    images = (request.get("multi_modal_data") or {}).get("image")
                    choices = authors_choices(images if isinstance(images, list) or images is None else [images])
                extra = {"structured_outputs": StructuredOutputsParams(choice=choices)} if choices else {}
                params.append(SamplingParams(max_tokens=max_tokens, stop=stop, **kwargs, **extra))
            extra = {"lora_request": self.lora_request} if self.lora_request is not None else {}
            return self.model.generate(requests, sampling_params=params, use_tqdm=self.batch_size == "auto", **extra)

    return GuidedVLLMVLM


_CLASS = None


def __getattr__(name: str):
    """``GuidedVLLMVLM`` is built on first use, so importing the plugin never imports vLLM."""
    global _CLASS
    if name == "GuidedVLLMVLM":
        if _CLASS is None:
            _CLASS = _model_class()
        return _CLASS
    raise AttributeError(name)
