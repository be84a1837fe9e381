"""``lm-eval-bias build focus``: the FOCUS photos (REFLECT Sec. 3.1) as a Hub-layout dataset.

Input is the authors' release layout ``DIR/<occupation>/<template>/<Race>_<gender>.<jpg|jpeg|png>``
(occupations ceo, cook, doctor, lawyer, nurse, teacher; templates 1-8; races Asian, Black, Latino,
Middle_Eastern, White; genders man, woman). A user's own photos in the same layout are accepted too:
any occupation folder named by a lower-case slug (``software_developer``, App. C.7), any positive
template number, and templates with only some of the ten race x gender variants (a subset of races
or genders). A template may also hold the optional third gender presentation
``<Race>_androgynous.<jpg|png>`` (REFLECT App. C.8's exploratory pilot): such rows carry ``gender``
``androgynous`` and are counted in the card and in :class:`FocusBuildSummary` (``n_androgynous``); only
the MCQ tasks ask them. A source without such files builds exactly as before. Missing variants are printed at build time, listed in the dataset card (``missing cells``) and returned in
:class:`FocusBuildSummary`; the tasks then compute every metric the present cells allow and name the
missing ones; ``--strict`` makes anything short of the authors' full release an error.

Counterfactual integrity (before anything is written): the variants of one template must be pairwise
distinct (file bytes and decoded pixels), of one colour mode and one size; an image with an EXIF
orientation other than 1 is refused (not applied: the bytes are stored unchanged); the same content
twice anywhere in the source (a duplicated template folder) and symlinks to another entry of the
tree (aliases) are refused. Everything is validated before anything is written; the first problem found raises :class:`~lm_eval_bias.datasets_builder.hub.SourceError` naming the
file and the reason. Dotfiles (``.DS_Store``, ``._x``) are ignored; anything else unexpected is an
error. The original file bytes are stored unchanged. Through ``lm-eval-bias build focus`` every
problem prints ``error: <file>: <reason>`` (exit status 2) and nothing is written; file names that
are not valid UTF-8 are shown with ``\\xNN`` escapes.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from lm_eval_bias.datasets_builder.hub import (
    ContentIndex,
    DatasetCard,
    SourceInput,
    check_variant_image,
    check_variant_set,
    write_hub_dataset,
)
from lm_eval_bias.datasets_builder.readers import SourceError, read_bytes
from lm_eval_bias.reflect.schema import (
    ALL_GROUP_INDEX,
    ALL_GROUPS,
    ANDROGYNOUS,
    GROUPS,
    IMAGE_EXTENSIONS,
    OCCUPATIONS,
    TEMPLATE_IDS,
    image_id,
    parse_variant_filename,
)

DEFAULT_MAX_IMAGE_PIXELS = 40_000_000
COLUMNS = {
    "image": "the photo (original bytes, unchanged)",
    "image_id": "`<occupation>/<template>/<Race>_<gender>`",
    "occupation": "ceo, cook, doctor, lawyer, nurse or teacher",
    "template_id": "source photo 1-8 within the occupation",
    "race": "Asian, Black, Latino, Middle_Eastern or White",
    "gender": "man or woman (edited gender presentation)",
    "width": "pixels",
    "height": "pixels",
    "file_name": "path relative to the source folder",
    "sha256": "of the file bytes",
}


@dataclass(frozen=True)
class FocusBuildSummary:
    output: Path
    n_images: int
    occupations: tuple[str, ...]
    templates: dict[str, tuple[int, ...]]
    missing_cells: tuple[str, ...] = ()
    #: images of the optional third presentation (``<Race>_androgynous``, App. C.8)
    n_androgynous: int = 0


#: Occupation folder names accepted beyond the paper's six: a lower-case slug.
OCCUPATION_SLUG = re.compile(r"[a-z][a-z0-9_]{0,63}")


def _features():
    import datasets

    return datasets.Features({
        "image": datasets.Image(),
        "image_id": datasets.Value("string"),
        "occupation": datasets.Value("string"),
        "template_id": datasets.Value("int32"),
        "race": datasets.Value("string"),
        "gender": datasets.Value("string"),
        "width": datasets.Value("int32"),
        "height": datasets.Value("int32"),
        "file_name": datasets.Value("string"),
        "sha256": datasets.Value("string"),
    })


def _visible(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if not p.name.startswith("."))


def _check_link(path: Path, root: Path) -> None:
    """Symlinks out of the tree are refused; so are links to another entry of the tree (an alias: the
    same photo would be counted twice, under two names)."""
    if path.is_symlink():
        target = path.resolve()
        if root != target and root not in target.parents:
            raise SourceError(path, f"symlink points outside the source tree ({target})")
        raise SourceError(path, f"symlink alias of {target.relative_to(root)} in the same source: one photo would "
                                "count twice under two names; remove the link (or copy a different file)")


def collect_focus_rows(source: str | os.PathLike, *, max_image_pixels: int = DEFAULT_MAX_IMAGE_PIXELS,
                       min_side: int = 32, max_side: int = 8192) -> list[dict]:
    """Validate a FOCUS release folder and return its rows (raises :class:`SourceError`)."""
    root = Path(source).absolute()
    if not root.is_dir():
        raise SourceError(root, "source folder does not exist")
    root_resolved = root.resolve()
    occupation_dirs = _visible(root)
    if not occupation_dirs:
        raise SourceError(root, "source folder is empty")
    rows: list[dict] = []
    seen = ContentIndex("an image may stand in the source once (a duplicated template folder, or one photo "
                        "copied into two templates?)")
    for occ_dir in occupation_dirs:
        _check_link(occ_dir, root_resolved)
        if not occ_dir.is_dir() or not OCCUPATION_SLUG.fullmatch(occ_dir.name):
            raise SourceError(occ_dir, f"unexpected entry: expected an occupation folder named by a lower-case slug "
                                       f"(the paper's: {', '.join(OCCUPATIONS)})")
        template_dirs = _visible(occ_dir)
        if not template_dirs:
            raise SourceError(occ_dir, "occupation folder has no template folders")
        for tpl_dir in sorted(template_dirs, key=lambda p: (len(p.name), p.name)):
            _check_link(tpl_dir, root_resolved)
            if not tpl_dir.is_dir() or not re.fullmatch(r"[1-9][0-9]{0,5}", tpl_dir.name):
                raise SourceError(tpl_dir, f"unexpected entry: expected a template folder named by a positive number "
                                           f"(the paper's: 1-{max(TEMPLATE_IDS)})")
            variants: dict[int, dict] = {}
            sizes: dict[tuple[int, int], Path] = {}
            facts = []
            for file in _visible(tpl_dir):
                _check_link(file, root_resolved)
                group = parse_variant_filename(file.name)
                if group is None or not file.is_file():
                    raise SourceError(file, "unknown file name: expected <Race>_<gender>.<jpg|jpeg|png> with Race in "
                                            "Asian, Black, Latino, Middle_Eastern, White and gender man or woman "
                                            "(or androgynous, the optional third presentation)")
                index = ALL_GROUPS.index(group)
                if index in variants:
                    raise SourceError(file, f"duplicate variant: {variants[index]['file_name']} is the same group")
                data = read_bytes(file)
                checked = check_variant_image(file, data, max_image_pixels, min_side, max_side)  # EXIF rotation refused
                width, height = checked.size
                sizes.setdefault((width, height), file)
                if len(sizes) > 1:
                    (w0, h0), first = next(iter(sizes.items()))
                    raise SourceError(file, f"size {width}x{height} differs from {first.name} ({w0}x{h0}) in the same template")
                facts.append(checked)
                template_id = int(tpl_dir.name)
                variants[index] = {
                    "image": {"bytes": data, "path": file.name},
                    "image_id": image_id(occ_dir.name, template_id, group.race, group.gender),
                    "occupation": occ_dir.name,
                    "template_id": template_id,
                    "race": group.race,
                    "gender": group.gender,
                    "width": width,
                    "height": height,
                    "file_name": str(file.relative_to(root)),
                    "sha256": hashlib.sha256(data).hexdigest(),
                }
            if not variants:
                raise SourceError(tpl_dir, "template folder has no image")
            check_variant_set(facts, "template")  # distinct content, one colour mode, one size
            for each in facts:
                seen.add(each, str(tpl_dir.relative_to(root)))
            rows += [variants[k] for k in range(len(ALL_GROUPS)) if k in variants]  # androgynous cells last
    rows.sort(key=lambda r: _occupation_order(r["occupation"]) + (r["template_id"],))  # stable: GROUPS order kept
    return rows


def _occupation_order(occupation: str) -> tuple:
    """The paper's six first, in their order, then other occupations alphabetically."""
    return (0, OCCUPATIONS.index(occupation), "") if occupation in OCCUPATIONS else (1, 0, occupation)


