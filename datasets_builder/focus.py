"""``lm-eval-bias build focus``: the FOCUS photos (REFLECT Sec. 3.1) as a Hub-layout dataset.

Input is the authors' release layout ``DIR/<occupation>/<template>/<Race>_<gender>.<jpg|jpeg|png>``
(occupations ceo, cook, doctor, lawyer, nurse, teacher; templates 1-8; races Asian, Black, Latino,
Middle_Eastern, White; genders man, woman). Any subset of occupations and templates is accepted
when each template present is complete (all ten variants). Everything is validated before anything
is written; the first problem found raises :class:`~datasets_builder.hub.SourceError` naming the
file and the reason. Dotfiles (``.DS_Store``, ``._x``) are ignored; anything else unexpected is an
error. The original file bytes are stored unchanged. Through ``lm-eval-bias build focus`` every
problem prints ``error: <file>: <reason>`` (exit status 2) and nothing is written; file names that
are not valid UTF-8 are shown with ``\\xNN`` escapes.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from datasets_builder.hub import DatasetCard, check_image, write_hub_dataset
from datasets_builder.readers import SourceError, read_bytes
from lm_eval_bias.focus_schema import (
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
    if path.is_symlink():
        target = path.resolve()
        if root != target and root not in target.parents:
            raise SourceError(path, f"symlink points outside the source tree ({target})")


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
    for occ_dir in occupation_dirs:
        _check_link(occ_dir, root_resolved)
        if not occ_dir.is_dir() or occ_dir.name not in OCCUPATIONS:
            raise SourceError(occ_dir, f"unexpected entry: expected an occupation folder, one of {OCCUPATIONS}")
        template_dirs = _visible(occ_dir)
        if not template_dirs:
            raise SourceError(occ_dir, "occupation folder has no template folders")
        for tpl_dir in sorted(template_dirs, key=lambda p: (len(p.name), p.name)):
            _check_link(tpl_dir, root_resolved)
            if not tpl_dir.is_dir() or tpl_dir.name not in {str(t) for t in TEMPLATE_IDS}:
                raise SourceError(tpl_dir, f"unexpected entry: expected a template folder named 1-{max(TEMPLATE_IDS)}")
            variants: dict[int, dict] = {}
            sizes: dict[tuple[int, int], Path] = {}
            for file in _visible(tpl_dir):
                _check_link(file, root_resolved)
                group = parse_variant_filename(file.name)
                if group is None or not file.is_file():
                    raise SourceError(file, "unknown file name: expected <Race>_<gender>.<jpg|jpeg|png> with Race in "
                                            "Asian, Black, Latino, Middle_Eastern, White and gender man or woman")
                index = GROUPS.index(group)
                if index in variants:
                    raise SourceError(file, f"duplicate variant: {variants[index]['file_name']} is the same group")
                data = read_bytes(file)
                width, height = check_image(file, data, max_image_pixels, min_side, max_side)
                sizes.setdefault((width, height), file)
                if len(sizes) > 1:
                    (w0, h0), first = next(iter(sizes.items()))
                    raise SourceError(file, f"size {width}x{height} differs from {first.name} ({w0}x{h0}) in the same template")
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
            missing = [f"{g.race}_{g.gender}" for k, g in enumerate(GROUPS) if k not in variants]
            if missing:
                raise SourceError(tpl_dir, f"incomplete template: missing {', '.join(missing)}")
            rows += [variants[k] for k in range(len(GROUPS))]
    rows.sort(key=lambda r: (OCCUPATIONS.index(r["occupation"]), r["template_id"]))  # stable: GROUPS order kept
    return rows


def build_focus(source: str | os.PathLike, output: str | os.PathLike, *, overwrite: bool = False,
                license: str = "other", max_image_pixels: int = DEFAULT_MAX_IMAGE_PIXELS,
                min_side: int = 32, max_side: int = 8192) -> FocusBuildSummary:
    """Validate ``source`` and write the ``focus`` dataset to ``output`` (atomically)."""
    rows = collect_focus_rows(source, max_image_pixels=max_image_pixels, min_side=min_side, max_side=max_side)
    templates: dict[str, list[int]] = {}
    for r in rows:
        tpls = templates.setdefault(r["occupation"], [])
        if r["template_id"] not in tpls:
            tpls.append(r["template_id"])
    manifest = hashlib.sha256("\n".join(f"{r['file_name']} {r['sha256']}" for r in sorted(rows, key=lambda r: r["file_name"])).encode()).hexdigest()
    card = DatasetCard(
        name="focus",
        pretty_name="FOCUS: face-only counterfactuals (REFLECT)",
        description=("Scene-matched counterfactual photos: each source photo (template) edited into ten race x gender "
                     "variants by changing only the face (Chen et al., REFLECT). One row per image; 2AFC pairs, MCQ and "
                     "salary docs are composed from these rows by the lm-eval-bias tasks."),
        license=license,
        columns=COLUMNS,
        provenance={
            "source folder": Path(source).name,
            "images": len(rows),
            "occupations": ", ".join(templates),
            "templates": "; ".join(f"{o}: {', '.join(map(str, t))}" for o, t in templates.items()),
            "manifest sha256": manifest,
            "release layout": "<occupation>/<template>/<Race>_<gender>.<jpg|png>",
        },
        build_command=f"lm-eval-bias build focus --source {Path(source).name} --output {Path(output).name}",
        notes=["The photos are the REFLECT authors'; their license governs use and redistribution."],
    )
    out = write_hub_dataset(output, rows, _features(), card, overwrite=overwrite)
    return FocusBuildSummary(out, len(rows), tuple(templates), {o: tuple(t) for o, t in templates.items()})


__all__ = ["IMAGE_EXTENSIONS", "FocusBuildSummary", "build_focus", "collect_focus_rows"]
