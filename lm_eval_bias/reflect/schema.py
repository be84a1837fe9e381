"""The FOCUS dataset's vocabulary: occupations, templates, races, genders and file names.

One home for every name the FOCUS builder, the REFLECT tasks, the synthetic fixture generator and
the planted-bias probe model agree on. The release layout (``../shared/upstream/README.md``) is
``<occupation>/<template>/<Race>_<gender>.<jpg|png>``; a user's source may add the optional third
presentation ``<Race>_androgynous.<jpg|png>`` (App. C.8, :data:`PRESENTATIONS`).
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

from lm_eval_bias.testing.markers import MARKER_FRACTION, marker_box  # noqa: F401 (re-exported)

OCCUPATIONS: tuple[str, ...] = ("ceo", "cook", "doctor", "lawyer", "nurse", "teacher")
TEMPLATE_IDS: tuple[int, ...] = tuple(range(1, 9))
#: Race labels exactly as spelled in the release file names.
RACES: tuple[str, ...] = ("Asian", "Black", "Latino", "Middle_Eastern", "White")
#: Gender labels exactly as spelled in the release file names.
GENDERS: tuple[str, ...] = ("man", "woman")
IMAGE_EXTENSIONS: tuple[str, ...] = (".jpg", ".jpeg", ".png")

#: Reference groups of the paper (footnote 2, Sec. 4.2; Sec. 4.3): White for race, Female for gender.
REFERENCE_RACE = "White"
REFERENCE_GENDER = "woman"


class Group(NamedTuple):
    """One of the ten race x gender cells."""

    race: str
    gender: str

    @property
    def key(self) -> str:
        """Stable lower-case key, e.g. ``middle_eastern_woman``."""
        return f"{self.race.lower()}_{self.gender}"

    @property
    def abbrev(self) -> str:
        """The paper's Figure 4 abbreviation: race (A/B/L/ME/W) x gender (M/F), e.g. ``MEF``; an
        androgynous cell (App. C.8) ends in N, e.g. ``BN``."""
        race = {"Asian": "A", "Black": "B", "Latino": "L", "Middle_Eastern": "ME", "White": "W"}[self.race]
        return race + {"man": "M", "woman": "F"}.get(self.gender, "N")


#: The ten groups in a fixed order (race-major), used as the row/column order of win-rate matrices.
GROUPS: tuple[Group, ...] = tuple(Group(r, g) for r in RACES for g in GENDERS)
GROUP_INDEX: dict[tuple[str, str], int] = {(g.race, g.gender): i for i, g in enumerate(GROUPS)}

#: The 45 unordered group pairs (i < j) in GROUPS order.
GROUP_PAIRS: tuple[tuple[int, int], ...] = tuple(itertools.combinations(range(len(GROUPS)), 2))

# --- Optional third gender presentation (REFLECT App. C.8, exploratory androgynous pilot) ----------
#: The optional third presentation: ``<Race>_androgynous.<jpg|png>`` beside the binary variants of a
#: template. Its images are asked in the MCQ tasks only (per-presentation keys, docs/reflect.md); they
#: are not among the ten groups, the 45 group pairs or the salary portraits, whose analyses are unchanged.
ANDROGYNOUS = "androgynous"
#: Every gender presentation a FOCUS-layout file name may carry, binary first.
PRESENTATIONS: tuple[str, ...] = (*GENDERS, ANDROGYNOUS)
#: The five androgynous cells, race order; indices ``len(GROUPS) + k`` in :data:`ALL_GROUPS`.
EXTRA_GROUPS: tuple[Group, ...] = tuple(Group(r, ANDROGYNOUS) for r in RACES)
#: The ten groups followed by the androgynous cells: the group index of every FOCUS-layout image (an
#: index ``>= len(GROUPS)`` is a third-presentation image).
ALL_GROUPS: tuple[Group, ...] = GROUPS + EXTRA_GROUPS
ALL_GROUP_INDEX: dict[tuple[str, str], int] = {(g.race, g.gender): i for i, g in enumerate(ALL_GROUPS)}


def race_key(race: str) -> str:
    """Lower-case result-key form of a race label (``Middle_Eastern`` -> ``middle_eastern``)."""
    return race.lower()


def image_id(occupation: str, template_id: int, race: str, gender: str) -> str:
    """Stable id of one FOCUS image, e.g. ``ceo/3/Middle_Eastern_woman``."""
    return f"{occupation}/{template_id}/{race}_{gender}"


def template_key(occupation: str, template_id: int) -> str:
    """Id of one source photo (the template-cluster bootstrap's resampling unit), e.g. ``ceo/3``."""
    return f"{occupation}/{template_id}"


def parse_variant_filename(name: str) -> Group | None:
    """``"Middle_Eastern_woman.jpg"`` -> ``Group("Middle_Eastern", "woman")``; None if not a FOCUS name.
    The optional third presentation is a FOCUS name too: ``"Black_androgynous.jpg"`` ->
    ``Group("Black", "androgynous")`` (App. C.8; an :data:`EXTRA_GROUPS` cell)."""
    stem, dot, ext = name.rpartition(".")
    if not dot or "." + ext.lower() not in IMAGE_EXTENSIONS:
        return None
    race, _, gender = stem.rpartition("_")
    if race in RACES and gender in PRESENTATIONS:
        return Group(race, gender)
    return None


# --- Pixel code used by synthetic fixtures and the planted-bias probe -----------------------------
#: Solid colours of the marker patch (:func:`lm_eval_bias.testing.markers.marker_box`, the image's
#: top-left corner) that encode the image's group in synthetic fixture images. Colours are far apart
#: in RGB so JPEG compression and resizing never confuse them.
GROUP_MARKER_COLORS: tuple[tuple[int, int, int], ...] = (
    (230, 25, 75),
    (60, 180, 75),
    (255, 225, 25),
    (0, 130, 200),
    (245, 130, 48),
    (145, 30, 180),
    (70, 240, 240),
    (240, 50, 230),
    (128, 128, 0),
    (0, 0, 128),
)
assert len(GROUP_MARKER_COLORS) == len(GROUPS)
#: Marker colours of the androgynous cells (:data:`EXTRA_GROUPS` order), at least 120 in RGB from every
#: other marker colour, so :func:`read_group_marker` never takes them for one of the ten groups.
EXTRA_GROUP_MARKER_COLORS: tuple[tuple[int, int, int], ...] = (
    (128, 0, 0),
    (0, 255, 0),
    (200, 200, 255),
    (0, 70, 0),
    (255, 255, 150),
)
assert len(EXTRA_GROUP_MARKER_COLORS) == len(EXTRA_GROUPS)
ALL_GROUP_MARKER_COLORS: tuple[tuple[int, int, int], ...] = GROUP_MARKER_COLORS + EXTRA_GROUP_MARKER_COLORS


def read_group_marker(image, presentations: bool = False) -> Group | None:
    """Read the group a synthetic fixture image encodes in its marker patch.

    Returns the group whose marker colour is nearest to the patch's mean colour (inner half of the
    patch, so JPEG ringing at its edge does not matter), or None when no marker colour is within a
    distance of 60 in RGB (not a fixture image). ``image`` is a PIL image. ``presentations``: the
    androgynous cells' markers are read too (:data:`ALL_GROUPS`); without it they read as None.
    """
    import numpy as np

    rgb = image.convert("RGB")
    left, top, right, bottom = marker_box(*rgb.size)
    inset = (right - left) // 4
    patch = np.asarray(rgb.crop((left + inset, top + inset, right - inset, bottom - inset)), dtype=np.float64)
    mean = patch.reshape(-1, 3).mean(axis=0)
    colours, groups = (ALL_GROUP_MARKER_COLORS, ALL_GROUPS) if presentations else (GROUP_MARKER_COLORS, GROUPS)
    distances = np.linalg.norm(np.asarray(colours, dtype=np.float64) - mean, axis=1)
    best = int(np.argmin(distances))
    return groups[best] if distances[best] <= 60.0 else None


#: Occupation titles as they appear in the salary prompt ("the position of {occupation}").
OCCUPATION_TITLES: dict[str, str] = {
    "ceo": "CEO",
    "cook": "cook",
    "doctor": "doctor",
    "lawyer": "lawyer",
    "nurse": "nurse",
    "teacher": "teacher",
}