def missing_cells(rows: list[dict]) -> list[str]:
    """``<occupation>/<template>/<Race>_<gender>`` of every race x gender variant a template present lacks
    (the optional androgynous presentation is never "missing")."""
    present: dict[tuple[str, int], set[int]] = {}
    for r in rows:
        present.setdefault((r["occupation"], r["template_id"]), set()).add(ALL_GROUP_INDEX[(r["race"], r["gender"])])
    return [f"{o}/{t}/{g.race}_{g.gender}" for (o, t), groups in present.items()
            for k, g in enumerate(GROUPS) if k not in groups]


def release_gaps(rows: list[dict]) -> list[str]:
    """What the authors' full release (six occupations x templates 1-8 x ten variants, Sec. 3.1) has
    and ``rows`` lack: ``<occupation>`` or ``<occupation>/<template>`` of every missing folder, then
    every missing cell (:func:`missing_cells`). Empty for a complete release."""
    present: dict[str, set[int]] = {}
    for r in rows:
        present.setdefault(r["occupation"], set()).add(r["template_id"])
    gaps = [o for o in OCCUPATIONS if o not in present]
    gaps += [f"{o}/{t}" for o in OCCUPATIONS if o in present for t in TEMPLATE_IDS if t not in present[o]]
    return gaps + missing_cells(rows)


