"""A run killed mid-way and restarted with lm-eval's request cache re-queries nothing it had answered
and gives the results of an uninterrupted run (bias-probe counts its calls and can crash on purpose)."""

from __future__ import annotations

import pytest


def _run(model_args, cache):
    from lm_eval import simple_evaluate

    import lm_eval_bias

    return simple_evaluate(model="bias-probe", model_args=model_args, tasks=["focus_2afc_income"],
                           task_manager=lm_eval_bias.task_manager(), use_cache=cache, bootstrap_iters=0)


def test_killed_run_resumes_from_the_cache(focus_env, tmp_path):
    base = "refusal_rate=0.1,position_bias=0.2,seed=2"
    uninterrupted = _run(base, None)
    n_docs = uninterrupted["n-samples"]["focus_2afc_income"]["effective"]

    log = tmp_path / "calls.jsonl"
    cache = str(tmp_path / "cache" / "probe")
    with pytest.raises(RuntimeError, match="simulated crash"):
        _run(f"{base},call_log={log},fail_after=100", cache)
    assert len(log.read_text().splitlines()) == 100

    resumed = _run(f"{base},call_log={log}", cache)
    calls = len(log.read_text().splitlines())
    assert calls == n_docs  # 100 before the crash + only the remaining ones after it
    assert _same_results(resumed, uninterrupted)  # NaN-safe (json): undefined keys are NaN in both


# -- real backends: lm-eval's hf-multimodal with the tiny local LLaVA ---------------------------------
HF_LIMIT = 12


@pytest.fixture(scope="module")
def tiny_llava(tmp_path_factory):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from lm_eval_bias.testing.tiny_vlm import build_tiny_llava

    return build_tiny_llava(tmp_path_factory.mktemp("tiny_llava_resume"), seed=0)


@pytest.fixture
def counted_hf_generate(monkeypatch):
    """Count the rows hf-multimodal actually generates; raise (a crash) before exceeding ``budget``."""
    import lm_eval.models  # noqa: F401
    from lm_eval.models.hf_vlms import HFMultimodalLM

    state = {"rows": 0, "budget": None}
    original = HFMultimodalLM._model_multimodal_generate

    def generate(self, inputs, *args, **kwargs):
        rows = int(inputs["input_ids"].shape[0])
        if state["budget"] is not None and state["rows"] + rows > state["budget"]:
            raise RuntimeError("simulated crash of the hf-multimodal run")
        state["rows"] += rows
        return original(self, inputs, *args, **kwargs)

    monkeypatch.setattr(HFMultimodalLM, "_model_multimodal_generate", generate)
    return state


def _run_hf(model_dir, cache):
    from lm_eval import simple_evaluate

    import lm_eval_bias

    return simple_evaluate(model="hf-multimodal", model_args=f"pretrained={model_dir},device=cpu,batch_size=2,max_images=2",
                           tasks=["focus_2afc_income"], task_manager=lm_eval_bias.task_manager(), use_cache=cache,
                           limit=HF_LIMIT, bootstrap_iters=0, log_samples=True)


def _cache_entries(cache) -> int:
    from sqlitedict import SqliteDict

    with SqliteDict(f"{cache}_rank0.db", flag="r") as db:
        return len(db)


def _resps(out) -> list:
    return [s["resps"] for s in sorted(out["samples"]["focus_2afc_income"], key=lambda s: s["doc_id"])]


def _same_results(a, b) -> bool:
    import json

    return json.dumps(a["results"], sort_keys=True, default=str) == json.dumps(b["results"], sort_keys=True, default=str)


def test_hf_multimodal_killed_run_resumes_from_the_cache(focus_env, tiny_llava, counted_hf_generate, tmp_path):
    """lm-eval's own hf-multimodal: a run that crashes in its 3rd batch (of 2 requests) has stored its
    first 4 answers under the keys the cache looks up; the restart generates only the other 8, and
    the results are those of an uninterrupted run. A third run finds every answer in the cache."""
    from lm_eval_bias.backends import cache_keys
    from lm_eval_bias.core.registration import register_plugin

    register_plugin()  # as lm-eval-bias run does (lm_eval_bias.task_manager() too)
    assert cache_keys.status()["keys"] and cache_keys.status()["checkpoints"], cache_keys.status()
    uninterrupted = _run_hf(tiny_llava, None)
    assert counted_hf_generate["rows"] == HF_LIMIT
    answers = [r[0][0] for r in _resps(uninterrupted)]
    assert len(answers) == HF_LIMIT and all(isinstance(a, str) for a in answers)

    cache = str(tmp_path / "cache" / "hf")
    counted_hf_generate.update(rows=0, budget=5)
    with pytest.raises(RuntimeError, match="simulated crash"):
        _run_hf(tiny_llava, cache)
    assert counted_hf_generate["rows"] == 4  # two batches answered, the third crashed
    assert _cache_entries(cache) == 4  # each answered batch stored, and nothing under image-less keys

    counted_hf_generate.update(rows=0, budget=None)
    resumed = _run_hf(tiny_llava, cache)
    assert counted_hf_generate["rows"] == HF_LIMIT - 4  # only what the crashed run had not answered
    assert _resps(resumed) == _resps(uninterrupted)
    assert _same_results(resumed, uninterrupted)
    assert _cache_entries(cache) == HF_LIMIT

    counted_hf_generate.update(rows=0)
    again = _run_hf(tiny_llava, cache)  # a completed run's cache answers everything
    assert counted_hf_generate["rows"] == 0
    assert _resps(again) == _resps(uninterrupted) and _same_results(again, uninterrupted)


