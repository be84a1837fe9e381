"""``lm-eval-bias generate vignette``: the VIGNETTE images, generated the way the authors did.

The paper (Sec. 3, App. A.2) generated one image per identity x activity of both genders' lists with
FLUX.1-dev from "An [identity] engaged in [activity], with their face visible." and one portrait per
identity from "An [identity], with their face visible."; the authors' scripts (``src/gen_image_sd.py``,
``src/gen_image_noactivity.py`` of chahatraj/Vignette) add what the paper leaves out:
``DiffusionPipeline`` in float16 with attention slicing, 20 inference steps, the pipeline's default
guidance and size, the article "A", a random unrecorded seed per image, and the file names
``<gender>/<descriptor-with-dashes>_<activity-with-dashes>.png`` (portraits ``<gender>/<descriptor>.png``).
The defaults here are those of the scripts, except the seed: ours is derived from the image id
(:func:`lm_eval_bias.core.imagegen.derive_seed`), so a run is reproducible (docs/divergences.md).

Output folder (``lm-eval-bias build vignette --source`` reads it unchanged)::

    OUT/female/<descriptor>_<activity>.png, OUT/female/<descriptor>.png, OUT/male/...
    OUT/manifests/<worker>.jsonl     one per process: every finished image (prompt, seed, model, settings, sha256)
    OUT/manifest.jsonl               all workers' manifests merged (written by an unsharded run and by ``merge``)

Each image is written atomically and only then recorded, so a run killed anywhere and started again
makes exactly the images that are missing. Work splits deterministically over ``--shard i/n``
(machines) and over the processes of ``torchrun`` / ``accelerate launch`` (GPUs of one machine);
``lm-eval-bias generate vignette merge --output OUT`` merges the workers' manifests. The human check
(App. A.2) is ``lm-eval-bias generate vignette human-check ...`` (:mod:`lm_eval_bias.vignette.human_check`).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import shutil
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from lm_eval_bias.core import imagegen
from lm_eval_bias.core.safe_io import check_output_folder
from lm_eval_bias.core.sharding import parse_shard
from lm_eval_bias.vignette.schema import DIMENSIONS, GENDERS, image_id, read_lists, slug

DEFAULT_MODEL = "black-forest-labs/FLUX.1-dev"
#: Prompt wordings: the authors' scripts (article "A", activity as listed) and the paper's template ("An").
WORDINGS = {
    "authors": ("A {descriptor} engaged in {activity}, with their face visible.", "A {descriptor}, with their face visible."),
    "paper": ("An {descriptor} engaged in {activity}, with their face visible.", "An {descriptor}, with their face visible."),
}
KINDS = ("individual", "portrait")
MANIFEST = "manifest.jsonl"
WORKER_MANIFESTS = "manifests"
#: Licences of known generators, stated on the dataset card (by model id).
GENERATOR_LICENCES = {
    "black-forest-labs/FLUX.1-dev": ("FLUX.1 [dev] Non-Commercial License "
                                     "(https://huggingface.co/black-forest-labs/FLUX.1-dev/blob/main/LICENSE.md): "
                                     "outputs may not be used commercially under its terms"),
}


class GenerateError(Exception):
    """A usage or input problem, reported as one ``error:`` line."""


@dataclass(frozen=True)
class ImageItem:
    """One image to generate: its id (``<gender>/<slug>[_<activity-slug>]``), file and prompt."""

    key: str
    kind: str  # individual | portrait
    gender: str
    descriptor: str
    dimension: str
    activity: str
    activity_category: str
    prompt: str

    @property
    def file_name(self) -> str:
        return f"{self.key}.png"


def plan_items(lists, *, wording: str = "authors", individual_template: str | None = None, portrait_template: str | None = None,
               kinds=KINDS, genders=None, dimensions=None, descriptors=None, activities=None, limit: int | None = None) -> list[ImageItem]:
    """Every image the filters select, sorted by key; ``limit`` keeps the first N of them.

    Filters match case-insensitively by file-name form (:func:`slug`); an unknown value is an error.
    """
    individual_template = individual_template or WORDINGS[wording][0]
    portrait_template = portrait_template or WORDINGS[wording][1]
    identities, by_slug = lists.identities, {slug(a.name): a for a in lists.activities}

    def wanted(values, known, what):
        if not values:
            return None
        chosen = {slug(v) for v in values}
        unknown = sorted(chosen - {slug(k) for k in known})
        if unknown:
            raise GenerateError(f"unknown {what}: {', '.join(unknown)}")
        return chosen

    want_gender = wanted(genders, GENDERS, "gender")
    want_dim = wanted(dimensions, DIMENSIONS, "dimension")
    want_desc = wanted(descriptors, [i.descriptor for i in identities], "descriptor")
    want_act = wanted(activities, [a.name for a in lists.activities], "activity")
    items = []
    for identity in identities:
        if (want_gender and identity.gender not in want_gender) or (want_dim and slug(identity.dimension) not in want_dim) \
                or (want_desc and slug(identity.descriptor) not in want_desc):
            continue
        if "portrait" in kinds:
            items.append(ImageItem(image_id(identity.gender, identity.descriptor), "portrait", identity.gender,
                                   identity.descriptor, identity.dimension, "", "",
                                   portrait_template.format(descriptor=identity.descriptor)))
        if "individual" in kinds:
            for activity_slug, activity in by_slug.items():
                if want_act and activity_slug not in want_act:
                    continue
                items.append(ImageItem(image_id(identity.gender, identity.descriptor, activity.name), "individual",
                                       identity.gender, identity.descriptor, identity.dimension, activity.name,
                                       activity.category,
                                       individual_template.format(descriptor=identity.descriptor, activity=activity.name)))
    items.sort(key=lambda item: item.key)
    return items[:limit] if limit is not None else items


def worker_name(shard: str | None) -> str:
    """``main``, ``shard-0-of-2``, ``rank-1-of-4`` or ``shard-0-of-2.rank-1-of-4``: this process's manifest."""
    parts = []
    parsed = parse_shard(shard)
    if parsed is not None:
        parts.append(f"shard-{parsed[0]}-of-{parsed[1]}")
    rank = imagegen.process_rank(shard)
    if rank is not None and rank[1] > 1:
        parts.append(f"rank-{rank[0]}-of-{rank[1]}")
    return ".".join(parts) or "main"


