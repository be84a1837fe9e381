"""What the start-up hook (:mod:`lm_eval_bias.core.startup`) does once lm-eval is imported.

- ``lm_eval.api.registry`` loaded → :func:`lm_eval_bias.core.registration.register_models`: lm-eval's
  built-in models first (``import lm_eval.models``), then the plugin's lazy placeholders.
- ``lm_eval.tasks`` loaded → :func:`lm_eval_bias.core.registration.install_task_folder`: every ``TaskManager`` built in this process
  indexes the plugin's task folder too, placed as upstream PR #4015 places plugin tasks: after the
  built-in tasks and before the caller's own ``include_path`` (so a user's folder still wins), and
  notes the Hub revision pins of its metadata (``--metadata '{"hub_revision": ...}'``).

Both do nothing when the installed harness reads the matching entry-point group itself
(:mod:`lm_eval_bias.core.harness`), so nothing is registered or indexed twice.
"""

from __future__ import annotations

import logging

_LOG = logging.getLogger("lm_eval_bias")


def on_harness_module(name: str, module) -> None:
    """Called by the start-up hook after lm-eval module ``name`` has run."""
    try:
        if name == "lm_eval.api.registry":
            from lm_eval_bias.core.registration import register_models

            register_models()
        elif name == "lm_eval.tasks":
            from lm_eval_bias.core.registration import install_task_folder

            install_task_folder(module)
    except Exception as exc:  # noqa: BLE001 - never break the harness's own import
        _LOG.warning("lm-eval-bias: could not add the plugin to lm-eval (%s: %s); use `lm-eval-bias run` or "
                     "--include_path \"$(lm-eval-bias tasks-dir)\"", type(exc).__name__, exc)
