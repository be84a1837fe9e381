"""Synthetic FOCUS-layout fixtures: photo sets and biography files, in the real on-disk formats.

:func:`make_synthetic_focus` writes ``<occupation>/<template>/<Race>_<gender>.jpg`` like the authors'
release. Each template has its own deterministic "scene" (gradient and shapes), identical across its
ten variants, as in FOCUS where only the face changes; each variant has a face ellipse coloured by
race, a small gender mark, and a **marker patch** (:func:`lm_eval_bias.reflect.schema.marker_box`)
filled with the group's colour, which :func:`~lm_eval_bias.reflect.schema.read_group_marker` (and so
the ``bias-probe`` model) reads back even after JPEG compression. With ``androgynous=True`` a template
also gets ``<Race>_androgynous.jpg`` variants (the optional third presentation of App. C.8), marked with
their own colours (``focus_schema.EXTRA_GROUP_MARKER_COLORS``).
"""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path
from typing import Iterable

from lm_eval_bias.reflect.schema import (
    ALL_GROUP_MARKER_COLORS,
    ALL_GROUPS,
    GROUPS,
    OCCUPATIONS,
    TEMPLATE_IDS,
    marker_box,
)

_SKIN = {
    "Asian": (224, 190, 150),
    "Black": (110, 72, 50),
    "Latino": (198, 150, 110),
    "Middle_Eastern": (190, 140, 100),
    "White": (240, 210, 190),
}


def _scene(occupation: str, template_id: int, size: tuple[int, int]):
    from PIL import Image, ImageDraw

    rng = random.Random(f"{occupation}/{template_id}")
    width, height = size
    top = tuple(rng.randrange(40, 220) for _ in range(3))
    bottom = tuple(rng.randrange(40, 220) for _ in range(3))
    column = Image.new("RGB", (1, height))
    for y in range(height):
        t = y / max(1, height - 1)
        column.putpixel((0, y), tuple(int(a + (b - a) * t) for a, b in zip(top, bottom)))
    image = column.resize((width, height))
    draw = ImageDraw.Draw(image)
    for _ in range(6):
        x0, y0 = rng.randrange(width), rng.randrange(height)
        x1, y1 = x0 + rng.randrange(width // 8, width // 3), y0 + rng.randrange(height // 8, height // 3)
        draw.rectangle((x0, y0, x1, y1), fill=tuple(rng.randrange(256) for _ in range(3)))
    # the "body": same clothing in every variant
    draw.rectangle((width * 3 // 10, height * 6 // 10, width * 7 // 10, height), fill=tuple(rng.randrange(256) for _ in range(3)))
    return image


def make_synthetic_focus(
    out_dir: str | Path,
    occupations: Iterable[str] = OCCUPATIONS,
    templates: Iterable[int] = TEMPLATE_IDS,
    size: tuple[int, int] = (256, 256),
    image_format: str = "jpg",
    seed: int = 0,
    androgynous: bool = False,
    androgynous_races: Iterable[str] | None = None,
) -> Path:
    """Write a FOCUS-layout photo set (10 variants per template) and return ``out_dir``.

    ``androgynous`` (default off): also write ``<Race>_androgynous`` variants, for the races in
    ``androgynous_races`` (default all five). 480 images at 1024x1024 take about half a minute on two cores.
    """
    from PIL import ImageDraw

    out = Path(out_dir)
    width, height = size
    fmt = {"jpg": "JPEG", "jpeg": "JPEG", "png": "PNG"}[image_format.lower()]
    for occupation in occupations:
        for template_id in templates:
            scene = _scene(occupation, template_id + 1000 * seed, size)
            folder = out / occupation / str(template_id)
            folder.mkdir(parents=True, exist_ok=True)
            extra = [k for k, g in enumerate(ALL_GROUPS) if k >= len(GROUPS) and androgynous
                     and (androgynous_races is None or g.race in tuple(androgynous_races))]
            for index in [*range(len(GROUPS)), *extra]:
                group = ALL_GROUPS[index]
                image = scene.copy()
                draw = ImageDraw.Draw(image)
                face = (width * 35 // 100, height * 2 // 10, width * 65 // 100, height * 6 // 10)
                draw.ellipse(face, fill=_SKIN[group.race])
                mark = (width * 47 // 100, height * 3 // 10, width * 53 // 100, height * 35 // 100)
                if group.gender == "man":
                    draw.rectangle(mark, fill=(30, 30, 30))
                elif group.gender == "woman":
                    draw.ellipse(mark, fill=(200, 40, 90))
                else:  # androgynous (App. C.8)
                    draw.polygon([(mark[0], mark[3]), (mark[2], mark[3]), ((mark[0] + mark[2]) // 2, mark[1])],
                                 fill=(115, 35, 60))
                draw.rectangle(marker_box(width, height), fill=ALL_GROUP_MARKER_COLORS[index])
                path = folder / f"{group.race}_{group.gender}.{image_format.lower()}"
                image.save(path, fmt, **({"quality": 90} if fmt == "JPEG" else {}))
    return out


_FIRST_NAMES = ("Maria", "James", "Aisha", "Wei", "Carlos", "Fatima", "John", "Priya")
_LAST_NAMES = ("Garcia", "Smith", "Okafor", "Chen", "Lopez", "Haddad", "Miller", "Patel")
_BIO_TEMPLATES = (
    "{title}{first} {last} is a {occupation} with {years} years of experience. {Pronoun} completed "
    "{possessive} training at a state university and {pronoun} is known for careful work. "
    "More at https://example.org/{first_lower} or follow @{first_lower}{years}.",
    "{first} {last} has worked as a {occupation} for {years} years. {Pronoun} leads a small team, and "
    "{possessive} colleagues describe {object} as reliable. Contact: {first_lower}@example.com",
)


def make_synthetic_bios(
    path: str | Path, per_occupation: int = 5, fmt: str | None = None, seed: int = 0,
    occupations: Iterable[str] = OCCUPATIONS,
) -> Path:
    """Write ``(occupation, biography)`` rows (CSV or JSONL by ``fmt`` or the file extension) whose
    biographies contain names, gendered pronouns, a URL, an e-mail or an @handle to normalise."""
    path = Path(path)
    fmt = (fmt or path.suffix.lstrip(".")).lower()
    rng = random.Random(seed)
    rows = []
    for occupation in occupations:
        for i in range(per_occupation):
            she = rng.random() < 0.5
            first, last = rng.choice(_FIRST_NAMES), rng.choice(_LAST_NAMES)
            text = _BIO_TEMPLATES[i % len(_BIO_TEMPLATES)].format(
                title="Dr. " if occupation == "doctor" else "",
                first=first, last=last, first_lower=first.lower(), occupation=occupation,
                years=rng.randrange(2, 30), Pronoun="She" if she else "He", pronoun="she" if she else "he",
                possessive="her" if she else "his", object="her" if she else "him",
            )
            rows.append({"bio_id": f"{occupation}-{i:03d}", "occupation": occupation, "biography": text})
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    elif fmt == "csv":
        with open(path, "w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=["bio_id", "occupation", "biography"])
            writer.writeheader()
            writer.writerows(rows)
    else:
        raise ValueError(f"fmt must be jsonl or csv, got {fmt!r}")
    return path
