"""Every declared `lm_eval.models` entry point loads in a base install (no torch, transformers, vLLM or
ray), and a backend whose extra is missing fails only when it is used, with one line naming the extra.

A base install is simulated in a subprocess by marking the optional packages as absent in
`sys.modules` (then they cannot be imported and `importlib.util.find_spec` finds none)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent

BASE_INSTALL = (  # None in sys.modules: `import torch` fails, importlib.util.find_spec("torch") is None
    "import sys\n"
    "for name in ('torch', 'transformers', 'vllm', 'ray', 'accelerate'):\n"
    "    sys.modules[name] = None\n"
)


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)


def test_every_entry_point_loads_without_the_optional_packages():
    code = BASE_INSTALL + (
        "import importlib.metadata as md\n"
        "for ep in sorted(md.entry_points(group='lm_eval.models'), key=lambda e: e.name):\n"
        "    print(ep.name, ep.load().__name__)\n"
        "print(sorted(m for m in ('torch', 'transformers', 'vllm', 'ray') if sys.modules.get(m) is not None))\n"
    )
    proc = _python(code)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.splitlines() == ["bias-probe BiasProbeLM", "hf-multimodal-logprobs HFMultimodalLogprobsLM",
                                        "vllm-vlm-guided GuidedVLLMVLM", "vllm-vlm-logprobs VLLMVLMLogprobs", "[]"]


@pytest.mark.parametrize("model, extra, missing", [
    ("vllm-vlm-guided", "vllm", "vllm"),
    ("vllm-vlm-logprobs", "vllm", "vllm"),
    ("hf-multimodal-logprobs", "hf", "torch, transformers"),
])
def test_using_a_backend_without_its_extra_names_the_extra(model, extra, missing):
    code = BASE_INSTALL + (
        "from lm_eval.api.registry import get_model\n"
        "import lm_eval_bias.core.registration as r; r.register_plugin()\n"
        f"cls = get_model({model!r})\n"
        "try:\n"
        "    cls.create_from_arg_string('pretrained=x', {})\n"
        "except ImportError as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    proc = _python(code)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == (f'MissingExtraError {model} needs the {extra} extra: pip install '
                                   f'"lm-eval-bias[{extra}]" (not installed: {missing})')


def test_the_drop_in_command_prints_the_missing_extra_in_one_line(focus_env):
    pytest.importorskip("torch")
    if __import__("importlib").util.find_spec("vllm") is not None:
        pytest.skip("vLLM is installed here")
    proc = subprocess.run([str(BIN / "lm-eval-bias"), "run", "--model", "vllm-vlm-guided", "--model_args",
                           "pretrained=org/model", "--tasks", "focus_2afc_income", "--limit", "2"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == ('error: vllm-vlm-guided needs the vllm extra: pip install '
                                                    '"lm-eval-bias[vllm]" (not installed: vllm)')
    assert "Traceback" not in proc.stderr


def test_a_missing_dependency_outside_the_extra_is_named_too(monkeypatch):
    """lm-eval's vLLM backend imports ray at module level, which lm-eval's vllm extra does not install."""
    from lm_eval_bias.models import deferred

    class NeedsRay(deferred.DeferredModel):
        model_name, target, extra, requires = "x-vlm", "lm_eval_bias.not_a_module_for_tests:X", "vllm", ()

    def import_module(name):
        raise ModuleNotFoundError("No module named 'ray'", name="ray")

    monkeypatch.setattr(deferred.importlib, "import_module", import_module)
    with pytest.raises(deferred.MissingExtraError) as exc:
        NeedsRay.create_from_arg_obj({})
    assert str(exc.value) == "x-vlm needs ray, which the backend imports and the vllm extra does not install: pip install ray"
