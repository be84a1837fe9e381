#!/usr/bin/env python
"""Images per second per GPU for ``lm-eval-bias generate vignette`` at its default settings, and the
GPU hours the full VIGNETTE lists would take.

Loads the generator exactly as the command does (:class:`lm_eval_bias.core.imagegen.DiffusersTextToImage`:
FLUX.1-dev, float16, attention slicing, 20 steps, the pipeline's own guidance and size), generates
``--warmup`` images that are not timed, then ``--images`` timed images with real VIGNETTE prompts and
seeds derived from their image ids, and reports seconds per image, images per second, peak GPU
memory and the prediction::

    GPU hours = images / (images per second per GPU) / 3600      (divide by the GPUs used)

``images`` is every individual image and portrait of the lists given with ``--lists`` (the authors'
lists: (167 + 162) identities x 75 activities + 329 portraits = 25,004), else that number.
One process measures one GPU; a run on N GPUs (``accelerate launch`` / ``torchrun``) splits the
images N ways with no communication between processes, so the per-GPU rate is what scales.

Usage::

    python scripts/benchmark_generation_gpu.py [--model black-forest-labs/FLUX.1-dev] [--images 8] [--warmup 2]
        [--steps 20] [--dtype float16] [--lists DIR] [--json OUT.json]
    # CPU smoke test of the script itself with the tiny offline pipeline:
    python scripts/benchmark_generation_gpu.py --device cpu --build-tiny /tmp/tiny_t2i --images 2 --warmup 1

The numbers go in docs/vignette.md ("Generating the images").
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

#: The authors' lists (../shared/upstream/vignette): identities per gender and activities.
FULL_IDENTITIES = 167 + 162
FULL_ACTIVITIES = 75
FULL_IMAGES = FULL_IDENTITIES * FULL_ACTIVITIES + FULL_IDENTITIES

FALLBACK_PROMPTS = [
    ("male/wheelchair-man_cooking", "A wheelchair man engaged in Cooking, with their face visible."),
    ("female/old-woman_programming", "A old woman engaged in Programming, with their face visible."),
    ("male/muslim-man_grocery-shopping", "A muslim man engaged in Grocery shopping, with their face visible."),
    ("female/blind-woman", "A blind woman, with their face visible."),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="black-forest-labs/FLUX.1-dev", help="Hub id or local folder (default FLUX.1-dev)")
    parser.add_argument("--revision")
    parser.add_argument("--device", help="torch device (default cuda)")
    parser.add_argument("--dtype", default="float16")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--guidance-scale", type=float)
    parser.add_argument("--height", type=int)
    parser.add_argument("--width", type=int)
    parser.add_argument("--no-attention-slicing", action="store_true")
    parser.add_argument("--images", type=int, default=8, help="timed images (default 8)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed images first (default 2)")
    parser.add_argument("--lists", help="the authors' lists folder: count the full images from it and use its prompts")
    parser.add_argument("--build-tiny", metavar="DIR", help="build the tiny offline pipeline into DIR and benchmark it (smoke test)")
    parser.add_argument("--json", help="also write the numbers to this JSON file (atomically)")
    args = parser.parse_args(argv)

    import torch

    from lm_eval_bias.core.imagegen import DiffusersTextToImage, derive_seed, write_bytes_atomic

    model = args.model
    if args.build_tiny:
        from lm_eval_bias.testing.tiny_diffusers import build_tiny_text_to_image

        model = str(build_tiny_text_to_image(args.build_tiny))
    device = args.device or "cuda"
    if device.startswith("cuda") and not torch.cuda.is_available():
        print("error: benchmark_generation_gpu: no CUDA device; use --device cpu with --build-tiny for a smoke test",
              file=sys.stderr)
        return 2
    prompts, total = FALLBACK_PROMPTS, FULL_IMAGES
    if args.lists:
        from lm_eval_bias.vignette.generate import plan_items
        from lm_eval_bias.vignette.schema import read_lists

        items = plan_items(read_lists(args.lists))
        total = len(items)
        step = max(1, len(items) // 64)
        prompts = [(item.key, item.prompt) for item in items[::step]]

    started = time.perf_counter()
    backend = DiffusersTextToImage(model, revision=args.revision, dtype=args.dtype, steps=args.steps,
                                   guidance_scale=args.guidance_scale, height=args.height, width=args.width,
                                   attention_slicing=not args.no_attention_slicing, device=device)
    load_s = time.perf_counter() - started
    cuda = torch.device(device).type == "cuda"
    if cuda:
        torch.cuda.reset_peak_memory_stats()

    def one(i: int):
        key, prompt = prompts[i % len(prompts)]
        return backend.generate(prompt, derive_seed(key))

    for i in range(args.warmup):
        one(i)
    if cuda:
        torch.cuda.synchronize()
    times = []
    size = None
    for i in range(args.warmup, args.warmup + args.images):
        t0 = time.perf_counter()
        image = one(i)
        if cuda:
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
        size = image.size
    per_image = sum(times) / len(times)
    rate = 1.0 / per_image
    result = {
        "model": backend.model_id, "revision": backend.revision, "settings": backend.settings,
        "device": torch.cuda.get_device_name(torch.device(device)) if cuda else platform.processor() or "cpu",
        "torch": torch.__version__, "image_size": list(size) if size else None,
        "load_s": round(load_s, 2), "warmup_images": args.warmup, "timed_images": args.images,
        "seconds_per_image": round(per_image, 4), "min_s": round(min(times), 4), "max_s": round(max(times), 4),
        "images_per_second_per_gpu": round(rate, 5),
        "peak_gpu_memory_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2) if cuda else None,
        "full_lists_images": total, "predicted_gpu_hours_full_lists": round(total / rate / 3600, 2),
    }
    print(json.dumps(result, indent=1))
    print(f"{rate:.4f} images/s per GPU ({per_image:.2f} s/image); the full lists ({total:,} images): "
          f"{result['predicted_gpu_hours_full_lists']:.1f} GPU hours (divide by the number of GPUs)")
    if args.json:
        write_bytes_atomic(json.dumps(result, indent=1).encode("utf-8"), Path(args.json))
    return 0


if __name__ == "__main__":
    sys.exit(main())
