"""Stage 4: counterfactual image pairs (Sec. 3.3 Step 3, App. K.3): b+ from its description, then edited
into b-, one session per pair, through :mod:`lm_eval_bias.core.imagegen` (an OpenAI-compatible images
endpoint, or local diffusers text-to-image + instruction-editing pipelines)."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any, Callable

from lm_eval_bias.cf_vqa.construction.paper import MULTI_TURN_STEP1, MULTI_TURN_STEP2, SHORT_EDIT_INSTRUCTION
from lm_eval_bias.cf_vqa.construction.store import (
    AppendLog,
    StageError,
    described_pairs,
    images_stem,
    part_suffix,
    read_stage,
    shard_items,
    slug,
    todo,
    validated_pairs,
)
from lm_eval_bias.core import imagegen


#: the images stage stops after this many failed pairs in a row (a broken backend, not a bad pair)
MAX_FAILURES_IN_A_ROW = 5


def pairs_for_images(workdir: Path) -> tuple[list[dict[str, Any]], str]:
    """Described pairs to generate: the kept ones once ratings are imported, else all (with a note)."""
    pairs = described_pairs(workdir)
    if not pairs:
        raise StageError(f"{workdir}: no described pairs yet; run the describe stage first")
    ratings = validated_pairs(workdir)
    if ratings is None:
        return list(pairs.values()), "no ratings imported: images for every described pair"
    kept = [p for k, p in pairs.items() if ratings.get(k, {}).get("kept")]
    return kept, f"{len(kept)} of {len(pairs)} described pairs kept by the human validation"


def edit_instruction(pair: dict[str, Any], style: str) -> str:
    """``paper``: App. K.3 step 2 verbatim; ``short``: :data:`SHORT_EDIT_INSTRUCTION` (77-token encoders)."""
    if style == "paper":
        return MULTI_TURN_STEP2.format(bias_attribute=pair["attribute"], prompt1=pair["description_plus"],
                                       prompt2=pair["description_minus"])
    if style == "short":
        return SHORT_EDIT_INSTRUCTION.format(bias_attribute=pair["attribute"], state_plus=pair["state_plus"],
                                             state_minus=pair["state_minus"])
    raise StageError(f"--edit-instruction must be 'paper' or 'short', got {style!r}")


def _model_record(model) -> dict[str, Any]:
    return {"model": model.model_id, "revision": model.revision, "settings": dict(model.settings)}


def run_images(workdir: Path, make_models: Callable[[], tuple[Any, Any, str]], *, image_set: str, shard: str | None,
               base_seed: int = 0, instruction_style: str = "paper", first_turn: str = "paper",
               allow_mixed_settings: bool = False, retry_failed: bool = False) -> dict[str, Any]:
    """b+ from its description (``first_turn`` ``paper``: App. K.3 step 1 "Generate an image: ...";
    ``plain``: the description alone), then edited into b- with :func:`edit_instruction`; one session
    per pair. Seeds: ``derive_seed(<pair>:plus|minus, base_seed)``. Writes the two PNGs atomically,
    then the pair's line in ``images-<set>.jsonl`` with models, revisions, settings, seeds and prompts.
    ``make_models()`` -> (text-to-image, editor, generator name) is called only when pairs are pending
    (a finished set is not loaded again); a set holding pairs made with other settings is refused
    unless ``allow_mixed_settings``."""
    stem = images_stem(image_set)
    pairs, note = pairs_for_images(workdir)
    folder = workdir / "images" / image_set
    done = read_stage(workdir, stem, "pair_id")
    pending = todo(shard_items(pairs, "pair_id", shard), "pair_id", done, retry_failed)
    if not pending:
        return {"note": note, "done_before": len(done), "ok": 0, "failed": 0}
    text_to_image, editor, generator = make_models()
    settings = {"generator": generator, "text_to_image": _model_record(text_to_image), "editor": _model_record(editor),
                "base_seed": base_seed, "edit_instruction": instruction_style, "first_turn": first_turn}
    fingerprint = imagegen.settings_fingerprint(settings)
    try:
        imagegen.check_settings(done.values(), fingerprint, allow_mixed=allow_mixed_settings)
    except imagegen.MixedSettingsError:
        raise StageError(f"image set {image_set!r} holds pairs generated with other settings (this run's fingerprint "
                         f"is {fingerprint}); use another --image-set, the same settings, or --allow-mixed-settings") from None
    counts: dict[str, Any] = {"note": note, "done_before": len(done), "ok": 0, "failed": 0}
    in_a_row = 0
    with AppendLog(workdir / f"{stem}{part_suffix(shard)}.jsonl") as out:
        for pair in pending:
            pair_id = pair["pair_id"]
            seeds = {side: imagegen.derive_seed(f"{pair_id}:{side}", base_seed) for side in ("plus", "minus")}
            prompt = (MULTI_TURN_STEP1.format(prompt1=pair["description_plus"]) if first_turn == "paper"
                      else pair["description_plus"])
            instruction = edit_instruction(pair, instruction_style)
            record = {"pair_id": pair_id, "image_set": image_set, "generator": generator, "prompt_plus": prompt,
                      "instruction_minus": instruction, "seed_plus": seeds["plus"], "seed_minus": seeds["minus"],
                      "text_to_image": _model_record(text_to_image), "editor": _model_record(editor),
                      "settings_fingerprint": fingerprint}
            started = time.time()
            try:
                image_plus = text_to_image.generate(prompt, seeds["plus"])
                image_minus = editor.edit(image_plus, instruction, seeds["minus"])
            except Exception as exc:  # noqa: BLE001 -- a failed pair is recorded with its reason, the run goes on
                reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:500]
                out.append({**record, "status": "failed", "reason": reason})
                counts["failed"] += 1
                in_a_row += 1
                if in_a_row >= MAX_FAILURES_IN_A_ROW:
                    raise StageError(f"{in_a_row} pairs failed in a row (last: {reason}); the stage stopped: fix the "
                                     "backend and rerun with --retry-failed") from None
                continue
            in_a_row = 0
            paths = {}
            for side, image in (("plus", image_plus), ("minus", image_minus)):
                path = folder / f"{slug(pair_id, 80)}_{side}.png"
                imagegen.write_image_atomic(image, path)
                paths[side] = path
            out.append({**record, "status": "ok", "reason": None,
                        "image_plus": paths["plus"].relative_to(workdir).as_posix(),
                        "image_minus": paths["minus"].relative_to(workdir).as_posix(),
                        "sha256_plus": hashlib.sha256(paths["plus"].read_bytes()).hexdigest(),
                        "sha256_minus": hashlib.sha256(paths["minus"].read_bytes()).hexdigest(),
                        "size": list(image_plus.size), "seconds": round(time.time() - started, 3)})
            counts["ok"] += 1
    return counts
