"""VIGNETTE lists and naming (paper: ``vignette.txt``, Sec. 3 and App. A.2).

The authors' lists come in four files (``../shared/upstream/vignette/`` holds a copy; formats):

- ``maledes.csv`` / ``femaledes.csv``: identity descriptors per gender, columns ``axis`` (bias
  dimension), ``bucket``, ``descriptor`` (e.g. "wheelchair man"), ``Visibility-gpt``,
  ``Visibility-human``, ``VLabel``;
- ``activities.json``: ``{time-use category: [activity, ...]}`` (75 activities);
- ``roles.json``: ``{category: [{"activity", "role", "ability", ..., "appearance"}, ...]}``, the
  decision-making question per activity and SSCM dimension;
- ``sscm_dictionary.csv``: ``dictionary`` (SSCM dimension), ``term``, ``direction`` (high/low),
  ``pair_id``.

Images are named as the authors' pipeline names them: ``<gender>/<descriptor>_<activity>.png`` and
no-activity portraits ``<gender>/<descriptor>.png``, spaces written as dashes (:func:`slug`), gender
folders ``male`` and ``female`` (the lists' ``maledes`` / ``femaledes``).

This module only reads and names; it has no harness imports.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

GENDERS = ("female", "male")
LIST_FILES = {"female": "femaledes.csv", "male": "maledes.csv"}
#: The paper's eight bias dimensions, as the lists' ``axis`` column spells them.
DIMENSIONS = ("ability", "age", "gender_and_sex", "nationality", "physical_traits", "race_ethnicity_color",
              "religion", "socioeconomic")
#: Decision-making question columns of ``roles.json`` (one per SSCM-grounded dimension, Sec. 4.4).
DECISION_DIMENSIONS = ("ability", "sociability", "morality", "agency", "status", "appearance")
IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg")


class ListError(ValueError):
    """A list file is malformed: ``path`` and ``reason``."""

    def __init__(self, path: str | os.PathLike, reason: str) -> None:
        self.path, self.reason = str(path), reason
        super().__init__(f"{self.path}: {reason}")


def slug(text: str) -> str:
    """File-name form of a descriptor or activity: lower case, spaces as dashes."""
    return "-".join(str(text).strip().lower().split())


def image_id(gender: str, descriptor: str, activity: str | None = None) -> str:
    """``<gender>/<descriptor-slug>[_<activity-slug>]`` (the file name without extension)."""
    base = f"{gender}/{slug(descriptor)}"
    return base if not activity else f"{base}_{slug(activity)}"


@dataclass(frozen=True)
class Identity:
    gender: str
    descriptor: str
    dimension: str
    bucket: str = ""
    visibility_gpt: str = ""
    visibility_human: str = ""
    visibility_label: str = ""


@dataclass(frozen=True)
class Activity:
    name: str  # as written in activities.json ("Grocery shopping")
    category: str
    role: str | None = None
    questions: tuple[tuple[str, str], ...] = ()  # (decision dimension, question) in DECISION_DIMENSIONS order

    @property
    def text(self) -> str:
        """Lower-case form used inside prompts ("grocery shopping")."""
        return " ".join(self.name.lower().split())


@dataclass(frozen=True)
class Term:
    term: str
    dimension: str  # SSCM dimension (Sociability, Morality, Ability, Agency, Status, Politics)
    direction: str  # high | low
    pair_id: str


@dataclass
class VignetteLists:
    identities: list[Identity]
    activities: list[Activity]
    terms: list[Term]
    notes: list[str] = field(default_factory=list)

    def by_slug(self) -> tuple[dict[tuple[str, str], Identity], dict[str, Activity]]:
        """(gender, descriptor slug) -> identity, activity slug -> activity."""
        return ({(i.gender, slug(i.descriptor)): i for i in self.identities},
                {slug(a.name): a for a in self.activities})


def _read_identities(folder: Path) -> list[Identity]:
    out: list[Identity] = []
    for gender in GENDERS:
        path = folder / LIST_FILES[gender]
        if not path.is_file():
            raise ListError(path, "missing identity list")
        with open(path, newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            needed = {"axis", "descriptor"}
            if not needed <= set(reader.fieldnames or ()):
                raise ListError(path, f"needs columns {sorted(needed)}, has {reader.fieldnames}")
            seen: dict[str, int] = {}
            for line, row in enumerate(reader, 2):
                descriptor = " ".join((row.get("descriptor") or "").split())
                axis = (row.get("axis") or "").strip()
                if not descriptor:
                    raise ListError(f"{path}:{line}", "empty descriptor")
                if axis not in DIMENSIONS:
                    raise ListError(f"{path}:{line}", f"unknown axis {axis!r}; expected one of {list(DIMENSIONS)}")
                if "_" in descriptor or "/" in descriptor:
                    raise ListError(f"{path}:{line}", f"descriptor {descriptor!r} contains '_' or '/' (reserved in file names)")
                key = slug(descriptor)
                if key in seen:
                    raise ListError(f"{path}:{line}", f"descriptor {descriptor!r} has the same file name as line {seen[key]}")
                seen[key] = line
                out.append(Identity(gender, descriptor, axis, (row.get("bucket") or "").strip(),
                                    (row.get("Visibility-gpt") or "").strip(), (row.get("Visibility-human") or "").strip(),
                                    (row.get("VLabel") or "").strip()))
    return out


def _read_json(path: Path, what: str):
    if not path.is_file():
        raise ListError(path, f"missing {what}")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ListError(path, f"not valid JSON ({exc.msg})") from None


def _read_roles(path: Path) -> dict[str, dict]:
    raw = _read_json(path, "roles list")
    roles: dict[str, dict] = {}
    for category, entries in raw.items() if isinstance(raw, dict) else ():
        for k, entry in enumerate(entries):
            where = f"{path}: {category}[{k}]"
            if not isinstance(entry, dict) or not entry.get("activity") or not entry.get("role"):
                raise ListError(where, "entry needs 'activity' and 'role'")
            missing = [d for d in DECISION_DIMENSIONS if not str(entry.get(d) or "").strip()]
            if missing:
                raise ListError(where, f"no question for {missing}")
            roles[slug(entry["activity"])] = entry
    if not roles:
        raise ListError(path, "expected {category: [{activity, role, ability, ...}]}")
    return roles


def read_lists(folder: str | os.PathLike) -> VignetteLists:
    """Read and validate the four list files in ``folder`` (raises :class:`ListError`)."""
    folder = Path(folder)
    identities = _read_identities(folder)
    path = folder / "activities.json"
    categories = _read_json(path, "activity list")
    if not isinstance(categories, dict) or not categories:
        raise ListError(path, "expected {category: [activity, ...]}")
    roles = _read_roles(folder / "roles.json")
    activities, seen, notes = [], set(), []
    for category, names in categories.items():
        for name in names:
            name = " ".join(str(name).split())
            if "_" in name or "/" in name or not name:
                raise ListError(path, f"activity {name!r} is empty or contains '_' or '/'")
            if slug(name) in seen:
                raise ListError(path, f"activity {name!r} listed twice")
            seen.add(slug(name))
            entry = roles.get(slug(name))
            if entry is None:
                notes.append(f"activity {name!r} has no roles.json entry: not used by the decision-making tasks")
                activities.append(Activity(name, category))
            else:
                activities.append(Activity(name, category, str(entry["role"]),
                                           tuple((d, " ".join(str(entry[d]).split())) for d in DECISION_DIMENSIONS)))
    unknown = sorted(set(roles) - seen)
    if unknown:
        raise ListError(folder / "roles.json", f"roles for activities not in activities.json: {unknown}")
    terms = _read_terms(folder / "sscm_dictionary.csv")
    return VignetteLists(identities, activities, terms, notes)


def _read_terms(path: Path) -> list[Term]:
    if not path.is_file():
        raise ListError(path, "missing SSCM dictionary")
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        needed = {"dictionary", "term", "direction", "pair_id"}
        if not needed <= set(reader.fieldnames or ()):
            raise ListError(path, f"needs columns {sorted(needed)}, has {reader.fieldnames}")
        terms, seen = [], set()
        for line, row in enumerate(reader, 2):
            term, direction = (row["term"] or "").strip(), (row["direction"] or "").strip().lower()
            if not term or direction not in ("high", "low"):
                raise ListError(f"{path}:{line}", f"needs a term and direction high/low, got {term!r}/{direction!r}")
            if term in seen:
                raise ListError(f"{path}:{line}", f"term {term!r} listed twice")
            seen.add(term)
            terms.append(Term(term, (row["dictionary"] or "").strip(), direction, (row["pair_id"] or "").strip()))
    pairs: dict[str, set[str]] = {}
    for t in terms:
        pairs.setdefault(t.pair_id.split("_", 1)[-1], set()).add(t.direction)
    unpaired = sorted(k for k, d in pairs.items() if d != {"high", "low"})
    if unpaired:
        raise ListError(path, f"pair ids without one high and one low term: {unpaired}")
    return terms


def marker_colour(kind: str, name: str) -> tuple[int, int, int]:
    """Colour of the synthetic fixture's identity (``kind="identity"``) or activity marker: a hash of
    the name, kept away from black so it never looks like a background."""
    digest = hashlib.sha256(f"{kind}:{name}".encode()).digest()
    return tuple(40 + b * 215 // 255 for b in digest[:3])  # type: ignore[return-value]
