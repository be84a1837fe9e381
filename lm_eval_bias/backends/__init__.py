"""Small, documented adaptations that let lm-eval's own backends run where their import-time checks
assume a particular installation (see :mod:`.vllm_compat`)."""


def install_request_patches_if_lm_eval_loaded() -> None:
    """Inside a process that already uses lm-eval's model API: the image-keyed request cache
    (:mod:`.cache_keys`) and, with it, the photo-grouped vLLM order (:mod:`.vllm_order`), so plain
    ``lm_eval --include_path`` runs get both. Elsewhere (building datasets, reports) nothing."""
    from lm_eval_bias.backends import cache_keys

    if cache_keys.install_if_lm_eval_loaded():
        from lm_eval_bias.backends import vllm_order

        vllm_order.install()
