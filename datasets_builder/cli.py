"""``lm-eval-bias build <dataset>`` sub-commands. Errors in the source print ``error: <file>: <reason>``
(``<file>:<line>`` where there is a line; no traceback) and exit with status 2; nothing is written then.
The readers behind this contract are in :mod:`lm_eval_bias.datasets_builder.readers`."""

from __future__ import annotations

import os
import sys

from lm_eval_bias.datasets_builder.hub import SourceError, push_to_hub


def _finish(args, output) -> int:
    """Push the built folder when ``--push-to-hub`` asks: private unless ``--public`` (pictures of
    people: public but gated). Says what was done and where; a refused or failed push exits 2 and
    leaves the built folder in place."""
    repo_id = getattr(args, "push_to_hub", None)
    if not repo_id:
        return 0
    try:
        result = push_to_hub(output, repo_id, public=getattr(args, "public", False))
    except SourceError as exc:
        print(_printable(f"error: {exc.path}: {exc.reason} (the dataset is at {output})"), file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - network / Hub errors: one line, no traceback (never carries the token)
        print(_printable(f"error: push to {repo_id} failed: {type(exc).__name__}: {exc} (the dataset is at {output}; "
                         "check the repository's visibility and gating on the Hub)"), file=sys.stderr)
        return 2
    print(f"pushed to {result.url}: {result.describe()}")
    return 0


def _build_focus(args) -> int:
    from lm_eval_bias.datasets_builder.focus import build_focus

    summary = build_focus(args.source, args.output, overwrite=args.overwrite, license=args.license,
                          strict=args.strict)
    templates = "; ".join(f"{o}: {len(t)}" for o, t in summary.templates.items())
    if summary.missing_cells:
        print(f"warning: {len(summary.missing_cells)} missing cells (templates without every race x gender variant; "
              f"the tasks name them, --strict refuses them): {', '.join(summary.missing_cells)}")
    if summary.n_androgynous:
        print(f"note: {summary.n_androgynous} optional androgynous images (REFLECT App. C.8; asked by the MCQ tasks only)")
    print(f"wrote {summary.n_images} images ({templates} templates) to {summary.output}")
    return _finish(args, summary.output)


def _build_focus_bios(args) -> int:
    from lm_eval_bias.datasets_builder.focus_bios import build_focus_bios

    summary = build_focus_bios(args.source, args.output, per_occupation=args.per_occupation, seed=args.seed,
                               overwrite=args.overwrite, strict=args.strict)
    for occupation, n in summary.per_occupation.items():
        note = "" if n >= args.per_occupation else f"  (fewer than {args.per_occupation})"
        print(f"{occupation:<10}{n:>4} biographies{note}")
    for profession, n in sorted(summary.dropped.items()):
        print(f"dropped {n} rows of profession {profession}")
    print("changes per biography:", ", ".join(f"{bio}={n}" for bio, n in summary.changes))
    print(f"wrote {sum(summary.per_occupation.values())} biographies to {summary.output}")
    return _finish(args, summary.output)


def _build_fact_or_fair(args) -> int:
    from lm_eval_bias.datasets_builder.fact_or_fair import build_fact_or_fair

    summary = build_fact_or_fair(args.source, args.output, seed=args.seed,
                                 drop_contradictions=args.drop_contradictions, overwrite=args.overwrite)
    for statistic, attribute in summary.dropped:
        print(f"dropped contradictory {statistic} / {attribute}")
    print(f"wrote {summary.n_objective} objective and {summary.n_subjective} subjective queries to {summary.output}")
    return _finish(args, summary.output)


def _build_cf_vqa(args) -> int:
    from lm_eval_bias.datasets_builder.cf_vqa import build_cf_vqa

    summary = build_cf_vqa(args.source, args.output, overwrite=args.overwrite, license=args.license,
                           relevance_scale=args.relevance_scale, strict=args.strict)
    per = ", ".join(f"{c}: {n}" for c, n in summary.per_category.items())
    if summary.missing_subcategories:
        print(f"warning: {len(summary.missing_subcategories)} subcategories without pairs (--strict refuses them): "
              f"{', '.join(summary.missing_subcategories)}")
    for column, n in (summary.optional_absent or {}).items():
        if n:
            print(f"note: optional {column} absent in {n} of {summary.n_pairs} pairs")
    print(f"wrote {summary.n_pairs} pairs ({per}) to {summary.output}")
    return _finish(args, summary.output)


def _build_vignette(args) -> int:
    from lm_eval_bias.datasets_builder.vignette import build_vignette

    summary = build_vignette(args.source, args.lists, args.output, overwrite=args.overwrite, license=args.license,
                             strict=args.strict, exclude_failed=args.exclude_failed)
    for note in summary.notes:
        print(f"note: {note}")
    if summary.missing_cells:
        print(f"warning: {len(summary.missing_cells)} listed images absent (--strict refuses them): "
              f"{', '.join(summary.missing_cells)}")
    print(f"wrote {summary.n_images} images ({summary.n_portraits} portraits; {summary.identities_with_images} identities, "
          f"{summary.activities_with_images} activities) to {summary.output}")
    return _finish(args, summary.output)


def _printable(text: str) -> str:
    """``text`` with undecodable file-name bytes shown as ``\\xNN`` (printing never fails)."""
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _guarded(func):
    def run(args) -> int:
        if getattr(args, "public", False) and not getattr(args, "push_to_hub", None):
            print("error: --public: only meaningful with --push-to-hub REPO_ID", file=sys.stderr)
            return 2
        try:
            return func(args)
        except SourceError as exc:
            print(_printable(f"error: {exc.path}: {exc.reason}"), file=sys.stderr)
        except OSError as exc:  # a file or folder the builder could not read or write
            named = isinstance(exc.filename, (str, bytes, os.PathLike))
            where = os.fsdecode(exc.filename) if named else "(unknown file)"
            print(_printable(f"error: {where}: {exc.strerror or exc}"), file=sys.stderr)
        return 2

    return run


def add_build_subcommands(subparsers) -> None:
    """Add ``focus`` and ``focus-bios`` to an argparse sub-parser group; each sets ``func``."""
    focus = subparsers.add_parser("focus", help="FOCUS photos from the authors' release layout")
    focus.add_argument("--source", required=True, help="DIR/<occupation>/<template>/<Race>_<gender>.<jpg|png>")
    focus.add_argument("--output", required=True, help="output folder (Hub layout)")
    focus.add_argument("--license", default="other", help="license field of the dataset card (default: other)")
    focus.add_argument("--strict", action="store_true",
                       help="refuse a source that is not the authors' full release (6 occupations x 8 templates x 10 "
                            "variants): every missing folder and cell is named and nothing is written")
    focus.set_defaults(func=_guarded(_build_focus))

    bios = subparsers.add_parser("focus-bios", help="salary-task biographies (CSV/JSONL or Bias-in-Bios)")
    bios.add_argument("--source", required=True, help="CSV/JSONL of (occupation, biography) or Bias-in-Bios rows")
    bios.add_argument("--output", required=True, help="output folder (Hub layout)")
    bios.add_argument("--per-occupation", type=int, default=50, help="biographies per occupation (paper: 50)")
    bios.add_argument("--seed", type=int, default=0, help="seed of the per-occupation selection")
    bios.add_argument("--strict", action="store_true",
                      help="refuse a source with fewer than --per-occupation biographies for any of the paper's six "
                           "occupations (named)")
    bios.set_defaults(func=_guarded(_build_focus_bios))

    fof = subparsers.add_parser("fact-or-fair", help="FACT-OR-FAIR objective and subjective queries")
    fof.add_argument("--source", required=True, help="folder with the authors' files (all_highest_lowest.csv, ...)")
    fof.add_argument("--output", required=True, help="output folder (Hub layout, configs objective/subjective)")
    fof.add_argument("--seed", type=int, default=0, help="seed of option orders and profiles (recorded)")
    fof.add_argument("--drop-contradictions", action="store_true",
                     help="drop queries on statistics whose highest and lowest group are the same (recorded; the "
                          "default keeps them, as the paper scored them; the tasks' contradictory_truth=drop does the same)")
    fof.set_defaults(func=_guarded(_build_fact_or_fair))

    cfv = subparsers.add_parser("cf-vqa", help="Counterfactual VQA pairs (images + manifest.jsonl/csv)")
    cfv.add_argument("--source", required=True, help="folder with manifest.jsonl or manifest.csv and the images")
    cfv.add_argument("--output", required=True, help="output folder (Hub layout)")
    cfv.add_argument("--license", default="other", help="license field of the dataset card (default: other)")
    cfv.add_argument("--relevance-scale", choices=("1-5", "0-10"), default="1-5",
                     help="scale of the manifest's relevance_score where a row names none (default: the paper's 1-5 "
                          "Likert scale, App. D.1; recorded in the dataset)")
    cfv.add_argument("--strict", action="store_true",
                     help="refuse a source without pairs in every one of the paper's 17 subcategories (named)")
    cfv.set_defaults(func=_guarded(_build_cf_vqa))

    vig = subparsers.add_parser("vignette", help="VIGNETTE individual images + the authors' lists")
    vig.add_argument("--source", required=True, help="DIR/<gender>/<descriptor>_<activity>.png and <gender>/<descriptor>.png")
    vig.add_argument("--lists", required=True, help="folder with maledes.csv, femaledes.csv, activities.json, roles.json, "
                                                    "sscm_dictionary.csv")
    vig.add_argument("--output", required=True, help="output folder (Hub layout)")
    vig.add_argument("--license", default="other", help="license field of the dataset card (default: other)")
    vig.add_argument("--strict", action="store_true",
                     help="refuse a source without a portrait and an image per activity for every listed identity")
    vig.add_argument("--exclude-failed", nargs="+", metavar="RATINGS_CSV",
                     help="completed human-check rating sheets (`generate vignette human-check`): leave out the images that "
                          "failed (any annotator, any criterion) and record the check on the card")
    vig.set_defaults(func=_guarded(_build_vignette))
    from lm_eval_bias.vignette.real_images import add_build_parser as add_vignette_pata

    pata = add_vignette_pata(subparsers, _guarded)  # build vignette-pata: VIGNETTE real-vs-synthetic (App. A.6)

    for parser in (focus, bios, fof, cfv, vig, pata):
        parser.add_argument("--push-to-hub", metavar="REPO_ID", default=None,
                            help="upload the output folder as a PRIVATE Hub dataset repository (token from HF_TOKEN or "
                                 "the login cache, never printed)")
        parser.add_argument("--public", action="store_true",
                            help="with --push-to-hub: make the repository public; datasets with pictures of people "
                                 "(focus, vignette, cf-vqa) become public but gated (manual approval, terms in the card)")
        parser.add_argument("--overwrite", action="store_true", help="replace an existing output folder")
