"""``lm-eval-bias generate cf-vqa STAGE --workdir DIR ...``: the Counterfactual VQA construction pipeline
(:mod:`lm_eval_bias.cf_vqa.construction`; docs/cf-vqa.md, "Building the dataset").

Stages: ``attributes``, ``describe``, ``sheets``, ``import-ratings``, ``images``, ``quality``,
``manifest``; ``merge`` joins a stage's shard files; ``all`` runs every stage it can (it stops after
the sheets until ratings are imported, unless ``--no-validation``). Every failure is one line
``error: generate cf-vqa <stage>: <why>`` with exit status 2.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

from lm_eval_bias.cf_vqa import construction as c

PROG = "lm-eval-bias generate cf-vqa"
STAGE_HELP = {
    "attributes": "bias attributes: the user's list (--attributes) or chat-model proposals (--propose-from, App. K.1)",
    "describe": "two image descriptions, a question and four options per attribute (App. K.2)",
    "sheets": "the Likert validation sheet (or, with --answers, the answer sheet on the images)",
    "import-ratings": "import completed sheets: mean rating < 3 kept, share dropped, agreement, human consistency",
    "images": "image pairs: b+ generated, then edited into b- (OpenAI-compatible images endpoint or diffusers)",
    "quality": "Attribute Reflection and Common Content Discrepancy per pair and per generator (Table 1, App. C)",
    "manifest": "manifest.jsonl for `lm-eval-bias build cf-vqa --source WORKDIR`",
    "merge": "join a stage's shard files (--stage) into its single file",
    "all": "every stage in order, resuming where the work folder stands",
}
MERGEABLE = {"proposals": c.STAGES["proposals"], "describe": c.STAGES["describe"], "quality": c.STAGES["quality"]}


def _key_values(pairs: list[str] | None, option: str) -> dict[str, Any]:
    from lm_eval_bias.cf_vqa.chat import parse_chat_args

    try:
        return parse_chat_args(pairs)
    except ValueError as exc:
        raise c.StageError(str(exc).replace("--chat-arg", option)) from None


def _common(parser: argparse.ArgumentParser, *, shard: bool = True, retries: bool = False) -> None:
    parser.add_argument("--workdir", required=True, type=Path, help="the work folder (created if missing)")
    if shard:
        parser.add_argument("--shard", help='this process\'s part "i/n" (0 <= i < n); merge the parts with `merge`')
        parser.add_argument("--retry-failed", action="store_true", help="attempt items recorded as failed again")
    if retries:
        parser.add_argument("--max-attempts", type=int, default=c.DEFAULT_MAX_ATTEMPTS,
                            help=f"model calls per item before it is recorded as failed (default {c.DEFAULT_MAX_ATTEMPTS})")


def _chat_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("chat model")
    group.add_argument("--chat-backend", choices=("openai", "vllm", "planted"), default="openai",
                       help="openai: any OpenAI-compatible endpoint; vllm: vLLM offline; planted: the test model")
    group.add_argument("--chat-model", help="model id (recorded as each pair's question_source)")
    group.add_argument("--chat-base-url", help="OpenAI-compatible base URL (default https://api.openai.com/v1)")
    group.add_argument("--chat-api-key-env", default="OPENAI_API_KEY",
                       help="environment variable holding the API key (never written anywhere)")
    group.add_argument("--batch-size", type=int, default=c.DEFAULT_BATCH_SIZE,
                       help=f"conversations per call for clients that batch (vllm; default {c.DEFAULT_BATCH_SIZE})")
    group.add_argument("--chat-arg", action="append", metavar="KEY=VALUE",
                       help="client option, repeatable: temperature, max_tokens, seed, retries, timeout, backoff; "
                            "vllm engine arguments")


def _image_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("image pairs")
    group.add_argument("--image-backend", choices=("openai", "diffusers"), default="openai",
                       help="openai: an OpenAI-compatible images endpoint, generate b+ then edit it (GPT-Image-1 as in "
                            "the paper); diffusers: a local text-to-image pipeline for b+ and an instruction-editing "
                            "pipeline (InstructPix2Pix) for b-")
    group.add_argument("--image-model", help="images model id (openai) or text-to-image pipeline: Hub id or folder")
    group.add_argument("--image-revision", help="revision of --image-model (diffusers)")
    group.add_argument("--edit-model", help="instruction-editing pipeline (diffusers): Hub id or folder")
    group.add_argument("--edit-revision", help="revision of --edit-model")
    group.add_argument("--image-base-url", help="OpenAI-compatible base URL (default https://api.openai.com/v1)")
    group.add_argument("--image-api-key-env", default="OPENAI_API_KEY",
                       help="environment variable holding the key ('none': send no key, for local servers)")
    group.add_argument("--image-arg", action="append", metavar="KEY=VALUE",
                       help="text-to-image / images-endpoint option, repeatable (steps, guidance_scale, height, "
                            "width, dtype, device; size, retries, timeout)")
    group.add_argument("--edit-arg", action="append", metavar="KEY=VALUE",
                       help="editing-pipeline option, repeatable (steps, image_guidance_scale, guidance_scale, dtype)")
    group.add_argument("--image-set", default="default", help="name of this generator's image set (default 'default')")
    group.add_argument("--generator-name", help="label of the generator in Table 1 (default from the models)")
    group.add_argument("--seed", type=int, default=0, help="base seed; each image's seed derives from it and the pair")
    group.add_argument("--edit-instruction", choices=("paper", "short"),
                       help="paper: App. K.3 step 2 verbatim (default for openai); short: one line naming the change "
                            "(default for diffusers, whose CLIP text encoder reads 77 tokens)")
    group.add_argument("--allow-mixed-settings", action="store_true",
                       help="continue an image set generated with other settings")


def _quality_options(parser: argparse.ArgumentParser) -> None:
    from lm_eval_bias.cf_vqa.pair_quality import BETA, TEMPERATURE

    group = parser.add_argument_group("pair quality")
    group.add_argument("--clip", help="local CLIP folder (the paper: ViT-B/32, e.g. a copy of openai/clip-vit-base-patch32)")
    group.add_argument("--quality-set", action="append", help="image set(s) to score (default: all)")
    group.add_argument("--temperature", type=float, default=TEMPERATURE, help=f"saliency temperature T (default {TEMPERATURE})")
    group.add_argument("--beta", type=float, default=BETA, help=f"weight of the image term (default {BETA})")
    group.add_argument("--n-boot", type=int, default=2000, help="bootstrap replicates for the intervals (default 2000)")


def _manifest_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("manifest")
    group.add_argument("--no-validation", action="store_true",
                       help="include pairs without human ratings (relevance_score empty)")
    group.add_argument("--min-reflection", type=float, help="leave out pairs with Attribute Reflection below this")
    group.add_argument("--max-discrepancy", type=float, help="leave out pairs with Common Content Discrepancy above this")


def _attribute_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("attributes")
    source = group.add_mutually_exclusive_group()
    source.add_argument("--attributes", type=Path, help="CSV or JSONL with category, subcategory, attribute")
    source.add_argument("--propose-from", type=Path, help="captions (text, one per line, or JSONL with 'caption')")
    group.add_argument("--existing-attributes", type=Path,
                       help="attributes already held (one per line): proposals similar to them are dropped")
    group.add_argument("--min-social-impact", type=int, default=c.SOCIAL_IMPACT_KEEP_ABOVE + 1,
                       help="keep proposals scored at least this (default 4: the paper drops 3 or below)")


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description="Build Counterfactual VQA pairs the way the paper did, in "
                                     "resumable stages that write into one work folder (docs/cf-vqa.md, 'Building the "
                                     "dataset').")
    stages = parser.add_subparsers(dest="stage", metavar="STAGE", required=True)
    p = stages.add_parser("attributes", help=STAGE_HELP["attributes"])
    _common(p, retries=True)
    _chat_options(p)
    _attribute_options(p)
    p = stages.add_parser("describe", help=STAGE_HELP["describe"])
    _common(p, retries=True)
    _chat_options(p)
    p.add_argument("--pairs-per-attribute", type=int, default=1, help="pairs asked per attribute (default 1)")
    p = stages.add_parser("sheets", help=STAGE_HELP["sheets"])
    _common(p, shard=False)
    p.add_argument("--annotators", type=int, default=c.N_ANNOTATORS, help="annotators per pair (default 5, the paper's)")
    p.add_argument("--answers", action="store_true", help="write the answer sheet on the images of --image-set")
    p.add_argument("--image-set", default="default")
    p.add_argument("--overwrite", action="store_true", help="replace a sheet that differs")
    p = stages.add_parser("import-ratings", help=STAGE_HELP["import-ratings"])
    _common(p, shard=False)
    p.add_argument("sheets", nargs="+", type=Path, help="every completed sheet (CSV)")
    p.add_argument("--annotators", type=int, default=c.N_ANNOTATORS)
    p = stages.add_parser("images", help=STAGE_HELP["images"])
    _common(p)
    _image_options(p)
    p = stages.add_parser("quality", help=STAGE_HELP["quality"])
    _common(p)
    _quality_options(p)
    p = stages.add_parser("manifest", help=STAGE_HELP["manifest"])
    _common(p, shard=False)
    _manifest_options(p)
    p.add_argument("--image-set", default="default")
    p = stages.add_parser("merge", help=STAGE_HELP["merge"])
    _common(p, shard=False)
    p.add_argument("--stage", dest="stage_name", required=True, choices=(*MERGEABLE, "images"),
                   help="the stage whose shard files to join")
    p.add_argument("--image-set", default="default")
    p = stages.add_parser("all", help=STAGE_HELP["all"])
    _common(p, retries=True)
    _chat_options(p)
    _attribute_options(p)
    _image_options(p)
    _quality_options(p)
    _manifest_options(p)
    p.add_argument("--pairs-per-attribute", type=int, default=1)
    p.add_argument("--annotators", type=int, default=c.N_ANNOTATORS)
    return parser


def _chat_client(args):
    """The chat client of ``--chat-backend`` / ``--chat-model`` / ``--chat-base-url`` / ``--chat-arg``."""
    from lm_eval_bias.cf_vqa import chat

    if not args.chat_model:
        raise c.StageError("--chat-model is required for this stage")
    extra = _key_values(args.chat_arg, "--chat-arg")
    if args.chat_backend == "openai":
        return chat.OpenAIChat(args.chat_model, base_url=args.chat_base_url or "https://api.openai.com/v1",
                               api_key_env=args.chat_api_key_env, **extra)
    if args.chat_backend == "vllm":
        return chat.VLLMChat(args.chat_model, **extra)
    from lm_eval_bias.cf_vqa.planted_chat import PlantedChat  # --chat-backend planted (argparse checks the choice)

    return PlantedChat(args.chat_model, **extra)


def _image_models(args):
    """(text_to_image, editor, generator name) of the image options."""
    from lm_eval_bias.core import imagegen

    image_args, edit_args = _key_values(args.image_arg, "--image-arg"), _key_values(args.edit_arg, "--edit-arg")
    if args.image_backend == "openai":
        key_env = None if args.image_api_key_env.lower() in ("", "none") else args.image_api_key_env
        client = imagegen.OpenAIImages(args.image_model, base_url=args.image_base_url or "https://api.openai.com/v1",
                                       api_key_env=key_env, **image_args)
        return client, client, args.generator_name or f"openai:{args.image_model}"
    t2i = imagegen.DiffusersTextToImage(args.image_model, revision=args.image_revision, **image_args)
    editor = imagegen.DiffusersImageEditor(args.edit_model, revision=args.edit_revision, **edit_args)
    name = args.generator_name or f"diffusers:{Path(args.image_model).name}+{Path(args.edit_model).name}"
    return t2i, editor, name


def _print(stage: str, counts: dict[str, Any]) -> None:
    print(f"{stage}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))


def _attributes(args, workdir: Path) -> None:
    existing = []
    if args.existing_attributes:
        if not args.existing_attributes.is_file():
            raise c.StageError(f"{args.existing_attributes}: file does not exist")
        existing = [line.strip() for line in args.existing_attributes.read_text(encoding="utf-8").splitlines() if line.strip()]
    if args.attributes:
        path = c.write_attributes(workdir, c.load_attribute_list(args.attributes))
        print(f"attributes: {len(c.read_attributes(workdir))} from {args.attributes} -> {path}")
    elif args.propose_from:
        counts = c.run_proposals(workdir, c.load_captions(args.propose_from), _chat_client(args), existing=existing,
                                 shard=args.shard, max_attempts=args.max_attempts, retry_failed=args.retry_failed,
                                 batch_size=args.batch_size)
        _print("proposals", counts)
        if args.shard:
            print("attributes: sharded run; merge the proposal shards (merge --stage proposals) and run the attributes "
                  "stage again without --shard to write attributes.jsonl")
        else:
            _print("attributes", c.attributes_from_proposals(workdir, existing, args.min_social_impact))
    elif not (workdir / "attributes.jsonl").is_file():
        raise c.StageError("give --attributes FILE or --propose-from CAPTIONS")


def _images(args, workdir: Path) -> None:
    if not args.image_model:
        raise c.StageError("--image-model is required for the images stage")
    if args.image_backend == "diffusers" and not args.edit_model:
        raise c.StageError("--edit-model (an instruction-editing pipeline) is required with --image-backend diffusers")
    paper_style = args.image_backend == "openai"
    counts = c.run_images(workdir, lambda: _image_models(args), image_set=args.image_set, shard=args.shard,
                          base_seed=args.seed, instruction_style=args.edit_instruction or ("paper" if paper_style else "short"),
                          first_turn="paper" if paper_style else "plain", allow_mixed_settings=args.allow_mixed_settings,
                          retry_failed=args.retry_failed)
    _print(f"images ({args.image_set})", counts)


def _quality(args, workdir: Path) -> None:
    from lm_eval_bias.cf_vqa.pair_quality import ClipPairEmbedder

    if not args.clip:
        raise c.StageError("--clip (a local CLIP folder, the paper's ViT-B/32) is required for the quality stage")
    if not Path(args.clip, "config.json").is_file():
        raise c.StageError(f"--clip {args.clip}: not a local CLIP folder (no config.json)")
    counts = c.run_quality(workdir, lambda: ClipPairEmbedder(args.clip), sets=args.quality_set, shard=args.shard,
                           temperature=args.temperature, beta=args.beta, retry_failed=args.retry_failed)
    _print("quality", counts)
    if args.shard:
        print("quality: sharded run; merge (merge --stage quality), then run quality without --shard for the table")
        return
    for row in c.quality_table(workdir, args.n_boot):
        print(f"quality {row['image_set']} ({row['generator']}, {row['n_pairs']} pairs): attribute reflection "
              f"{row['attribute_reflection']:.4f} [{row['attribute_reflection_ci_low']:.4f}, "
              f"{row['attribute_reflection_ci_high']:.4f}], common content discrepancy "
              f"{row['common_content_discrepancy']:.4f} [{row['common_content_discrepancy_ci_low']:.4f}, "
              f"{row['common_content_discrepancy_ci_high']:.4f}]")


def _import(args, workdir: Path) -> None:
    s = c.import_sheets(workdir, args.sheets, args.annotators)
    print(f"import-ratings: {s.ratings} ratings of {s.pairs_rated} pairs; kept {s.pairs_kept}, dropped "
          f"{s.pairs_dropped} ({s.share_dropped:.1%}); agreement with the majority label {s.majority_agreement_kept:.1%} "
          f"over kept pairs; {s.pairs_with_fewer_ratings} pairs with fewer than {args.annotators} ratings; "
          f"human consistency for {s.pairs_with_answers} pairs")


def _manifest(args, workdir: Path) -> None:
    report = c.write_manifest(workdir, image_set=args.image_set, require_validation=not args.no_validation,
                              min_reflection=args.min_reflection, max_discrepancy=args.max_discrepancy)
    left = ", ".join(f"{n} {why}" for why, n in report["left_out"].items()) or "none"
    print(f"manifest: {report['pairs']} pairs -> {workdir / 'manifest.jsonl'} (left out: {left}); next: "
          f"lm-eval-bias build cf-vqa --source {workdir} --output OUT")


def _all(args, workdir: Path) -> None:
    if args.attributes or args.propose_from or not (workdir / "attributes.jsonl").is_file():
        _attributes(args, workdir)
        if args.shard and args.propose_from:
            return
    client = _chat_client(args)
    _print("describe", c.run_describe(workdir, client, shard=args.shard, pairs_per_attribute=args.pairs_per_attribute,
                                      max_attempts=args.max_attempts, retry_failed=args.retry_failed,
                                      batch_size=args.batch_size))
    if args.shard:
        print("all: sharded run stops after describe; merge (merge --stage describe), then continue without --shard")
        return
    path, n = c.write_relevance_sheet(workdir, args.annotators)
    print(f"sheets: {n} rows -> {path}")
    if c.validated_pairs(workdir) is None and not args.no_validation:
        print("all: waiting for the human validation: have the sheet rated, import it with import-ratings, then run "
              "all again (or pass --no-validation)")
        return
    _images(args, workdir)
    if args.clip:
        _quality(args, workdir)
    else:
        print("quality: skipped (no --clip)")
    _manifest(args, workdir)


def run(args) -> None:
    workdir: Path = args.workdir
    if getattr(args, "max_attempts", 1) < 1:
        raise c.StageError(f"--max-attempts must be >= 1, got {args.max_attempts}")
    if workdir.exists() and not workdir.is_dir():
        raise c.StageError(f"{workdir}: --workdir is a file, expected a folder")
    if not workdir.exists():
        if args.stage not in ("attributes", "all"):
            raise c.StageError(f"{workdir}: work folder not found; start with the attributes stage (or all)")
        workdir.mkdir(parents=True)
        try:
            _run_stage(args, workdir)
        except BaseException:
            if not any(workdir.iterdir()):  # a failed first stage leaves no empty work folder behind
                workdir.rmdir()
            raise
        return
    _run_stage(args, workdir)


def _run_stage(args, workdir: Path) -> None:
    if args.stage == "attributes":
        _attributes(args, workdir)
    elif args.stage == "describe":
        _print("describe", c.run_describe(workdir, _chat_client(args), shard=args.shard,
                                          pairs_per_attribute=args.pairs_per_attribute,
                                          max_attempts=args.max_attempts, retry_failed=args.retry_failed,
                                          batch_size=args.batch_size))
    elif args.stage == "sheets":
        path, n = (c.write_answer_sheet(workdir, args.image_set, args.annotators, args.overwrite) if args.answers
                   else c.write_relevance_sheet(workdir, args.annotators, args.overwrite))
        print(f"sheets: {n} rows -> {path} (instructions: {path.parent / 'INSTRUCTIONS.md'})")
    elif args.stage == "import-ratings":
        _import(args, workdir)
    elif args.stage == "images":
        _images(args, workdir)
    elif args.stage == "quality":
        _quality(args, workdir)
    elif args.stage == "manifest":
        _manifest(args, workdir)
    elif args.stage == "merge":
        stem, key = ((c.images_stem(args.image_set), "pair_id") if args.stage_name == "images"
                     else MERGEABLE[args.stage_name])
        path, n = c.merge_stage(workdir, stem, key)
        print(f"merge: {n} items -> {path}")
    elif args.stage == "all":
        _all(args, workdir)


def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="warning: %(message)s")
    try:
        run(args)
    except (c.StageError, ValueError, OSError, RuntimeError) as exc:  # ChatError and image-backend errors included
        print(f"error: generate cf-vqa {args.stage}: {_one_line(exc)}", file=sys.stderr)
        return 2
    return 0


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