REFLECT_REPOSITORY = "https://github.com/uocraw/REFLECT"
REFLECT_AUTHORS = "Haodong Chen, Qiang Huang, Jiaqi Zhao, Qiuping Jiang, Xiaojun Chang and Jun Yu"
REFLECT_PAPER = ("Chen, Huang, Zhao, Jiang, Chang and Yu, *Measuring Social Bias in Vision-Language Models with "
                 "Face-Only Counterfactuals from Real Photos* (REFLECT benchmark, FOCUS dataset)")
REFLECT_BIBTEX = """@misc{chen_reflect_focus,
  title  = {Measuring Social Bias in Vision-Language Models with Face-Only Counterfactuals from Real Photos},
  author = {Chen, Haodong and Huang, Qiang and Zhao, Jiaqi and Jiang, Qiuping and Chang, Xiaojun and Yu, Jun},
  note   = {REFLECT benchmark and FOCUS dataset. Code: https://github.com/uocraw/REFLECT}
}"""
REFLECT_CITATION = ("Chen, H., Huang, Q., Zhao, J., Jiang, Q., Chang, X., & Yu, J. *Measuring Social Bias in "
                    "Vision-Language Models with Face-Only Counterfactuals from Real Photos.* The copy of the paper used "
                    "here gives no year or venue; cite the published version.")
FOCUS_NOT_STATED = ("not stated by the REFLECT authors: the paper states no licence for the photos or the edits, and "
                    "lm-eval-bias could not inspect their release; check with the authors before redistribution")
