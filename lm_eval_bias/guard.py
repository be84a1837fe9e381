"""Stop a run before it starts when the model would receive fewer images than a doc carries.

lm-eval's API backends pass at most ``max_images`` images per request (default 1) and silently drop
the rest; ``hf-multimodal`` and ``vllm-vlm`` drop images beyond their ``max_images`` as well. A 2AFC
doc without its second image is a different question, so ``lm-eval-bias run`` checks, before loading
the model, that every requested task's images per doc fit the backend's limit, and names the argument
to set when they do not. :func:`check_image_budget` is the same check for Python callers.
"""

from __future__ import annotations

import inspect
import re
from typing import Any, Iterable, Mapping

UNLIMITED = 10**9


class ImageBudgetError(ValueError):
    pass


def images_per_task() -> dict[str, int]:
    """Images per doc of every plugin task and group (a group: the maximum over its tasks), read from the
    task YAMLs (the generator's output, kept equal to it by tests/core/test_discovery.py: reading the
    files does not import every benchmark's statistics at start-up)."""
    from lm_eval_bias import tasks_dir

    tasks: dict[str, int] = {}
    groups: dict[str, list[str]] = {}
    for path in sorted(tasks_dir().glob("*/*.yaml")):
        text = path.read_text(encoding="utf-8")
        task = re.search(r"^task: (\S+)$", text, re.M)
        if task:
            tasks[task.group(1)] = 2 if "doc_to_image_pair" in text else (1 if "doc_to_image:" in text else 0)
        group = re.search(r"^group: (\S+)$", text, re.M)
        if group:
            groups[group.group(1)] = re.findall(r"^  - (\S+)$", text, re.M)

    def count(name: str) -> int:
        if name in tasks:
            return tasks[name]
        return max((count(member) for member in groups.get(name, [])), default=0)

    return {name: count(name) for name in [*tasks, *groups]}


def model_image_limit(model: str, model_args: Mapping[str, Any]) -> tuple[int, str | None]:
    """(images per request the backend passes, name of the argument that raises it)."""
    from lm_eval.api.registry import get_model

    from lm_eval_bias.core.registration import register_plugin

    register_plugin()
    if "max_images" in model_args:
        return int(model_args["max_images"]), "max_images"
    try:
        cls = get_model(model)
        if hasattr(cls, "real_class"):  # a plugin backend's stand-in (models/deferred.py): the class it builds
            cls = cls.real_class()
    except ImportError:  # the backend's own dependencies are missing: lm-eval will report that itself
        return UNLIMITED, None
    parameter = None
    for klass in cls.__mro__:  # subclasses often take **kwargs and pass max_images to a base class
        init = klass.__dict__.get("__init__")
        if init is not None:
            parameter = inspect.signature(init).parameters.get("max_images")
            if parameter is not None:
                break
    if parameter is not None and parameter.default is not inspect.Parameter.empty:
        return int(parameter.default), "max_images"
    return (UNLIMITED, None) if getattr(cls, "MULTIMODAL", False) else (0, None)


def check_image_budget(model: str, model_args: Mapping[str, Any] | str | None, tasks: Iterable[str]) -> None:
    """Raise :class:`ImageBudgetError` naming the argument to set when a plugin task's docs carry more
    images than ``model`` would pass. Tasks that are not the plugin's are ignored."""
    from lm_eval.utils import simple_parse_args_string

    args = simple_parse_args_string(model_args) if isinstance(model_args, str) else dict(model_args or {})
    needs = images_per_task()
    requested = {t: needs[t] for t in tasks if t in needs}
    if not requested:
        return
    worst = max(requested, key=requested.get)
    if requested[worst] == 0:
        return
    limit, argument = model_image_limit(model, args)
    if limit >= requested[worst]:
        return
    if argument is None:
        raise ImageBudgetError(
            f"task {worst} gives the model {requested[worst]} image(s) per doc, but model {model!r} takes no images; "
            "use a multimodal backend (hf-multimodal, vllm-vlm, local-chat-completions with max_images)")
    raise ImageBudgetError(
        f"task {worst} gives the model {requested[worst]} image(s) per doc, but model {model!r} would pass only "
        f"{limit} (its {argument}); add {argument}={requested[worst]} to --model_args")
