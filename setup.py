"""Packaging glue beyond setup.cfg: the start-up hook that lets plain ``lm_eval`` find the plugin.

``build_py`` also writes, at the top of the installed tree (``site-packages``):

- ``_lm_eval_bias_autoload.py``: a copy of ``lm_eval_bias/core/startup.py`` (standard library only);
- ``lm_eval_bias_autoload.pth``: ``import _lm_eval_bias_autoload``, which ``site`` runs at start-up.

In a wheel they go into the wheel's root (``build_lib``); in an editable install (``pip install -e``,
PEP 660) setuptools builds a small wheel whose root is the ``install`` command's ``install_lib``, so
they are written there and land in ``site-packages`` the same way. See lm_eval_bias/core/startup.py
and docs/backends.md ("Three ways to run").
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HOOK_SOURCE = Path("lm_eval_bias", "core", "startup.py")
HOOK_MODULE = "_lm_eval_bias_autoload.py"
PTH_FILE = "lm_eval_bias_autoload.pth"
PTH_LINE = "import _lm_eval_bias_autoload\n"


class BuildPyWithStartupHook(build_py):
    """build_py, plus the start-up hook's two top-level files."""

    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            target = Path(self.get_finalized_command("install").install_lib)
        else:
            target = Path(self.build_lib)
        target.mkdir(parents=True, exist_ok=True)
        source = Path(__file__).resolve().parent / HOOK_SOURCE
        (target / HOOK_MODULE).write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
        (target / PTH_FILE).write_text(PTH_LINE, encoding="utf-8")
        self._hook_outputs = [str(target / HOOK_MODULE), str(target / PTH_FILE)]

    def get_outputs(self, include_bytecode=True):
        outputs = super().get_outputs(include_bytecode)
        if getattr(self, "editable_mode", False):  # already inside the editable wheel, not in build_lib
            return outputs
        return outputs + [str(Path(self.build_lib) / HOOK_MODULE), str(Path(self.build_lib) / PTH_FILE)]


setup(cmdclass={"build_py": BuildPyWithStartupHook})