def manifest_paths(output: Path) -> list[Path]:
    """The merged manifest and every worker's manifest in ``output`` (those that exist)."""
    paths = [output / MANIFEST] if (output / MANIFEST).exists() else []
    return paths + sorted((output / WORKER_MANIFESTS).glob("*.jsonl"))


def finished(output: Path) -> dict[str, dict]:
    """Images already made in ``output``: manifest entries whose file is in place, by key."""
    done: dict[str, dict] = {}
    for path in manifest_paths(output):
        done.update(imagegen.Manifest(path).done())
    return {key: entry for key, entry in done.items() if (output / entry["file_name"]).is_file()}


def run_fingerprint(backend, individual_template: str, portrait_template: str, base_seed: int) -> tuple[dict, str]:
    """Everything that decides the pixels of an image besides its own prompt, and its fingerprint."""
    settings = {"model_id": backend.model_id, "revision": backend.revision, "settings": backend.settings,
                "individual_template": individual_template, "portrait_template": portrait_template, "base_seed": base_seed}
    return settings, imagegen.settings_fingerprint(settings)


def _remove_stale_temp_files(output: Path, items: list[ImageItem]) -> int:
    """Temp files a killed run of this worker left beside its images (never another worker's)."""
    mine = {item.file_name for item in items}
    removed = 0
    for gender in GENDERS:
        folder = output / gender
        if not folder.is_dir():
            continue
        for tmp in folder.glob(".*.tmp"):
            target = tmp.name[1:].rsplit(".", 2)[0]  # ".<name>.<random>.tmp"
            if f"{gender}/{target}" in mine:
                tmp.unlink(missing_ok=True)
                removed += 1
    return removed