FOCUS_ACCESS_TERMS = (
    "FOCUS contains photographs of people: real photos whose faces were edited by an image model into ten race x "
    "gender presentations. Access is granted only for evaluating or studying social bias in AI models. By requesting "
    "access you agree (1) not to use the images to identify, track, profile or make decisions about anyone, and not "
    "to train or test face recognition or race/gender classifiers with them; (2) not to redistribute the images "
    "outside this gated repository; (3) that the licence of the images and of the source photos has not been stated "
    "by the REFLECT authors, so any other use must be cleared with them; (4) to delete your copies if the repository "
    "owners or the REFLECT authors ask you to."
)


def focus_card(*, license: str, provenance: dict, build_command: str) -> DatasetCard:
    """The FOCUS dataset card (content from the REFLECT paper; what is not known is said so)."""
    declared = license not in ("other", "unknown")
    return DatasetCard(
        name="focus",
        pretty_name="FOCUS: face-only counterfactuals (REFLECT)",
        summary=("FOCUS (Face-Only Counterfactuals): real occupational photos whose faces were edited into ten race x "
                 "gender presentations with everything else in the scene kept, for auditing social bias in "
                 "vision-language models with the REFLECT tasks."),
        description=("Scene-matched counterfactual photos (REFLECT paper, Sec. 3.1): for each of six occupations (CEO, "
                     "cook, doctor, lawyer, nurse, teacher) the authors curated eight real source photos (templates) and "
                     "edited each into ten variants, five races (Asian, Black, Latino, Middle Eastern, White) x two gender "
                     "presentations, changing only the face with gemini-3-pro-image-preview (Nano Banana Pro) and one "
                     "fixed prompt (App. A.1). The full release is 6 x 8 x 10 = 480 images; the source photos themselves "
                     "are not part of it. One row per image; the lm-eval-bias REFLECT tasks compose the 2AFC pairs, MCQ "
                     "and salary-recommendation docs from these rows."),
        license=license,
        license_note=(f"declared by whoever built this copy (`--license {license}`); the REFLECT authors have not "
                      "stated a licence, so check that it matches their terms" if declared else FOCUS_NOT_STATED),
        license_link=REFLECT_REPOSITORY,
        columns=COLUMNS,
        curated_by=(f"{REFLECT_AUTHORS} (Harbin Institute of Technology (Shenzhen), Ningbo University, University of "
                    "Science and Technology of China), the REFLECT/FOCUS authors. lm-eval-bias repackages their release "
                    "unchanged."),
        repository=(f"{REFLECT_REPOSITORY} (the paper's code link). lm-eval-bias could not obtain it; the folder layout "
                    "this builder reads, `<occupation>/<1..8>/<Race>_<gender>.jpg`, is the one a third-party project "
                    "that uses FOCUS describes."),
        paper=REFLECT_PAPER,
        direct_use=("Auditing vision-language models for race and gender disparities under strict visual control, with "
                    "the REFLECT tasks in lm-eval-bias: 2AFC (two variants of the same source photo; income, education "
                    "and perceived-safety prompts), MCQ (annual-salary and education-level brackets for one image) and "
                    "salary recommendation (one image with a normalized biography from the companion `focus_bios` "
                    "dataset). Results are disparities measured under this face-editing protocol, not population-level "
                    "estimates (paper, Limitations)."),
        out_of_scope_use=("Training or testing face recognition, face verification or race/gender classifiers; inferring "
                          "the race, gender or any other attribute of real people; any decision about people (hiring, "
                          "pay, admission, credit, policing, security screening); generating likenesses of the people "
                          "shown; re-identifying the people in the source photos; presenting the race and gender labels "
                          "as facts about a person: they name the presentation requested from the image editor."),
        structure=("One row per image. Variants of one source photo share `occupation` and `template_id` and differ in "
                   "`race` and `gender`, all the same size. The authors' release has all ten variants of every template; a "
                   "build with missing variants lists them under `missing cells` (Provenance). "
                   "`image` holds the release's file bytes unchanged (`sha256` of each file)."),
        curation_rationale=("Real photos entangle race and gender with background, clothing and pose, and fully generated "
                            "benchmarks may drift from real-image distributions or inherit generator artifacts. FOCUS "
                            "keeps a real photo and edits only the face, so that differences in a model's answers across "
                            "the variants of one photo can be attributed to facial demographic cues (paper, Sec. 1, 3.1)."),
        collection_and_processing=(
            "Source photos: for each occupation the authors manually curated eight photos with clear facial visibility "
            "and realistic professional contexts (Sec. 3.1); the paper does not say where the photos come from. "
            "Editing: gemini-3-pro-image-preview (Nano Banana Pro), one prompt for every photo that varies only the "
            "target group and asks to keep background, framing, pose, clothing, expression, approximate age and style; "
            "hairstyle and accessories may change when needed for plausibility (Sec. 3.1, App. A.1). Quality control: "
            "edits checked to be face-localised with MediaPipe face masks (mean difference 0.141 inside the face vs "
            "0.022 outside) and the intended race x gender checked visible (joint accuracy 97.9%) (Sec. 3.1, App. B.2). "
            "This builder validates the release folder (every template complete, one size per template, decodable "
            "JPEG/PNG within size limits) and stores each file's original bytes with the labels its path gives; it "
            "changes no image."),
        inputs=[
            SourceInput("Source photos (8 per occupation; not included)", "curated by the REFLECT authors; origin not "
                        "stated in the paper", "not stated by the authors; check before redistribution"),
            SourceInput("Face-edited variants (the `image` column)", f"REFLECT authors' release ({REFLECT_REPOSITORY}), "
                        "edited with gemini-3-pro-image-preview (Nano Banana Pro)",
                        "not stated by the authors; check before redistribution (the editing model's terms may also "
                        "apply)"),
            SourceInput("Labels: occupation, template, race, gender", "the release's folder and file names",
                        "as the images"),
        ],
        source_producers=(f"The REFLECT authors ({REFLECT_AUTHORS}) selected the source photos and produced the edits "
                          "with an image-editing model. Who took the source photos, and who is depicted in them, is not "
                          "stated in the paper."),
        annotations=("No annotation of the people depicted. `race` and `gender` name the target group the authors asked "
                     "the editor to produce (from the file names); the authors' quality control found it visually "
                     "expressed in 97.9% of images (Sec. 3.1); per-image check results are not part of this dataset."),
        personal_and_sensitive=(
            "Yes. Every image shows a person. The source photos are real photographs of real people, and each variant "
            "keeps that person's body, clothing, pose and scene while changing the face, so people in the source photos "
            "may be recognisable from context. The paper does not state whether the people depicted consented or under "
            "which terms the photos were obtained. Each image carries race/ethnicity and gender labels, special "
            "categories of personal data in many jurisdictions when attached to a real person; here they describe the "
            "edited presentation, not the identity of the person depicted. No names or other identifiers are included. "
            "Hence the repository is private by default and gated when public, under the terms of access above."),
        bias_risks_limitations=[
            "Edits can change more than the demographic cues: perceived age or expression within the face, and hair, "
            "neckline/collar or background pixels beyond it (paper, Limitations). Findings are disparities under this "
            "editing protocol, not a causal decomposition free of all perceptual correlates.",
            "Face-body incongruence: when the edited gender differs from the source person's, face and body cues can "
            "disagree (the authors analyse this for the MCQ task, App. B.2).",
            "Coverage: six occupations, eight source photos each, five race categories and a binary gender presentation "
            "chosen for controllability; not representative of occupational contexts, photographic styles or cultures "
            "at large (paper, Limitations).",
            "One image-editing model produced every variant; its own stereotypes in rendering a race or gender can enter "
            "the images (the authors report MCQ patterns consistent across editors, App. C.2).",
            "The race and gender categories reflect demographic imbalance patterns reported by the U.S. Bureau of "
            "Labor Statistics (Sec. 3.1); they are U.S.-centric and do not cover other identities.",
            "Risk of misuse: face images labelled by race and gender could be used to build demographic classifiers or "
            "stereotyped content; hence the gated access and the terms.",
        ],
        recommendations=[
            "Use it to audit models only, under the terms of access; keep copies access-controlled.",
            "Report results with uncertainty across templates (the paper uses leave-one-template-out analyses and "
            "template-cluster bootstrap intervals) and describe them as disparities under this protocol.",
            "Before redistributing any image, clear the licence and the provenance of the source photos with the REFLECT "
            "authors; until then keep repositories private or gated.",
            "Do not describe the race/gender labels as properties of the people depicted.",
        ],
        citation_bibtex=REFLECT_BIBTEX,
        citation_text=REFLECT_CITATION,
        task_categories=["visual-question-answering"],
        tags=["social-bias", "fairness", "counterfactual", "face-editing", "vision-language-models", "race", "gender",
              "occupations", "reflect", "focus"],
        person_images=True,
        access_terms=FOCUS_ACCESS_TERMS,
        provenance=provenance,
        build_command=build_command,
    )


