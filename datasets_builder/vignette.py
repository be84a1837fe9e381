"""``lm-eval-bias build vignette``: VIGNETTE individual images and lists as a Hub-layout dataset.

Input: ``--source DIR`` with the individual images as the authors' pipeline names them,
``DIR/<gender>/<descriptor>_<activity>.png`` and no-activity portraits ``DIR/<gender>/<descriptor>.png``
(spaces as dashes, gender folders ``male`` / ``female``; JPEG accepted too), and ``--lists LISTS_DIR``
with the four list files in the upstream formats (:mod:`lm_eval_bias.vignette.schema`). Any subset of
identities and activities may have images; every file name must name a listed descriptor (of that
gender's list) and a listed activity. Images are checked as in the FOCUS builder (decodable JPEG/PNG,
size, no decompression bomb, no symlink out of the tree) and stored unchanged. The lists are read as
:func:`lm_eval_bias.vignette.schema.read_lists` says: UTF-8 only, JSON values of the expected types,
CSV rows as wide as the header, and an entry given twice (descriptor, activity, roles entry, SSCM
term) an error naming both places, conflicting or identical. Every problem fails with
``error: FILE[:LINE]: reason`` and nothing is written.

Output configs: ``default`` (one row per image, one image per parquet row group so a task reads any
image without reading its neighbours), ``identities``, ``activities`` (with the decision roles and
questions) and ``sscm`` (the trait dictionary). Pair images are never stored: the tasks compose them
when a doc is read (:mod:`lm_eval_bias.vignette.pairs`). Written atomically; images are streamed
through an on-disk Arrow file, so memory does not grow with the number of images.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from lm_eval_bias.datasets_builder.hub import (
    ContentIndex,
    DatasetCard,
    SourceInput,
    check_variant_image,
    check_variant_set,
    write_hub_dataset_configs,
)
from lm_eval_bias.datasets_builder.readers import SourceError, read_bytes
from lm_eval_bias.vignette.schema import (
    GENDERS,
    IMAGE_EXTENSIONS,
    VignetteLists,
    image_id,
    read_lists,
    slug,
)

DEFAULT_MAX_IMAGE_PIXELS = 40_000_000
#: What ``lm-eval-bias generate vignette`` writes beside the gender folders (skipped by the scan; the
#: merged manifest describes the generator on the card).
GENERATOR_ENTRIES = frozenset({"manifest.jsonl", "manifests", "human_check"})
#: Images per parquet shard: each image is its own row group, and a shard's footer lists every row
#: group, so small shards keep the footer a task parses to read one image small (~1.5 MB).
SHARD_ROWS = 1000
IMAGE_COLUMNS = {
    "image": "the individual image (original bytes)",
    "image_id": "`<gender>/<descriptor-slug>[_<activity-slug>]`",
    "gender": "female or male (the list the descriptor comes from)",
    "descriptor": "identity descriptor as in the list (e.g. 'wheelchair man')",
    "dimension": "bias dimension (the list's axis)",
    "activity": "activity as in activities.json; empty for a no-activity portrait",
    "activity_category": "time-use category of the activity; empty for a portrait",
    "file_name": "path relative to the source folder",
    "sha256": "of the file bytes",
    "width": "pixels",
    "height": "pixels",
}


@dataclass(frozen=True)
class VignetteBuildSummary:
    output: Path
    n_images: int
    n_portraits: int
    identities_with_images: int
    activities_with_images: int
    notes: tuple[str, ...]
    #: ``<gender>/<descriptor>`` without a portrait, ``<gender>/<descriptor>_<activity>`` without an image
    missing_cells: tuple[str, ...] = ()


def _check_link(path: Path, root: Path) -> None:
    if path.is_symlink():
        target = path.resolve()
        if root != target and root not in target.parents:
            raise SourceError(path, f"symlink points outside the source tree ({target})")


def scan_images(source: str | os.PathLike, lists: VignetteLists, *, max_image_pixels: int = DEFAULT_MAX_IMAGE_PIXELS,
                min_side: int = 16, max_side: int = 8192) -> list[dict]:
    """Validate every image under ``source`` against ``lists``; rows without image bytes (file path in
    ``file_name``), sorted by image id. Raises :class:`SourceError` naming the file and the reason."""
    root = Path(source).absolute()
    if not root.is_dir():
        raise SourceError(root, "source folder does not exist")
    resolved = root.resolve()
    identities, activities = lists.by_slug()
    rows, seen = [], {}
    # integrity: one image per identity x activity (same content twice is refused), and every image of
    # one mode and size (the paper: "the same camera angle, framing, and image resolution"; pairs are
    # composed side by side from these images)
    contents = ContentIndex("each identity x activity needs its own image (one copied over another?)")
    all_facts = []
    entries = sorted(p for p in root.iterdir() if not p.name.startswith(".") and p.name not in GENERATOR_ENTRIES)
    if not entries:
        raise SourceError(root, "source folder is empty")
    for gender_dir in entries:
        _check_link(gender_dir, resolved)
        if not gender_dir.is_dir() or gender_dir.name not in GENDERS:
            raise SourceError(gender_dir, f"unexpected entry: expected a gender folder, one of {GENDERS}")
        for file in sorted(p for p in gender_dir.iterdir() if not p.name.startswith(".")):
            _check_link(file, resolved)
            stem, ext = os.path.splitext(file.name)
            if not file.is_file() or ext.lower() not in IMAGE_EXTENSIONS:
                raise SourceError(file, f"unexpected entry: expected <descriptor>[_<activity>] with extension {IMAGE_EXTENSIONS}")
            parts = stem.split("_")
            if len(parts) > 2 or not all(parts):
                raise SourceError(file, "file name must be <descriptor>_<activity> or <descriptor> (spaces as dashes)")
            identity = identities.get((gender_dir.name, parts[0].lower()))
            if identity is None:
                raise SourceError(file, f"unknown descriptor {parts[0]!r}: not in the {gender_dir.name} identity list")
            activity = None
            if len(parts) == 2:
                activity = activities.get(parts[1].lower())
                if activity is None:
                    raise SourceError(file, f"unknown activity {parts[1]!r}: not in activities.json")
            key = image_id(gender_dir.name, identity.descriptor, activity.name if activity else None)
            if key in seen:
                raise SourceError(file, f"duplicate image: {seen[key]} has the same descriptor and activity")
            seen[key] = file.name
            data = read_bytes(file)
            facts = check_variant_image(file, data, max_image_pixels, min_side, max_side)  # EXIF rotation refused
            width, height = facts.size
            contents.add(facts, key)
            all_facts.append(facts)
            rows.append({
                "image_id": key, "gender": gender_dir.name, "descriptor": identity.descriptor,
                "dimension": identity.dimension, "activity": activity.name if activity else "",
                "activity_category": activity.category if activity else "", "file_name": str(file.relative_to(root)),
                "sha256": hashlib.sha256(data).hexdigest(), "width": width, "height": height,
            })
    if not rows:
        raise SourceError(root, "no images found")
    check_variant_set(all_facts, "source (every VIGNETTE image has one mode and size)")
    return sorted(rows, key=lambda r: r["image_id"])


def _image_features():
    import datasets

    v = datasets.Value
    return datasets.Features({
        "image": datasets.Image(), "image_id": v("string"), "gender": v("string"), "descriptor": v("string"),
        "dimension": v("string"), "activity": v("string"), "activity_category": v("string"),
        "file_name": v("string"), "sha256": v("string"), "width": v("int32"), "height": v("int32"),
    })


def _list_configs(lists: VignetteLists, rows: list[dict]):
    import datasets

    v = datasets.Value
    with_images: dict[tuple[str, str], int] = {}
    portraits = set()
    for r in rows:
        if r["activity"]:
            with_images[(r["gender"], r["descriptor"])] = with_images.get((r["gender"], r["descriptor"]), 0) + 1
        else:
            portraits.add((r["gender"], r["descriptor"]))
    identities = [{
        "gender": i.gender, "descriptor": i.descriptor, "dimension": i.dimension, "bucket": i.bucket,
        "visibility_gpt": i.visibility_gpt, "visibility_human": i.visibility_human, "visibility_label": i.visibility_label,
        "activity_images": with_images.get((i.gender, i.descriptor), 0), "has_portrait": (i.gender, i.descriptor) in portraits,
    } for i in lists.identities]
    identity_features = datasets.Features({
        "gender": v("string"), "descriptor": v("string"), "dimension": v("string"), "bucket": v("string"),
        "visibility_gpt": v("string"), "visibility_human": v("string"), "visibility_label": v("string"),
        "activity_images": v("int32"), "has_portrait": v("bool"),
    })
    activities = [{"activity": a.name, "category": a.category, "role": a.role or "",
                   "questions": json.dumps(dict(a.questions), ensure_ascii=False),
                   "irrelevant_questions": json.dumps(list(a.irrelevant), ensure_ascii=False)} for a in lists.activities]
    activity_features = datasets.Features({"activity": v("string"), "category": v("string"), "role": v("string"),
                                           "questions": v("string"), "irrelevant_questions": v("string")})
    terms = [{"term": t.term, "dimension": t.dimension, "direction": t.direction, "pair_id": t.pair_id} for t in lists.terms]
    term_features = datasets.Features({k: v("string") for k in ("term", "dimension", "direction", "pair_id")})
    return {"identities": (identities, identity_features), "activities": (activities, activity_features),
            "sscm": (terms, term_features)}


VIGNETTE_REPOSITORY = "https://github.com/chahatraj/Vignette"
VIGNETTE_COLUMNS = {
    **IMAGE_COLUMNS,
    "bucket": "sub-group of the dimension (from the list; may be empty)",
    "visibility_gpt": "whether GPT-4o judged the identity visually representable (from the list)",
    "visibility_human": "whether human annotators judged it visually representable (from the list)",
    "visibility_label": "the list's final visibility label",
    "activity_images": "images of this identity engaged in an activity in this build",
    "has_portrait": "whether this build has the identity's no-activity portrait",
    "category": "time-use category of the activity",
    "role": "role the decision questions ask about; empty where the authors' roles.json has no entry",
    "questions": "JSON object of the six decision questions (ability, sociability, morality, agency, status, appearance)",
    "irrelevant_questions": "JSON list of the authors' ability_irr1..3 templates with a {role} placeholder (not in the paper)",
    "term": "SSCM trait term", "direction": "high or low valence", "pair_id": "id of the high/low term pair",
}
VIGNETTE_ACCESS_TERMS = (
    "VIGNETTE images show people labelled with identity descriptors across gender, race/ethnicity/colour, religion, "
    "nationality, age, ability, physical traits and socioeconomic status. Access is granted only for evaluating or "
    "studying social bias in AI models. By requesting access you agree (1) not to use the images or labels to identify, "
    "profile or make decisions about anyone, nor to train classifiers of people's identities; (2) not to redistribute "
    "the images outside this gated repository; (3) that the VIGNETTE authors state no licence for their lists, and the "
    "images' terms depend on who generated them and with which model (see the card); (4) to delete your copies if the "
    "repository owners ask you to."
)


def vignette_card(*, license: str, provenance: dict, build_command: str, notes: list[str], generation: dict | None = None,
                  human_check: dict | None = None) -> DatasetCard:
    """The VIGNETTE dataset card (content from the paper and the authors' repository). ``generation``
    (:func:`generation_record`) and ``human_check`` (:func:`human_check_record`) add what this build knows
    about its generator and its human check."""
    declared = license not in ("other", "unknown")
    generated, checked = _generation_text(generation), _human_check_text(human_check)
    return DatasetCard(
        name="vignette",
        pretty_name="VIGNETTE individual images and lists",
        summary=("Individual images of identities engaged in activities, no-activity portraits and the VIGNETTE lists "
                 "(identities, activities with decision roles, SSCM traits) for socially grounded VQA bias evaluation "
                 "of vision-language models."),
        description=("Individual generated images of identities engaged in activities and no-activity portraits, with "
                     "the VIGNETTE identity, activity, decision-role and SSCM lists (Raj et al.). Paired images are "
                     "composed side by side by the lm-eval-bias tasks when a doc is read; none are stored. In the paper, "
                     "identities span eight bias dimensions (167 unique identities, drawn from 93 Stigmas, CrowS-Pairs, "
                     "StereoSet and HolisticBias), 75 activities in four time-use categories, and the questions probe "
                     "factuality, perception, stereotyping (30 SSCM trait pairs) and decision making."),
        license=license,
        license_note=(f"declared by whoever built this copy (`--license {license}`); the VIGNETTE authors' repository "
                      "has no licence file, so check that it matches their terms" if declared else
                      "not stated: the VIGNETTE authors' repository has no licence file (lists), and the images' terms "
                      "depend on who generated them and with which model; check before redistribution")
                     + (f". Image generator: {'; '.join(generation['licences'])}" if generation and generation["licences"] else ""),
        license_link=VIGNETTE_REPOSITORY,
        columns=VIGNETTE_COLUMNS,
        curated_by=("Lists and benchmark design: Chahat Raj, Bowen Wei, Aylin Caliskan, Antonios Anastasopoulos and "
                    "Ziwei Zhu (George Mason University, University of Washington). Images: whoever built this copy "
                    "(the authors released none)."),
        repository=(f"{VIGNETTE_REPOSITORY} (the paper's link): the lists (maledes.csv, femaledes.csv, activities.json, "
                    "roles.json, sscm_dictionary.csv). No images were released there."),
        paper=("Raj, Wei, Caliskan, Anastasopoulos and Zhu, *VIGNETTE: Socially Grounded Bias Evaluation for "
               "Vision-Language Models*, arXiv:2505.22897"),
        direct_use=("Evaluating vision-language models with the lm-eval-bias VIGNETTE tasks: paired images composed "
                    "from these individual images, with factuality, perception, stereotyping (SSCM) and decision-making "
                    "questions."),
        out_of_scope_use=("Training or testing classifiers of people's identities (religion, race, disability, "
                          "nationality, ...); decisions about people; generating or spreading stereotyped depictions; "
                          "treating the images as photographs of the groups they are labelled with."),
        structure=("Config `default`: one row per individual image (one image per parquet row group, so a task reads "
                   "any image alone). Configs `identities`, `activities` and `sscm`: the authors' lists, with how many "
                   "images of each identity this build holds. Pairs are never stored."),
        curation_rationale=("Existing VLM bias studies rely on decontextualised portraits and gender-occupation bias; "
                            "VIGNETTE depicts identities engaged in activities and asks questions grounded in social "
                            "psychology (paper, Sec. 1)."),
        collection_and_processing=(
            "In the paper: identities compiled from four existing datasets (Sec. 3), activities from a time-use "
            "taxonomy, images generated with FLUX.1-dev from 'An [identity] engaged in [activity], with their face "
            "visible.' and portraits from 'An [identity], with their face visible.' (about 12,000 images per gender and "
            "about 330 portraits; a 10% sample checked by human annotators, App. A.2); pairs made by concatenating two "
            "images side by side with a lightly blurred boundary. In this build: the builder checks every image's name "
            "against the lists and that it decodes within size limits, and stores the file bytes unchanged; "
            + (generated or "it cannot tell which model made the images.") + checked),
        inputs=[
            SourceInput("Identity lists (`maledes.csv`, `femaledes.csv`), `activities.json`, `roles.json`, "
                        "`sscm_dictionary.csv`", VIGNETTE_REPOSITORY, "not stated: no licence file in the repository"),
            SourceInput("Individual images and portraits", "the source folder given to the builder (the paper: "
                        "FLUX.1-dev, https://huggingface.co/black-forest-labs/FLUX.1-dev; none released)",
                        "; ".join(generation["licences"]) if generation and generation["licences"] else
                        "depends on who generated them; the generator's licence may place terms on its outputs; check"),
        ],
        source_producers=("The VIGNETTE authors compiled the lists (identity descriptors from 93 Stigmas, CrowS-Pairs, "
                          "StereoSet and HolisticBias; SSCM terms from Nicolas et al., 2022). Images: a text-to-image "
                          "model run by whoever produced the source folder."),
        annotations=("The identity lists carry visibility labels (`visibility_gpt`, `visibility_human`, "
                     "`visibility_label`): whether GPT-4o and human annotators judged an identity visually "
                     "representable (paper, App. A.2). In the paper two graduate-student annotators checked 1,200 "
                     "individual images for identity, activity and ambiguity. No per-image annotation is included."
                     + checked),
        personal_and_sensitive=(
            "The images depict people and are labelled with identity descriptors that include special categories "
            "(race/ethnicity, religion, disability, health and body traits, socioeconomic status). In the paper all "
            "images are synthetic 'to avoid the use of real individuals' (Ethical Considerations); generated faces can "
            "still resemble real people, and a builder given real photographs would hold personal data. Hence the "
            "repository is private by default and gated when public, under the terms of access above."),
        bias_risks_limitations=[
            "Image generator bias: biases of the text-to-image model can shape the depictions and interact with the "
            "evaluated model's behaviour (paper, Limitations).",
            "Synthetic images limit realism; evaluations are not on actual photos (paper, Limitations).",
            "Some identities are not reliably visible from appearance; the lists' visibility labels mark them (App. A.2).",
            "Depictions of identities may be stereotyped or culturally insensitive despite the authors' care "
            "(Ethical Considerations); the descriptors include stigmatised identities on purpose.",
            "MCQ probing does not capture open-ended or multi-turn behaviour (paper, Limitations).",
        ],
        recommendations=[
            "Record the image generator, its version and prompts of this copy next to the dataset; the builder cannot.",
            "Restrict analyses to visually representable identities where visibility matters, and report per dimension.",
            "Keep the repository private or gated; check the generator's terms and the authors' before redistribution.",
        ],
        citation_bibtex="""@misc{raj2025vignette,
  title         = {VIGNETTE: Socially Grounded Bias Evaluation for Vision-Language Models},
  author        = {Raj, Chahat and Wei, Bowen and Caliskan, Aylin and Anastasopoulos, Antonios and Zhu, Ziwei},
  year          = {2025},
  eprint        = {2505.22897},
  archivePrefix = {arXiv}
}""",
        citation_text=("Raj, C., Wei, B., Caliskan, A., Anastasopoulos, A., & Zhu, Z. (2025). *VIGNETTE: Socially "
                       "Grounded Bias Evaluation for Vision-Language Models.* arXiv:2505.22897."),
        task_categories=["visual-question-answering"],
        tags=["social-bias", "fairness", "stereotypes", "synthetic", "vision-language-models", "identities", "vignette"],
        person_images=True,
        access_terms=VIGNETTE_ACCESS_TERMS,
        provenance=provenance,
        build_command=build_command,
        notes=notes,
    )


def missing_cells(rows: list[dict], lists: VignetteLists) -> list[str]:
    """Every listed identity's missing portrait (``<gender>/<descriptor>``) and identity x activity
    image (``<gender>/<descriptor>_<activity>``), in list order."""
    have = {r["image_id"] for r in rows}
    out = []
    for identity in lists.identities:
        for activity in [None, *lists.activities]:
            key = image_id(identity.gender, identity.descriptor, activity.name if activity else None)
            if key not in have:
                out.append(f"{identity.gender}/{slug(identity.descriptor)}" + (f"_{slug(activity.name)}" if activity else ""))
    return out


def generation_record(source: str | os.PathLike, rows: list[dict]) -> dict | None:
    """What ``lm-eval-bias generate vignette``'s manifests say about the images of ``rows`` (None without manifests)."""
    from lm_eval_bias.vignette.generate import GENERATOR_LICENCES, finished, manifest_paths

    root = Path(source)
    if not manifest_paths(root):
        return None
    entries = finished(root)
    used = [entries[r["image_id"]] for r in rows if r["image_id"] in entries and entries[r["image_id"]]["sha256"] == r["sha256"]]
    models = sorted({(e["model_id"], e.get("revision") or "", (e.get("settings") or {}).get("backend", "")) for e in used})
    return {
        "models": [{"model_id": m, "revision": rev or None, "backend": b} for m, rev, b in models],
        "prompts": sorted({e["prompt"].replace(e["descriptor"], "[identity]", 1).replace(e["activity"], "[activity]", 1)
                           if e["activity"] else e["prompt"].replace(e["descriptor"], "[identity]", 1) for e in used}),
        "settings_fingerprints": sorted({e.get("settings_fingerprint", "") for e in used}),
        "settings": sorted({json.dumps(e.get("settings"), sort_keys=True) for e in used}),
        "with_manifest_entry": len(used), "images": len(rows),
        "licences": sorted({GENERATOR_LICENCES[m] for m, _, _ in models if m in GENERATOR_LICENCES}),
    }


def _generation_text(generation: dict | None) -> str:
    if not generation:
        return ""
    models = ", ".join(f"{m['model_id']} ({m['backend']}" + (f", revision {m['revision']}" if m["revision"] else "") + ")"
                       for m in generation["models"]) or "unknown"
    return (f"the images were generated with `lm-eval-bias generate vignette` by {models}, prompts "
            + "; ".join(f"'{p}'" for p in generation["prompts"][:4]) + ", each image's seed derived from its id; "
            f"{generation['with_manifest_entry']} of {generation['images']} images carry a manifest entry (prompt, seed, "
            "model, revision and settings per image, `manifest.jsonl` of the source folder). The people shown are "
            "synthetic: generated by a text-to-image model, not photographs of real individuals."
            + (f" Generator licence: {'; '.join(generation['licences'])}." if generation["licences"] else ""))


def human_check_record(ratings: list, rule: str = "any") -> dict:
    """The human check of :mod:`lm_eval_bias.vignette.human_check` as the card records it."""
    from lm_eval_bias.vignette.human_check import card_summary

    return card_summary(ratings, rule)


def _human_check_text(check: dict | None) -> str:
    if not check:
        return ""
    sample = check.get("sample") or {}
    drawn = (f"{sample.get('size')} of {sample.get('population')} generated images drawn at random (seed {sample.get('seed')})"
             if sample else f"{check['rated_images']} images")
    shares = "; ".join(f"{name.replace('_', ' ')}: {v['passed']}/{v['n']} = {100 * v['share']:.1f}% "
                       f"(95% Wilson {100 * v['ci95'][0]:.1f}-{100 * v['ci95'][1]:.1f}%)" for name, v in check["pass_shares"].items())
    return (f" Human check of this build (paper App. A.2): {drawn}, rated by {len(check['annotators'])} annotator(s) for "
            f"identity depicted, activity depicted and no ambiguous features; {shares}. {len(check['failed'])} images "
            f"failed (an image fails when {'any annotator' if check['rule'] == 'any' else 'every annotator'} fails it on a "
            f"criterion) and {check.get('excluded', 0)} of them are left out of this build.")


def build_vignette(source: str | os.PathLike, lists_dir: str | os.PathLike, output: str | os.PathLike, *,
                   overwrite: bool = False, license: str = "other", strict: bool = False,
                   exclude_failed: list | None = None, card_fields: dict | None = None) -> VignetteBuildSummary:
    """Validate ``source`` against the lists in ``lists_dir`` and write the ``vignette`` dataset.
    ``strict``: every listed identity needs its portrait and an image per activity, else
    :class:`SourceError` naming the count and the first missing images; nothing is written.
    ``card_fields``: :class:`DatasetCard` fields replaced on the card (another source built in this
    layout, e.g. the real PATA photographs of :mod:`lm_eval_bias.vignette.real_images`).
    ``exclude_failed``: completed human-check rating sheets; images that failed are left out and the
    card records the check."""
    import datasets

    lists = read_lists(lists_dir)  # ListError is a SourceError
    rows = scan_images(source, lists)
    check = human_check_record(exclude_failed) if exclude_failed else None
    if check:
        failed = set(check["failed"])
        check["excluded"] = sum(r["image_id"] in failed for r in rows)
        rows = [r for r in rows if r["image_id"] not in failed]
        if not rows:
            raise SourceError(Path(source), "every image failed the human check")
    generation = generation_record(source, rows)
    missing = missing_cells(rows, lists)
    if strict and missing:
        raise SourceError(Path(source), f"incomplete source (--strict expects a portrait and an image per activity for "
                                        f"every listed identity): {len(missing)} missing: {', '.join(missing[:20])}"
                                        + (f", ... ({len(missing) - 20} more)" if len(missing) > 20 else ""))
    root = Path(source).absolute()
    features = _image_features()

    def generate():
        for r in rows:
            data = read_bytes(root / r["file_name"])
            if hashlib.sha256(data).hexdigest() != r["sha256"]:
                raise SourceError(root / r["file_name"], "file changed while the dataset was being built")
            yield {**r, "image": {"bytes": data, "path": os.path.basename(r["file_name"])}}

    n_portraits = sum(1 for r in rows if not r["activity"])
    identities_used = {(r["gender"], r["descriptor"]) for r in rows}
    activities_used = {r["activity"] for r in rows if r["activity"]}
    manifest = hashlib.sha256("\n".join(f"{r['image_id']} {r['sha256']}" for r in rows).encode()).hexdigest()
    card = vignette_card(
        license=license,
        provenance={"source folder": root.name, "lists folder": Path(lists_dir).name, "images": len(rows),
                    "portraits": n_portraits, "identities with images": len(identities_used),
                    "activities with images": len(activities_used), "image manifest sha256": manifest,
                    "naming": "<gender>/<descriptor>_<activity>.png, <gender>/<descriptor>.png (spaces as dashes)",
                    **({"generator": "; ".join(m["model_id"] for m in generation["models"]),
                        "generator licence": "; ".join(generation["licences"]) or "see the generator's model card",
                        "generator settings fingerprints": ", ".join(generation["settings_fingerprints"])} if generation else {}),
                    **({"human check": f"{check['rated_images']} rated, {len(check['failed'])} failed, "
                                       f"{check['excluded']} excluded (rule {check['rule']})"} if check else {})},
        build_command=(f"lm-eval-bias build vignette --source {root.name} --lists {Path(lists_dir).name} "
                       f"--output {Path(output).name}"
                       + (" --exclude-failed " + " ".join(Path(p).name for p in exclude_failed) if exclude_failed else "")),
        notes=list(lists.notes),
        generation=generation,
        human_check=check,
    )
    if card_fields:
        card = dataclasses.replace(card, **card_fields)
    Path(output).absolute().parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".vignette-arrow-", dir=Path(output).absolute().parent) as cache:
        try:
            images = datasets.Dataset.from_generator(generate, features=features, cache_dir=cache)
        except Exception as exc:  # datasets wraps errors of the generator (DatasetGenerationError)
            cause, seen = exc, set()
            while cause is not None and not isinstance(cause, SourceError) and id(cause) not in seen:
                seen.add(id(cause))
                cause = cause.__cause__ or cause.__context__
            if not isinstance(cause, SourceError):
                raise
            raise cause from None
        configs = {"default": (images, features), **_list_configs(lists, rows)}
        out = write_hub_dataset_configs(output, configs, card, overwrite=overwrite, rows_per_row_group={"default": 1},
                                        max_shard_rows={"default": SHARD_ROWS})
        del images
    return VignetteBuildSummary(out, len(rows), n_portraits, len(identities_used), len(activities_used), tuple(lists.notes),
                                tuple(missing))