def generate_images(backend, items: list[ImageItem], output: str | os.PathLike, *, shard: str | None = None, base_seed: int = 0,
                    individual_template: str, portrait_template: str, allow_mixed_settings: bool = False,
                    max_failures: int = 10, log=print) -> dict:
    """Generate this worker's part of ``items`` that ``output`` does not hold yet; return a summary.

    Refuses (:class:`~lm_eval_bias.core.imagegen.MixedSettingsError`) when the folder holds images
    made with another fingerprint, unless ``allow_mixed_settings``. A backend failure on one image is
    logged and counted; the run stops after ``max_failures`` consecutive failures.
    """
    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    mine = imagegen.shard_items(items, shard, key=lambda item: item.key)
    worker = worker_name(shard)
    (output / WORKER_MANIFESTS).mkdir(exist_ok=True)
    lock = open(output / WORKER_MANIFESTS / f".{worker}.lock", "w")
    try:
        import fcntl  # POSIX; elsewhere one writer per worker is the user's business

        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except ImportError:
        pass
    except BlockingIOError:
        lock.close()
        raise GenerateError(f"another run of worker {worker!r} is writing into {output}; wait for it or give it another --shard")
    try:
        _, fingerprint = run_fingerprint(backend, individual_template, portrait_template, base_seed)
        done = finished(output)
        imagegen.check_settings(done.values(), fingerprint, allow_mixed=allow_mixed_settings)
        _remove_stale_temp_files(output, mine)
        todo = [item for item in mine if item.key not in done]
        manifest = imagegen.Manifest(output / WORKER_MANIFESTS / f"{worker}.jsonl")
        log(f"worker {worker}: {len(mine)} of {len(items)} images are this worker's; {len(mine) - len(todo)} already done, "
            f"{len(todo)} to generate")
        made, failed, consecutive = 0, [], 0
        for position, item in enumerate(todo, start=1):
            seed = imagegen.derive_seed(item.key, base_seed)
            started = time.perf_counter()
            try:
                image = backend.generate(item.prompt, seed)
            except imagegen.ImageBackendError as exc:
                failed.append(item.key)
                consecutive += 1
                log(f"[{position}/{len(todo)}] {item.key}: failed: {exc}")
                if consecutive >= max_failures:
                    raise GenerateError(f"{consecutive} images failed in a row (last: {exc}); stopping") from None
                continue
            consecutive = 0
            buffer = io.BytesIO()
            image.save(buffer, format="PNG")
            data = buffer.getvalue()
            imagegen.write_bytes_atomic(data, output / item.file_name)
            elapsed = time.perf_counter() - started
            manifest.append({
                "key": item.key, "file_name": item.file_name, "kind": item.kind, "gender": item.gender,
                "descriptor": item.descriptor, "dimension": item.dimension, "activity": item.activity,
                "activity_category": item.activity_category, "prompt": item.prompt, "seed": seed, "base_seed": base_seed,
                "model_id": backend.model_id, "revision": backend.revision, "settings": backend.settings,
                "settings_fingerprint": fingerprint, "sha256": hashlib.sha256(data).hexdigest(),
                "width": image.width, "height": image.height, "worker": worker, "elapsed_s": round(elapsed, 3),
                "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            })
            made += 1
            log(f"[{position}/{len(todo)}] {item.file_name} ({elapsed:.2f} s)")
        return {"worker": worker, "assigned": len(mine), "already_done": len(mine) - len(todo), "generated": made,
                "failed": failed, "fingerprint": fingerprint}
    finally:
        lock.close()


def merge(output: str | os.PathLike, expected: list[ImageItem] | None = None) -> dict:
    """Merge ``output``'s manifests into ``output/manifest.jsonl``, keeping the entries that match their image.

    An entry counts when its file exists with the recorded sha256; others are stale (the image was
    regenerated, e.g. with ``--allow-mixed-settings``, or changed or deleted since) and are dropped
    and counted. With ``expected`` (the planned items), also lists the expected images no entry holds.
    """
    output = Path(output)
    paths = manifest_paths(output)
    if not paths:
        raise GenerateError(f"{output}: no manifest to merge (expected {MANIFEST} or {WORKER_MANIFESTS}/*.jsonl)")
    digests: dict[str, str | None] = {}

    def matches_its_image(entry: dict) -> bool:
        name = entry["file_name"]
        if name not in digests:
            path = output / name
            digests[name] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
        return digests[name] == entry.get("sha256")

    recorded = set()
    for path in paths:
        recorded |= set(imagegen.Manifest(path).done())
    try:
        entries = imagegen.merge_manifests(paths, output / MANIFEST, keep=matches_its_image)
    except imagegen.ManifestConflictError as exc:
        raise GenerateError(str(exc)) from None
    missing = sorted({item.key for item in expected or []} - set(entries))
    return {"entries": len(entries), "manifests": [str(p.relative_to(output)) for p in paths], "missing": missing,
            "stale": sorted(recorded - set(entries)),
            "fingerprints": sorted({e.get("settings_fingerprint") for e in entries.values()} - {None})}


def _split(values):
    if not values:
        return None
    out = []
    for value in values:
        out.extend(v.strip() for v in value.split(",") if v.strip())
    return out


def _add_selection(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--lists", required=True, help="folder with the authors' lists (maledes.csv, femaledes.csv, activities.json, "
                                                       "roles.json, sscm_dictionary.csv), as for `lm-eval-bias build vignette`")
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS),
                        help="individual images (identity x activity) and/or no-activity portraits (default: both)")
    parser.add_argument("--genders", nargs="+", help="female and/or male (default: both)")
    parser.add_argument("--dimensions", nargs="+", help=f"bias dimensions (the lists' axis): {', '.join(DIMENSIONS)}")
    parser.add_argument("--descriptors", nargs="+", help="identity descriptors (e.g. 'wheelchair man'; commas also separate)")
    parser.add_argument("--activities", nargs="+", help="activities as in activities.json (commas also separate)")
    parser.add_argument("--limit", type=int, help="keep the first N selected images (sorted by image id), before sharding")
    parser.add_argument("--wording", choices=sorted(WORDINGS), default="authors",
                        help="prompt wording: the authors' scripts ('A ...', default) or the paper's template ('An ...')")
    parser.add_argument("--prompt-template", help="custom individual prompt with {descriptor} and {activity} (overrides --wording)")
    parser.add_argument("--portrait-template", help="custom portrait prompt with {descriptor} (overrides --wording)")


