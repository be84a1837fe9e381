"""Start-up hook: plain ``lm_eval`` finds the plugin's tasks and models, with no wrapper and no flag.

lm-eval 0.4.13 reads no entry points, so an installed plugin is invisible to ``lm_eval --tasks
focus_2afc_income --model vllm-vlm``. The wheel (and an editable install) therefore ships two files
at the top of ``site-packages`` (written by ``setup.py``'s ``build_py``):

- ``lm_eval_bias_autoload.pth``: one line, ``import _lm_eval_bias_autoload``; Python's ``site`` runs it
  at every start-up;
- ``_lm_eval_bias_autoload.py``: a copy of this module. It imports ``os`` and ``sys`` (already loaded
  by ``site``) and puts one finder on ``sys.meta_path``; nothing of ``lm_eval_bias`` is imported.

The finder answers ``None`` for every module except two of lm-eval's, and for those it lets the
regular finders load the module and then, once the module has run, hands it to
:mod:`lm_eval_bias.core.autoload`:

- ``lm_eval.api.registry`` loaded: the plugin's models are registered (after lm-eval's own);
- ``lm_eval.tasks`` loaded: every ``TaskManager`` also indexes the plugin's task folder.

So an unrelated Python process pays one dictionary look-up per import (measured in
``docs/backends.md``), and only a process that imports lm-eval imports the plugin. Opt out with
``LM_EVAL_BIAS_AUTOLOAD=0`` (then ``--include_path "$(lm-eval-bias tasks-dir)"`` or ``lm-eval-bias
run`` are the ways in, as before). A harness that reads the ``lm_eval.tasks`` / ``lm_eval.models``
entry points itself is left to do so (:mod:`lm_eval_bias.core.harness`).

Only the standard library may be imported here: the module runs in every Python start-up.
"""

import os
import sys

#: environment variable that turns the start-up hook off ("0", "false", "no", "off")
OPT_OUT_ENV = "LM_EVAL_BIAS_AUTOLOAD"
#: lm-eval modules whose loading triggers the plugin (module name -> what is added)
WATCHED = {"lm_eval.api.registry": "models", "lm_eval.tasks": "tasks"}


def enabled(environ=os.environ) -> bool:
    """False when :data:`OPT_OUT_ENV` says 0 / false / no / off."""
    return environ.get(OPT_OUT_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def _notify(name, module):
    try:
        from lm_eval_bias.core import autoload
    except ImportError:  # the plugin was uninstalled but this file was left behind: do nothing
        return
    autoload.on_harness_module(name, module)


class _NotifyingLoader:
    """Runs the real loader, then tells the plugin; the module keeps the real loader afterwards."""

    def __init__(self, loader, name):
        self.loader, self.name = loader, name

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        spec = module.__spec__
        if spec is not None:
            spec.loader = self.loader
        module.__loader__ = self.loader
        self.loader.exec_module(module)
        _notify(self.name, module)

    def __getattr__(self, attribute):
        return getattr(self.loader, attribute)


class HarnessImportHook:
    """``sys.meta_path`` finder that notices when lm-eval's registry or task package is imported."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in WATCHED:
            return None
        for finder in sys.meta_path:
            if finder is self or isinstance(finder, HarnessImportHook):
                continue
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find is not None else None
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _NotifyingLoader(spec.loader, fullname)
        return spec


def install():
    """Put the hook first on ``sys.meta_path`` (once), unless opted out; modules of lm-eval already
    imported are handed over at once."""
    if not enabled() or any(type(f).__name__ == "HarnessImportHook" for f in sys.meta_path):
        return
    sys.meta_path.insert(0, HarnessImportHook())
    for name in WATCHED:
        module = sys.modules.get(name)
        if module is not None:
            _notify(name, module)


if __name__ == "_lm_eval_bias_autoload":  # the copy the .pth file imports at start-up
    install()
