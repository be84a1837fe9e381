"""Old import paths of modules moved to one folder per benchmark (0.2); each warns and aliases the new module.

``lm_eval_bias/tasks/reflect.py`` and its siblings hold one line, ``alias(__name__, "lm_eval_bias.reflect.tasks")``:
the old name becomes the same module object as the new one (monkeypatching either patches both), with a
``DeprecationWarning`` naming the new path. The aliases are removed in 0.3.
"""

from __future__ import annotations

import importlib
import sys
import warnings


def alias(old: str, new: str) -> None:
    warnings.warn(f"{old} moved to {new}; the old import path is removed in lm-eval-bias 0.3",
                  DeprecationWarning, stacklevel=3)
    sys.modules[old] = importlib.import_module(new)