def _plan(args) -> tuple[list[ImageItem], str, str]:
    lists = read_lists(args.lists)
    individual = args.prompt_template or WORDINGS[args.wording][0]
    portrait = args.portrait_template or WORDINGS[args.wording][1]
    try:
        individual.format(descriptor="x", activity="y")
        portrait.format(descriptor="x")
    except (KeyError, IndexError, ValueError) as exc:
        raise GenerateError(f"prompt template: only {{descriptor}} and {{activity}} may be used ({exc})") from None
    if args.limit is not None and args.limit < 1:
        raise GenerateError("--limit must be at least 1")
    items = plan_items(lists, individual_template=individual, portrait_template=portrait, kinds=args.kinds,
                       genders=_split(args.genders), dimensions=_split(args.dimensions), descriptors=_split(args.descriptors),
                       activities=_split(args.activities), limit=args.limit)
    if not items:
        raise GenerateError("the filters select no image")
    return items, individual, portrait


def make_backend(args):
    """The backend the options name (loading a diffusers pipeline may take minutes for FLUX.1-dev)."""
    if args.backend == "openai-images":
        if not args.base_url or not args.model:
            raise GenerateError("--backend openai-images needs --base-url and --model")
        return imagegen.OpenAIImages(args.model, base_url=args.base_url, api_key_env=args.api_key_env or None, size=args.size,
                                     retries=args.retries, timeout=args.timeout, backoff=args.backoff, send_seed=args.send_seed,
                                     response_format=None if args.response_format == "none" else args.response_format)
    return imagegen.DiffusersTextToImage(args.model or DEFAULT_MODEL, revision=args.revision, dtype=args.dtype, steps=args.steps,
                                         guidance_scale=args.guidance_scale, height=args.height, width=args.width,
                                         attention_slicing=not args.no_attention_slicing, device=args.device)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lm-eval-bias generate vignette",
        description="Generate the VIGNETTE individual images and portraits (FLUX.1-dev by default, as the authors' scripts) "
                    "into the folder layout `lm-eval-bias build vignette` reads. Resumable; shardable over machines "
                    "(--shard) and GPUs (torchrun / accelerate launch). Sub-actions: `merge` (merge the workers' "
                    "manifests), `human-check` (the paper's 10% human check, App. A.2).")
    _add_selection(parser)
    parser.add_argument("--output", required=True, help="output folder (<gender>/<descriptor>_<activity>.png, manifests)")
    parser.add_argument("--backend", choices=("diffusers", "openai-images"), default="diffusers")
    parser.add_argument("--model", help=f"diffusers: Hub id or local folder (default {DEFAULT_MODEL}); openai-images: the model name")
    parser.add_argument("--revision", help="diffusers: Hub revision (branch, tag or commit; the resolved commit is recorded)")
    parser.add_argument("--dtype", default="float16", choices=("float16", "bfloat16", "float32"),
                        help="diffusers weights dtype (default float16 as the authors; float32 on CPU)")
    parser.add_argument("--steps", type=int, default=20, help="inference steps (default 20, the authors')")
    parser.add_argument("--guidance-scale", type=float, help="guidance scale (default: the pipeline's own, as the authors)")
    parser.add_argument("--height", type=int, help="image height (default: the pipeline's own; FLUX.1-dev 1024)")
    parser.add_argument("--width", type=int, help="image width (default: the pipeline's own; FLUX.1-dev 1024)")
    parser.add_argument("--no-attention-slicing", action="store_true", help="turn off attention slicing (on in the authors' scripts)")
    parser.add_argument("--device", help="torch device (default: cuda:LOCAL_RANK under torchrun/accelerate, cuda, else cpu)")
    parser.add_argument("--base-url", help="openai-images: the endpoint's base URL (e.g. https://api.openai.com/v1)")
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY",
                        help="openai-images: environment variable holding the API key (default OPENAI_API_KEY; '' sends none)")
    parser.add_argument("--size", default="1024x1024", help="openai-images: image size (default 1024x1024)")
    parser.add_argument("--response-format", default="b64_json", choices=("b64_json", "none"),
                        help="openai-images: send response_format=b64_json (default) or omit it (endpoints that always return b64)")
    parser.add_argument("--retries", type=int, default=3, help="openai-images: retries on 429/5xx/connection errors (default 3)")
    parser.add_argument("--backoff", type=float, default=1.0, help="openai-images: first retry wait in seconds, doubled each retry")
    parser.add_argument("--timeout", type=float, default=120, help="openai-images: seconds per request (default 120)")
    parser.add_argument("--send-seed", action="store_true", help="openai-images: pass the derived seed (servers that accept one)")
    parser.add_argument("--seed", type=int, default=0, help="base seed: each image's seed is derived from it and the image id")
    parser.add_argument("--shard", help="'i/n': this machine's part of the images (0-based); GPUs of one machine split it further")
    parser.add_argument("--allow-mixed-settings", action="store_true",
                        help="continue in a folder whose images were made with other settings (recorded per image)")
    parser.add_argument("--max-failures", type=int, default=10, help="stop after this many failed images in a row (default 10)")
    parser.add_argument("--dry-run", action="store_true", help="list this worker's images and prompts; load no model")
    return parser


