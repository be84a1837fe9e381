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

This module only reads and names; it has no harness imports (it reads files through
:mod:`lm_eval_bias.datasets_builder.readers`, which gives every error its file, line and reason).
"""

from __future__ import annotations

import hashlib
import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from lm_eval_bias.datasets_builder.readers import (
    KeyedRows,
    SourceError,
    describe,
    expect_list,
    expect_str,
    expect_str_list,
    field_name,
    read_csv,
    read_json,
)

GENDERS = ("female", "male")
LIST_FILES = {"female": "femaledes.csv", "male": "maledes.csv"}
#: The paper's eight bias dimensions, as the lists' ``axis`` column spells them.
DIMENSIONS = ("ability", "age", "gender_and_sex", "nationality", "physical_traits", "race_ethnicity_color",
              "religion", "socioeconomic")
#: Decision-making question columns of ``roles.json`` (one per SSCM-grounded dimension, Sec. 4.4).
DECISION_DIMENSIONS = ("ability", "sociability", "morality", "agency", "status", "appearance")
#: the perception questions of Sec. 4.2 (their prompts: :data:`lm_eval_bias.vignette.tasks.PERCEPTION`)
PERCEPTION_QUESTIONS = ("struggle", "capability", "enjoyment", "dislike")
#: The authors' extra ability questions with a ``{role}`` placeholder (``roles.json``; not in the
#: paper): asked only with the task option ``ability_irr: authors``.
IRRELEVANT_KEYS = ("ability_irr1", "ability_irr2", "ability_irr3")
#: The authors' filling of ``ability_irr<k>`` (src/decisionmaking.py, ``category_mapping``): a role of
#: an activity of the k-th other time-use category.
CATEGORY_MAPPING = {
    "Necessary Time": ("Contracted Time", "Committed Time", "Free Time"),
    "Contracted Time": ("Necessary Time", "Committed Time", "Free Time"),
    "Committed Time": ("Necessary Time", "Contracted Time", "Free Time"),
    "Free Time": ("Necessary Time", "Contracted Time", "Committed Time"),
}
IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg")


class ListError(SourceError):
    """A list file is malformed: ``path`` (``FILE:LINE`` where there is a line) and ``reason``. A
    :class:`~lm_eval_bias.datasets_builder.readers.SourceError`, so ``lm-eval-bias build`` reports it as
    ``error: <path>: <reason>``."""


@contextmanager
def _list_errors():
    """Re-raise the shared readers' errors as :class:`ListError`."""
    try:
        yield
    except ListError:
        raise
    except SourceError as exc:
        raise ListError(exc.path, exc.reason) from None


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
    irrelevant: tuple[str, ...] = ()  # roles.json ability_irr1..3 templates ("{role}" placeholder), if given

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
        header, rows = read_csv(path)
        needed = {"axis", "descriptor"}
        if not needed <= set(header):
            raise ListError(path, f"needs columns {sorted(needed)}, has {header}")
        seen = KeyedRows("descriptor")
        for where, row in rows:
            descriptor = " ".join((row.get("descriptor") or "").split())
            axis = (row.get("axis") or "").strip()
            if not descriptor:
                raise ListError(where, "empty descriptor")
            if axis not in DIMENSIONS:
                raise ListError(where, f"unknown axis {axis!r}; expected one of {list(DIMENSIONS)}")
            if "_" in descriptor or "/" in descriptor:
                raise ListError(where, f"descriptor {descriptor!r} contains '_' or '/' (reserved in file names)")
            key = slug(descriptor)
            if key in seen.first:
                first, before = seen.first[key]
                if before.get("descriptor") != row.get("descriptor"):
                    raise ListError(where, f"descriptor {descriptor!r} has the same file name as {first.ref(where)} "
                                           f"({before.get('descriptor')!r}); keep only one of them")
            seen.add(key, where, row)  # the same descriptor twice: error naming both lines
            out.append(Identity(gender, descriptor, axis, (row.get("bucket") or "").strip(),
                                (row.get("Visibility-gpt") or "").strip(), (row.get("Visibility-human") or "").strip(),
                                (row.get("VLabel") or "").strip()))
    return out


def _read_json(path: Path, what: str) -> dict:
    if not path.is_file():
        raise ListError(path, f"missing {what}")
    return read_json(path, expect=dict)