# -- cache keys of images ---------------------------------------------------------------------------
def _photo(size=1024, seed=0):
    import numpy as np
    from PIL import Image

    return Image.fromarray(np.random.default_rng(seed).integers(0, 256, (size, size, 3), dtype=np.uint8))


def _key(context, gen_kwargs, images) -> str:
    from lm_eval.api.model import hash_args

    return hash_args("generate_until", (context, gen_kwargs, {"visual": images}))


def test_image_cache_keys_never_png_encode_nor_decode(monkeypatch):
    """lm-eval's own key PNG-encodes every image (~seconds per 1024-px photo); the plugin's never does.
    The cost itself is measured in scripts/benchmark.py, not here."""
    import io

    from PIL import Image

    from lm_eval_bias.core.data import ImageStore
    from lm_eval_bias.core.registration import register_plugin

    register_plugin()
    photo = _photo()
    encoded = io.BytesIO()
    photo.save(encoded, format="JPEG", quality=90)
    store = ImageStore({"p": encoded.getvalue()}, source="test")
    pooled = store.get("p")

    def no_encoding(self, *args, **kwargs):
        raise AssertionError("the cache key encoded an image")

    monkeypatch.setattr(Image.Image, "save", no_encoding)
    gen = {"until": ["\n\n"], "max_gen_toks": 8, "do_sample": False}
    for _ in range(3):
        _key("Image A: <image>", gen, [pooled])
    assert store.decodes == 0  # a store photo is keyed by its encoded bytes: not even decoded
    _key("Image A: <image>", gen, [photo])  # a plain image is hashed from its pixels: save() would raise


def test_image_cache_keys_tell_inputs_apart():
    import io

    from lm_eval_bias.core.data import ImageStore, tag_image
    from lm_eval_bias.core.registration import register_plugin

    register_plugin()
    gen = {"until": ["\n\n"], "max_gen_toks": 8, "do_sample": False}
    a, b = _photo(64, seed=1), _photo(64, seed=2)
    assert _key("Q <image>", gen, [a]) == _key("Q <image>", gen, [a.copy()])  # same content, other object
    assert _key("Q <image>", gen, [a]) != _key("Q <image>", gen, [b])  # other image, same text
    assert _key("Q <image>", gen, [a, b]) != _key("Q <image>", gen, [b, a])  # order matters
    assert _key("Q <image>", gen, [a]) != _key("Q <image>", {**gen, "max_gen_toks": 9}, [a])  # other gen_kwargs
    assert _key("Q <image>", gen, [a]) != _key("R <image>", gen, [a])
    assert _key("Q <image>", gen, [a]) != _key("Q <image>", gen, [a.convert("L")])

    # store photos: keyed by their encoded bytes, so the same photo keys alike in every process
    def encode(image):
        out = io.BytesIO()
        image.save(out, format="PNG")
        return out.getvalue()

    store = ImageStore({"a": encode(a), "b": encode(b)}, source="test")
    again = ImageStore({"a": encode(a), "b": encode(b)}, source="test")
    assert _key("Q <image>", gen, [store.get("a")]) == _key("Q <image>", gen, [again.get("a")])
    assert _key("Q <image>", gen, [store.get("a")]) != _key("Q <image>", gen, [store.get("b")])

    # a tagged image changed in place is keyed by its new pixels, never by its stale tag
    tagged = tag_image(a.copy())
    before = _key("Q <image>", gen, [tagged])
    assert before == _key("Q <image>", gen, [a])
    tagged.paste((0, 0, 0), (0, 0, 8, 8))
    assert _key("Q <image>", gen, [tagged]) != before
    assert _key("Q <image>", gen, [tagged]) == _key("Q <image>", gen, [tagged.copy()])
    shrunk = tag_image(a.copy())
    shrunk.thumbnail((16, 16))
    assert _key("Q <image>", gen, [shrunk]) == _key("Q <image>", gen, [shrunk.copy()])