def _merge_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="lm-eval-bias generate vignette merge",
                                     description="Check every worker's images against its manifest and merge the manifests "
                                                 "into OUTPUT/manifest.jsonl (sorted by image id). Copy the machines' output "
                                                 "folders into one first (their manifests have distinct names).")
    parser.add_argument("--output", required=True, help="the generation output folder")
    parser.add_argument("--lists", help="with the generation's filters: also list the expected images that are missing")
    for flag in ("--kinds", "--genders", "--dimensions", "--descriptors", "--activities"):
        parser.add_argument(flag, nargs="+")
    parser.add_argument("--limit", type=int)
    args = parser.parse_args(argv)
    expected = None
    if args.lists:
        expected = plan_items(read_lists(args.lists), kinds=args.kinds or KINDS, genders=_split(args.genders),
                              dimensions=_split(args.dimensions), descriptors=_split(args.descriptors),
                              activities=_split(args.activities), limit=args.limit)
    summary = merge(args.output, expected)
    print(f"merged {len(summary['manifests'])} manifest(s): {summary['entries']} images into {Path(args.output) / MANIFEST}")
    if summary["stale"]:
        print(f"note: {len(summary['stale'])} recorded image(s) no longer match their file (missing, changed or regenerated): "
              f"{', '.join(summary['stale'][:5])}")
    if len(summary["fingerprints"]) > 1:
        print(f"note: {len(summary['fingerprints'])} settings fingerprints ({', '.join(summary['fingerprints'])})")
    if expected is not None:
        print(f"{len(expected) - len(summary['missing'])} of {len(expected)} expected images present")
        if summary["missing"]:
            print(f"error: generate vignette merge: {len(summary['missing'])} expected images missing "
                  f"(first: {', '.join(summary['missing'][:5])}); run the generation again", file=sys.stderr)
            return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] == "merge":
            return _merge_main(argv[1:])
        return _generate_main(argv)
    except (GenerateError, imagegen.ImageBackendError, imagegen.MixedSettingsError) as exc:
        print(f"error: generate vignette: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, (GenerateError, imagegen.MixedSettingsError)) else 1
    except ValueError as exc:  # bad --shard, list errors
        print(f"error: generate vignette: {exc}", file=sys.stderr)
        return 2


def _remove_if_nothing_made(output: str | os.PathLike, created: bool) -> None:
    """Remove ``output`` when this run created it and wrote no image into it (only its manifests folder
    with the worker's lock file and an empty manifest): a failed first run leaves nothing behind."""
    output = Path(output)
    if created and output.is_dir() and not any(p.is_file() and p.relative_to(output).parts[0] != WORKER_MANIFESTS
                                               for p in output.rglob("*")):
        shutil.rmtree(output, ignore_errors=True)


def _generate_main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    items, individual, portrait = _plan(args)
    if args.dry_run:
        mine = imagegen.shard_items(items, args.shard, key=lambda item: item.key)
        for item in mine:
            print(json.dumps({"file_name": item.file_name, "prompt": item.prompt, "seed": imagegen.derive_seed(item.key, args.seed)}))
        print(f"{len(mine)} of {len(items)} images are worker {worker_name(args.shard)}'s", file=sys.stderr)
        return 0
    check_output_folder(args.output)  # an existing file as --output: refused before the backend is made
    backend = make_backend(args)
    created = not Path(args.output).exists()
    try:
        summary = generate_images(backend, items, args.output, shard=args.shard, base_seed=args.seed,
                                  individual_template=individual, portrait_template=portrait,
                                  allow_mixed_settings=args.allow_mixed_settings, max_failures=args.max_failures,
                                  log=lambda line: print(line, flush=True))
    except BaseException:
        _remove_if_nothing_made(args.output, created)
        raise
    print(f"worker {summary['worker']}: generated {summary['generated']}, already done {summary['already_done']}, "
          f"failed {len(summary['failed'])} (settings fingerprint {summary['fingerprint']})")
    if not summary["generated"] and not summary["already_done"]:
        _remove_if_nothing_made(args.output, created)  # every image failed: no folder holding only a lock file
    elif summary["worker"] == "main":
        merged = merge(args.output)
        print(f"manifest: {merged['entries']} images in {Path(args.output) / MANIFEST}")
    else:
        print(f"when every worker is done: lm-eval-bias generate vignette merge --output {args.output}")
    if summary["failed"]:
        print(f"error: generate vignette: {len(summary['failed'])} images failed (first: {summary['failed'][0]}); "
              "run the same command again to retry them", file=sys.stderr)
        return 1
    return 0