def build_focus(source: str | os.PathLike, output: str | os.PathLike, *, overwrite: bool = False,
                license: str = "other", max_image_pixels: int = DEFAULT_MAX_IMAGE_PIXELS,
                min_side: int = 32, max_side: int = 8192, strict: bool = False) -> FocusBuildSummary:
    """Validate ``source`` and write the ``focus`` dataset to ``output`` (atomically). ``strict``: the
    source must be the authors' full release (:func:`release_gaps` empty), else :class:`SourceError`
    naming what is missing and nothing is written."""
    rows = collect_focus_rows(source, max_image_pixels=max_image_pixels, min_side=min_side, max_side=max_side)
    if strict:
        gaps = release_gaps(rows)
        if gaps:
            shown = ", ".join(gaps[:20]) + (f", ... ({len(gaps) - 20} more)" if len(gaps) > 20 else "")
            raise SourceError(Path(source), f"incomplete source (--strict expects the authors' full release, 6 "
                                            f"occupations x 8 templates x 10 variants): {len(gaps)} missing: {shown}")
    templates: dict[str, list[int]] = {}
    for r in rows:
        tpls = templates.setdefault(r["occupation"], [])
        if r["template_id"] not in tpls:
            tpls.append(r["template_id"])
    missing = missing_cells(rows)
    n_androgynous = sum(r["gender"] == ANDROGYNOUS for r in rows)
    manifest = hashlib.sha256("\n".join(f"{r['file_name']} {r['sha256']}" for r in sorted(rows, key=lambda r: r["file_name"])).encode()).hexdigest()
    provenance = {
        "source folder": Path(source).name,
        "images": len(rows),
        "occupations": ", ".join(templates),
        "templates": "; ".join(f"{o}: {', '.join(map(str, t))}" for o, t in templates.items()),
        "manifest sha256": manifest,
        "release layout": "<occupation>/<template>/<Race>_<gender>.<jpg|png>",
        "missing cells": f"{len(missing)}: {', '.join(missing)}" if missing else "none (every template complete)",
    }
    if n_androgynous:  # only then: a binary source's card is unchanged
        provenance["androgynous images"] = (f"{n_androgynous} (optional third gender presentation, REFLECT App. C.8; "
                                            "asked by the MCQ tasks only)")
    card = focus_card(
        license=license,
        provenance=provenance,
        build_command=f"lm-eval-bias build focus --source {Path(source).name} --output {Path(output).name}",
    )
    out = write_hub_dataset(output, rows, _features(), card, overwrite=overwrite)
    return FocusBuildSummary(out, len(rows), tuple(templates), {o: tuple(t) for o, t in templates.items()},
                             tuple(missing), n_androgynous)


__all__ = ["IMAGE_EXTENSIONS", "FocusBuildSummary", "build_focus", "collect_focus_rows"]