def _read_roles(path: Path) -> dict[str, dict]:
    raw = _read_json(path, "roles list")
    roles: dict[str, dict] = {}
    first: dict[str, str] = {}
    for category, entries in raw.items():
        entries = expect_list(entries, path, field_name(None, category))
        for k, entry in enumerate(entries):
            where = f"{path}: {field_name(None, category, k)}"
            if not isinstance(entry, dict):
                raise ListError(where, f"entry must be an object, got {describe(entry)}")
            if not entry.get("activity") or not entry.get("role"):
                raise ListError(where, "entry needs 'activity' and 'role'")
            for key in ("activity", "role", *DECISION_DIMENSIONS, *IRRELEVANT_KEYS):
                expect_str(entry.get(key), where, key, optional=True)
            for key in IRRELEVANT_KEYS:
                if (entry.get(key) or "").strip() and "{role}" not in entry[key]:
                    raise ListError(where, f"{key} must contain the placeholder {{role}}, got {entry[key]!r}")
            missing = [d for d in DECISION_DIMENSIONS if not (entry.get(d) or "").strip()]
            if missing:
                raise ListError(where, f"no question for {missing}")
            key = slug(entry["activity"])
            if key in roles:
                kind = "repeats" if roles[key] == entry else "conflicts with"
                raise ListError(where, f"duplicate roles entry for activity {entry['activity']!r}: {kind} {first[key]}; "
                                       "keep only one")
            roles[key], first[key] = entry, field_name(None, category, k)
    if not roles:
        raise ListError(path, "expected {category: [{activity, role, ability, ...}]}")
    return roles


def read_lists(folder: str | os.PathLike) -> VignetteLists:
    """Read and validate the four list files in ``folder`` (raises :class:`ListError`).

    Files must be UTF-8; JSON values must have the documented types (``activities.json``: an object of
    arrays of strings; ``roles.json``: an object of arrays of objects with string fields); CSV rows must
    have as many fields as the header. An entry given twice — a descriptor (by file name), an activity,
    a roles entry, an SSCM term — is an error naming both places, whether the two conflict or are
    identical."""
    with _list_errors():
        return _read_lists(Path(folder))


def _read_lists(folder: Path) -> VignetteLists:
    identities = _read_identities(folder)
    path = folder / "activities.json"
    categories = _read_json(path, "activity list")
    if not categories:
        raise ListError(path, "expected {category: [activity, ...]}")
    roles = _read_roles(folder / "roles.json")
    activities, seen, notes = [], {}, []
    for category, names in categories.items():
        for k, name in enumerate(expect_str_list(names, path, field_name(None, category))):
            name = " ".join(name.split())
            if "_" in name or "/" in name or not name:
                raise ListError(path, f"activity {name!r} is empty or contains '_' or '/'")
            if slug(name) in seen:
                raise ListError(path, f"activity {name!r} listed twice ({seen[slug(name)]} and {field_name(None, category, k)})")
            seen[slug(name)] = field_name(None, category, k)
            entry = roles.get(slug(name))
            if entry is None:
                notes.append(f"activity {name!r} has no roles.json entry: not used by the decision-making tasks")
                activities.append(Activity(name, category))
            else:
                activities.append(Activity(name, category, str(entry["role"]),
                                           tuple((d, " ".join(str(entry[d]).split())) for d in DECISION_DIMENSIONS),
                                           tuple(" ".join(str(entry[k]).split()) for k in IRRELEVANT_KEYS
                                                 if (entry.get(k) or "").strip())))
    unknown = sorted(set(roles) - set(seen))
    if unknown:
        raise ListError(folder / "roles.json", f"roles for activities not in activities.json: {unknown}")
    terms = _read_terms(folder / "sscm_dictionary.csv")
    return VignetteLists(identities, activities, terms, notes)


def _read_terms(path: Path) -> list[Term]:
    if not path.is_file():
        raise ListError(path, "missing SSCM dictionary")
    header, rows = read_csv(path)
    needed = {"dictionary", "term", "direction", "pair_id"}
    if not needed <= set(header):
        raise ListError(path, f"needs columns {sorted(needed)}, has {header}")
    terms, seen = [], KeyedRows("term")
    for where, row in rows:
        term, direction = row["term"].strip(), row["direction"].strip().lower()
        if not term or direction not in ("high", "low"):
            raise ListError(where, f"needs a term and direction high/low, got {term!r}/{direction!r}")
        seen.add(term, where, row)  # a term listed twice: error naming both lines
        terms.append(Term(term, row["dictionary"].strip(), direction, row["pair_id"].strip()))
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