def test_cache_patch_is_skipped_when_lm_eval_internals_differ(monkeypatch, caplog):
    """If hash_args stops keying through _multimodal_cache_default, or CachingLM looks requests up
    differently, the patches are not applied (a warning says so) and lm-eval is left as it ships."""
    import hashlib
    import json
    import logging

    import lm_eval.api.model as model_module

    from lm_eval_bias.backends import cache_keys

    cache_keys.install()
    stock_default = getattr(model_module._multimodal_cache_default, "__wrapped__", model_module._multimodal_cache_default)
    stock_getattr = getattr(model_module.CachingLM.__getattr__, "__wrapped__", model_module.CachingLM.__getattr__)
    monkeypatch.setattr(model_module, "_multimodal_cache_default", stock_default)
    monkeypatch.setattr(model_module.CachingLM, "__getattr__", stock_getattr)

    def other_hash_args(attr, args):  # a future lm-eval that keys images some other way
        return hashlib.sha256(json.dumps([attr] + list(args), default=lambda o: "?").encode()).hexdigest()

    def other_getattr(self, attr):  # a future CachingLM
        return getattr(self.lm, attr)

    monkeypatch.setattr(model_module, "hash_args", other_hash_args)
    monkeypatch.setattr(model_module.CachingLM, "__getattr__", other_getattr)
    monkeypatch.setattr(cache_keys, "_state", {"attempted": False, "keys": False, "checkpoints": False, "reasons": []})
    with caplog.at_level(logging.WARNING, logger=cache_keys.__name__):
        state = cache_keys.install()
    assert state["keys"] is False and state["checkpoints"] is False
    assert model_module._multimodal_cache_default is stock_default
    assert model_module.CachingLM.__getattr__ is other_getattr
    assert "request-cache patch skipped" in caplog.text

    monkeypatch.setattr(cache_keys, "_state", {"attempted": False, "keys": False, "checkpoints": False, "reasons": []})
    monkeypatch.setenv(cache_keys.PATCH_ENV, "0")
    assert cache_keys.install() == {"keys": False, "checkpoints": False, "reasons": [f"{cache_keys.PATCH_ENV}=0"]}


# The plain `lm_eval` CLI (no lm-eval-bias code until the task YAMLs import it), counting and
# crashing hf-multimodal's generation like `counted_hf_generate`, in a fresh interpreter.
_PLAIN_CLI_DRIVER = '''
import json, sys

log, budget = sys.argv[1], int(sys.argv[2])
import lm_eval.models  # noqa: F401
from lm_eval.models.hf_vlms import HFMultimodalLM

original = HFMultimodalLM._model_multimodal_generate
done = [0]

def generate(self, inputs, *args, **kwargs):
    rows = int(inputs["input_ids"].shape[0])
    if done[0] + rows > budget:
        raise RuntimeError("simulated crash")
    done[0] += rows
    with open(log, "a") as f:
        f.write(json.dumps(rows) + "\\n")
    return original(self, inputs, *args, **kwargs)

HFMultimodalLM._model_multimodal_generate = generate
sys.argv = ["lm_eval", *sys.argv[3:]]
from lm_eval.__main__ import cli_evaluate

try:
    cli_evaluate()
finally:
    from lm_eval_bias.backends import cache_keys
    print("CACHE_PATCH", json.dumps(cache_keys.status()))
'''


def test_plain_lm_eval_cli_with_include_path_resumes_too(focus_env, tiny_llava, counted_hf_generate, tmp_path):
    """`lm_eval run --include_path ...` crashes in a fresh interpreter after 2 batches; its cache,
    keyed by the patch the task YAMLs' imports installed, lets a restart (here in this process, so
    the keys must not depend on the process) ask only the 8 requests not yet answered."""
    import json
    import os
    import subprocess
    import sys

    import lm_eval_bias

    driver = tmp_path / "driver.py"
    driver.write_text(_PLAIN_CLI_DRIVER)
    log, cache = tmp_path / "rows.jsonl", str(tmp_path / "cache" / "plain")
    crashed = subprocess.run(
        [sys.executable, str(driver), str(log), "5", "run", "--model", "hf-multimodal", "--model_args",
         f"pretrained={tiny_llava},max_images=2", "--device", "cpu", "--batch_size", "2", "--include_path",
         str(lm_eval_bias.tasks_dir()), "--tasks", "focus_2afc_income", "--limit", str(HF_LIMIT),
         "--use_cache", cache], capture_output=True, text=True, env=dict(os.environ), timeout=600)
    assert crashed.returncode != 0 and "simulated crash" in crashed.stderr, crashed.stderr[-3000:]
    assert 'CACHE_PATCH {"keys": true, "checkpoints": true' in crashed.stdout, crashed.stdout[-2000:]
    assert sum(json.loads(line) for line in log.read_text().splitlines()) == 4
    assert _cache_entries(cache) == 4

    counted_hf_generate.update(rows=0, budget=None)
    _run_hf(tiny_llava, cache)
    assert counted_hf_generate["rows"] == HF_LIMIT - 4
    assert _cache_entries(cache) == HF_LIMIT
