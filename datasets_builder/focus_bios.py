"""``lm-eval-bias build focus-bios``: biographies for the REFLECT salary task (Sec. 4.3, App. B.3).

Sources:
- a CSV or JSONL file of ``(occupation, biography)`` rows, optional ``bio_id`` and ``name`` columns;
- Bias-in-Bios rows (De-Arteaga et al., 2019): ``profession`` (integer code or name) and
  ``hard_text`` (or ``text``/``bio``), as CSV, JSONL or parquet. Integer codes follow the 28-class
  alphabetical order of the LabHC/bias_in_bios release (:data:`BIAS_IN_BIOS_PROFESSIONS`);
  attorney -> lawyer, physician -> doctor, nurse -> nurse, teacher -> teacher; other professions
  are dropped and counted.

Errors: every bad row or file fails with ``error: FILE[:LINE]: reason`` (parquet: ``FILE: row N:
reason``) and nothing is written: non-UTF-8 text, a JSONL line that is not a JSON object, a column of
the wrong type (biography/occupation/name must be strings; ``bio_id`` a string or integer), an
unreadable parquet file, and any ``bio_id`` given twice — conflicting or identical rows alike, the
error names both lines (:mod:`lm_eval_bias.datasets_builder.readers`).

Normalization (the paper: "anonymizing names, neutralizing pronouns, and removing explicit
identifiers"), :func:`normalize_biography`, heuristic and rule-based (no NER model):
1. URLs, e-mail addresses and @handles are removed.
2. Names: every token of the row's ``name`` column (when given); an honorific followed by capitalized
   words ("Dr. Jane Smith"); and a sentence-initial run of two or three capitalized words followed by
   a verb such as is/was/has/works/received ("Jane Smith is ...") become "The candidate"; later
   occurrences of those name tokens become "the candidate".
3. Pronouns: he/she -> they, him -> them, his -> their, hers -> theirs, himself/herself -> themselves,
   "her" -> "their" before a word and "them" otherwise; verb agreement right after a subject pronoun
   (is -> are, was -> were, has -> have, does -> do, and a simple -s verb drops its s: works -> work).
4. Gendered words: Mr./Mrs./Ms./Miss dropped; husband/wife -> spouse, mother/father -> parent,
   son/daughter -> child, brother/sister -> sibling, boyfriend/girlfriend -> partner.
   Name words may carry hyphens and apostrophes ("Mary-Anne O'Neil", "McDonald"); professional titles
   count as honorifics ("Attorney Jane Smith", "Chef Lee"); credentials after a name are dropped with it
   ("Jane Smith, MD, is"); a lone capitalized word starting a sentence before such a verb ("Smith has
   practiced law", Bias-in-Bios texts whose first sentence was cut) is a name unless it is a common
   sentence start (:data:`_NOT_NAMES`, words ending in -ing, -tion, -ment, ...).
Limits: names not matching these shapes (e.g. a lone surname mid-sentence) survive, and a place name
starting a sentence before such a verb ("Boston has ...") is anonymised too, everywhere it occurs
(leaking a name is worse than losing a place); "her" can be
mis-resolved; these are recorded per biography so an audit can check them.
"""

from __future__ import annotations

import json
import os
import random
import re
from dataclasses import dataclass
from pathlib import Path

from lm_eval_bias.datasets_builder.hub import DatasetCard, SourceInput, write_hub_dataset
from lm_eval_bias.datasets_builder.readers import KeyedRows, Loc, SourceError, describe, expect_str, read_table
from lm_eval_bias.datasets_builder.focus import OCCUPATION_SLUG
from lm_eval_bias.reflect.schema import OCCUPATIONS

BIAS_IN_BIOS_PROFESSIONS: tuple[str, ...] = (
    "accountant", "architect", "attorney", "chiropractor", "comedian", "composer", "dentist", "dietitian", "dj",
    "filmmaker", "interior_designer", "journalist", "model", "nurse", "painter", "paralegal", "pastor",
    "personal_trainer", "photographer", "physician", "poet", "professor", "psychologist", "rapper",
    "software_engineer", "surgeon", "teacher", "yoga_teacher",
)
BIAS_IN_BIOS_TO_FOCUS: dict[str, str] = {"attorney": "lawyer", "physician": "doctor", "nurse": "nurse", "teacher": "teacher"}

_URL = re.compile(r"\b(?:https?://|www\.)\S+", re.IGNORECASE)
_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
_HANDLE = re.compile(r"(?<![\w@])@\w+")
#: One name word: "Jane", "McDonald", "Mary-Anne", "O'Neil", "D'Angelo" (capital, then lower case or an
#: apostrophe and a capital).
_NAME_WORD = r"[A-Z](?:[a-z]|'[A-Z])[\w'-]*"
_HONORIFIC_NAME = re.compile(
    r"\b(?:Dr|Prof|Mr|Mrs|Ms|Mx|Miss|Attorney|Atty|Judge|Chef|Nurse|Professor|Coach|Rev)\.?\s+"
    rf"((?:{_NAME_WORD}\s?){{1,3}})")
_PERSON_VERBS = (r"is|was|has|had|works|worked|received|earned|holds|graduated|joined|serves|served|leads|led|"
                 r"specializes|practices|completed|began|started|brings|enjoys|lives|teaches|cooks|treats|represents")
_LEADING_NAME = re.compile(
    rf"(^|(?<=[.!?]\s))((?:{_NAME_WORD}\s){{1,2}}{_NAME_WORD})(?:,(?:\s?[A-Z][A-Za-z.]*,)+)?"
    rf"(?=\s+(?:{_PERSON_VERBS})\b)"
)
#: A lone name word starting a sentence before a person verb ("Smith has practiced law ..."): Bias-in-Bios
#: texts drop the first sentence, so a surname often appears alone. Words that commonly start such a
#: sentence without being a name are excluded (a stop list and common noun endings).
_LONE_NAME = re.compile(rf"(^|(?<=[.!?]\s))({_NAME_WORD})(?=\s+(?:{_PERSON_VERBS})\b)")
_NOT_NAMES = {"The", "This", "That", "These", "Those", "It", "There", "Here", "Each", "Every", "Today", "Now",
              "Currently", "Also", "Our", "Her", "His", "Their", "My", "Your", "One", "Everyone", "Someone", "Nobody",
              "Education", "Experience", "Work", "Practice", "Research", "Training", "Service", "Family", "Cooking",
              "Teaching", "Nursing", "Medicine", "Law", "Food", "Care", "Patient", "Patients", "Students", "Clients",
              "Staff", "Team", "Company", "Business", "Firm", "Office", "Hospital", "School", "Restaurant", "Kitchen",
              "Previously", "Prior", "Later", "Recently", "Since", "Before", "After", "During", "While", "When"}
_COMMON_ENDINGS = ("ing", "tion", "sion", "ment", "ness", "ity", "ship", "ance", "ence", "ism")


def _lone_names(text: str) -> set[str]:
    return {m.group(2) for m in _LONE_NAME.finditer(text)
            if m.group(2) not in _NOT_NAMES and not m.group(2).lower().endswith(_COMMON_ENDINGS)}


_TITLES = re.compile(r"\b(?:Mr|Mrs|Ms|Miss|Mx)\.?\s+", re.IGNORECASE)
_WORDS = {
    "husband": "spouse", "wife": "spouse", "husbands": "spouses", "wives": "spouses",
    "mother": "parent", "father": "parent", "mothers": "parents", "fathers": "parents",
    "son": "child", "daughter": "child", "sons": "children", "daughters": "children",
    "brother": "sibling", "sister": "sibling", "boyfriend": "partner", "girlfriend": "partner",
}
_PRONOUNS = {"he": "they", "she": "they", "him": "them", "his": "their", "hers": "theirs",
             "himself": "themselves", "herself": "themselves"}
_VERBS = {"is": "are", "was": "were", "has": "have", "does": "do", "isn't": "aren't", "wasn't": "weren't",
          "hasn't": "haven't", "doesn't": "don't", "'s": "'re"}
_NOT_VERBS = {"also", "always", "currently", "now", "still", "often", "never", "recently", "later", "then", "was", "is"}


@dataclass(frozen=True)
class Change:
    kind: str
    original: str
    replacement: str


def _match_case(original: str, replacement: str) -> str:
    return replacement[:1].upper() + replacement[1:] if original[:1].isupper() else replacement


def normalize_biography(text: str, name: str | None = None) -> tuple[str, list[dict]]:
    """Normalized biography and the list of changes made (dicts with kind, original, replacement)."""
    changes: list[Change] = []

    def sub(pattern: re.Pattern, kind: str, repl, s: str) -> str:
        def fn(m: re.Match) -> str:
            new = repl(m) if callable(repl) else repl
            if new != m.group(0):
                changes.append(Change(kind, m.group(0), new))
            return new
        return pattern.sub(fn, s)

    s = sub(_URL, "url", "", text)
    s = sub(_EMAIL, "email", "", s)
    s = sub(_HANDLE, "handle", "", s)
    name_tokens: set[str] = set()
    if name:
        name_tokens |= {t for t in re.findall(r"[A-Za-z][\w'-]+", name) if len(t) > 1}
    for m in _HONORIFIC_NAME.finditer(s):
        name_tokens |= set(m.group(1).split())
    for m in _LEADING_NAME.finditer(s):
        name_tokens |= set(m.group(2).split())
    name_tokens |= _lone_names(s)
    name_tokens = {t for t in name_tokens if t.lower() not in _PRONOUNS and t.lower() not in {"the", "a", "an"}}
    if name_tokens:
        alternation = "|".join(sorted(map(re.escape, name_tokens), key=len, reverse=True))
        full = re.compile(rf"(?:\b(?:Dr|Prof|Mr|Mrs|Ms|Mx|Miss|Attorney|Atty|Judge|Chef|Nurse|Professor|Coach|Rev)\.?\s+)?"
                          rf"(?<![\w'-])(?:{alternation})(?:\s+(?:{alternation}))*(?![\w-])(?:'s)?(?:,(?:\s?[A-Z][A-Za-z.]*,)+)?")
        s = sub(full, "name", lambda m: "the candidate's" if m.group(0).endswith("'s") else "the candidate", s)
    s = sub(_TITLES, "title", "", s)
    s = sub(re.compile(r"\b(" + "|".join(_WORDS) + r")\b", re.IGNORECASE), "gendered_word",
            lambda m: _match_case(m.group(1), _WORDS[m.group(1).lower()]), s)

    def pronoun(m: re.Match) -> str:
        word, following = m.group(1), m.group(2) or ""
        low = word.lower()
        if low == "her":
            new = "their" if re.match(r"\s+[A-Za-z]", following) and following.strip().lower() not in _VERB_AFTER_OBJECT else "them"
            return _match_case(word, new) + following
        new = _match_case(word, _PRONOUNS[low])
        if low in ("he", "she") and following:
            verb = following.strip()
            lead = following[: len(following) - len(following.lstrip())]
            if verb.lower() in _VERBS:
                return new + lead + _match_case(verb, _VERBS[verb.lower()])
            if re.fullmatch(r"[a-z]{3,}s", verb) and verb not in _NOT_VERBS and not verb.endswith("ss"):
                stem = verb[:-2] if verb.endswith(("ches", "shes", "xes", "sses")) else verb[:-1]
                return new + lead + stem
        return new + following

    pattern = re.compile(r"\b(he|she|him|his|hers|himself|herself|her)\b(\s+[\w']+)?", re.IGNORECASE)

    def tracked(m: re.Match) -> str:
        new = pronoun(m)
        if new != m.group(0):
            changes.append(Change("pronoun", m.group(0), new))
        return new

    s = pattern.sub(tracked, s)
    s = re.sub(r"\s{2,}", " ", s)
    s = re.sub(r"\s+([.,;:!?])", r"\1", s)
    s = re.sub(r"(?:(?<=^)|(?<=[.!?]\s))the candidate", "The candidate", s.strip())
    s = re.sub(r"\b(?:or|and)\s+follow\s*[.]", ".", s)
    return s, [c.__dict__ for c in changes]


_VERB_AFTER_OBJECT = {"and", "or", "to", "with", "as", "for", "in", "on", "at", "from", "by", "about", "that", "because", "when"}


_TEXT_KEYS = ("biography", "hard_text", "text", "bio")


def _text_of(row: dict, where: Loc) -> str | None:
    """The biography of a row: the first of the biography columns present (it must be a string)."""
    for key in _TEXT_KEYS:
        if key in row:
            return expect_str(row[key], where, key)
    return None


def _bio_id(row: dict, where: Loc) -> str | None:
    value = row.get("bio_id")
    if value in (None, ""):
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return expect_str(value, where, "bio_id", nonempty=True).strip()


def _profession(value, where: Loc) -> str:
    """A Bias-in-Bios profession: an integer code (also as a string or an integral float) or a name."""
    if isinstance(value, bool) or value is None or not isinstance(value, (int, float, str)):
        raise SourceError(where, f"profession must be an integer code or a name, got {describe(value)}")
    if isinstance(value, float):
        if not value.is_integer():
            raise SourceError(where, f"profession code must be an integer, got {value!r}")
        value = int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value.strip())
    if isinstance(value, int):
        if not 0 <= value < len(BIAS_IN_BIOS_PROFESSIONS):
            raise SourceError(where, f"unknown Bias-in-Bios profession code {value}")
        return BIAS_IN_BIOS_PROFESSIONS[value]
    return value.strip().lower()


def read_biographies(path: str | os.PathLike) -> tuple[list[dict], dict[str, int]]:
    """Rows ``{bio_id, occupation, text, name, source}`` of a biography file, and drop counts.

    Every problem raises :class:`SourceError` with the file and line (parquet: row): text that is
    not UTF-8, a JSONL line that is not an object, a column of the wrong type (biography, occupation
    and name must be strings; ``bio_id`` a string or an integer), an unreadable parquet file. Two rows
    with the same ``bio_id`` are an error naming both lines, whether they conflict or are identical
    (:class:`~lm_eval_bias.datasets_builder.readers.KeyedRows`)."""
    path = Path(path)
    if not path.is_file():
        raise SourceError(path, "file does not exist")
    rows = read_table(path)
    if not rows:
        raise SourceError(path, "no rows")
    bias_in_bios = "profession" in rows[0][1] and "occupation" not in rows[0][1]
    dropped: dict[str, int] = {}
    out = []
    ids = KeyedRows("bio_id")
    for where, row in rows:
        text = _text_of(row, where)
        if text is None:
            raise SourceError(where, "missing biography column (biography, hard_text, text or bio)")
        if not text.strip():
            raise SourceError(where, "empty biography")
        name = expect_str(row.get("name"), where, "name", optional=True)
        if bias_in_bios:
            if "profession" not in row:
                raise SourceError(where, "missing profession column")
            profession = _profession(row["profession"], where)
            occupation = BIAS_IN_BIOS_TO_FOCUS.get(profession)
            if occupation is None:
                dropped[profession] = dropped.get(profession, 0) + 1
                continue
            source = "bias_in_bios"
        else:
            if "occupation" not in row:
                raise SourceError(where, "missing occupation column")
            occupation = expect_str(row["occupation"], where, "occupation").strip().lower()
            if not OCCUPATION_SLUG.fullmatch(occupation):
                raise SourceError(where, f"unknown occupation {row['occupation']!r}; expected one of {OCCUPATIONS} or "
                                         "another occupation named by a lower-case slug (as its FOCUS photo folder)")
            source = path.name
        given = _bio_id(row, where)
        bio_id = given or f"{occupation}-{where.number:06d}"
        if given is not None:
            ids.add(bio_id, where, {"occupation": occupation, "biography": text, "name": name})
        out.append({"bio_id": bio_id, "occupation": occupation, "text": text, "name": name, "source": source})
    seen: set[str] = set()
    for row in out:  # a given id may still equal a generated one
        if row["bio_id"] in seen:
            raise SourceError(path, f"duplicate bio_id {row['bio_id']!r}")
        seen.add(row["bio_id"])
    return out, dropped


def _features():
    import datasets

    return datasets.Features({
        "bio_id": datasets.Value("string"), "occupation": datasets.Value("string"),
        "biography": datasets.Value("string"), "original_biography": datasets.Value("string"),
        "normalization_changes": datasets.Value("string"), "n_changes": datasets.Value("int32"),
        "source": datasets.Value("string"),
    })


@dataclass(frozen=True)
class BiosBuildSummary:
    output: Path
    per_occupation: dict[str, int]
    dropped: dict[str, int]
    changes: list[tuple[str, int]]


BIOS_COLUMNS = {"bio_id": "identifier", "occupation": "FOCUS occupation", "biography": "normalized text used in prompts",
                "original_biography": "text as read from the source (NOT normalized: may contain names, URLs, e-mail "
                                      "addresses and handles)",
                "normalization_changes": "JSON list of changes", "n_changes": "number of changes",
                "source": "source file or bias_in_bios"}


BIOS_ACCESS_TERMS = (
    "These biographies come in part from Bias in Bios (De-Arteaga et al., 2019): texts about real, named people "
    "collected from the web; `original_biography` keeps names, URLs and e-mail addresses. Access is granted only for "
    "evaluating or studying social bias in AI models. By requesting access you agree not to identify, contact or "
    "profile the people described, not to redistribute the texts outside this gated repository, and to delete your "
    "copies if the repository owners ask you to."
)


def focus_bios_card(*, provenance: dict, build_command: str, notes: list[str]) -> DatasetCard:
    """The ``focus_bios`` dataset card (REFLECT Sec. 4.3, App. B.3; Bias in Bios)."""
    from lm_eval_bias.datasets_builder.focus import REFLECT_AUTHORS, REFLECT_BIBTEX, REFLECT_CITATION, REFLECT_PAPER, REFLECT_REPOSITORY

    return DatasetCard(
        name="focus_bios",
        pretty_name="FOCUS salary-task biographies (REFLECT)",
        summary=("Candidate biographies for the REFLECT salary-recommendation task, normalized to remove demographic "
                 "cues; the lm-eval-bias task pairs each with FOCUS portraits."),
        description=("Candidate biographies for the REFLECT salary recommendation task (Sec. 4.3), normalized to remove "
                     "demographic leakage: names anonymized, pronouns neutralized, URLs, e-mails and handles removed. "
                     "In the paper the model sees an occupation, one biography and one FOCUS portrait and answers with an "
                     "annual salary in USD; the authors used 50 biographies per occupation, from Bias in Bios "
                     "(De-Arteaga et al., 2019) for doctor, nurse, teacher and lawyer and generated with GPT-4o by "
                     "few-shot prompting for CEO and cook (Sec. 4.3, App. B.3). This builder reads Bias in Bios rows "
                     "or a CSV/JSONL of (occupation, biography), selects up to N per occupation with a seeded shuffle and "
                     "normalizes each with documented rules (the `source` column says where each row comes from)."),
        access_terms=BIOS_ACCESS_TERMS,
        license="other",
        license_note=("mixed and partly unknown: rows from Bias in Bios keep the terms of the Bias in Bios copy they "
                      "were read from; rows from a CSV/JSONL keep the terms of that file (the REFLECT authors' generated "
                      "CEO and cook biographies: licence not stated by the authors). Check both before redistribution."),
        license_link=REFLECT_REPOSITORY,
        columns=BIOS_COLUMNS,
        curated_by=(f"Selection and normalization: lm-eval-bias `datasets_builder`, following the REFLECT authors "
                    f"({REFLECT_AUTHORS}). Texts: Bias in Bios (De-Arteaga et al., 2019) and/or the source file given "
                    "to the builder."),
        repository=(f"{REFLECT_REPOSITORY} (REFLECT code; lm-eval-bias could not obtain it, nor the authors' "
                    "biography set). Bias in Bios: De-Arteaga et al. (2019)."),
        paper=(f"{REFLECT_PAPER}; De-Arteaga et al., *Bias in Bios: A Case Study of Semantic Representation Bias in a "
               "High-Stakes Setting*, FAccT 2019"),
        direct_use=("The text side of REFLECT's salary-recommendation task in lm-eval-bias: each biography is shown with "
                    "every FOCUS variant of an occupation, so salary gaps between the variants can be attributed to "
                    "the face, not to the text."),
        out_of_scope_use=("Screening, ranking or paying real candidates; training occupation or gender classifiers "
                          "(Bias in Bios was built to study exactly such harms); re-identifying the people the Bias in "
                          "Bios biographies describe; treating the normalized text as fully anonymous."),
        structure=("One row per biography: `biography` is the normalized text the task uses; `original_biography` the "
                   "text as read; `normalization_changes` lists every change (kind, original, replacement) so an audit "
                   "can check it."),
        curation_rationale=("The salary task varies only the portrait; the biography must carry no demographic cue of "
                            "its own, or a salary gap could come from the text (paper, Sec. 4.3, App. B.3)."),
        collection_and_processing=(
            "Bias in Bios rows: profession codes or names mapped attorney -> lawyer, physician -> doctor, nurse, "
            "teacher; other professions dropped and counted. Normalization is rule-based, no NER model: URLs, e-mail "
            "addresses and @handles removed; names (from a `name` column, after an honorific, or a sentence-initial "
            "two- or three-word capitalized run before a verb) replaced by 'the candidate'; he/she/him/his/her and "
            "reflexives made they/them/their with verb agreement; Mr./Mrs./Ms./Miss dropped; gendered kinship words "
            "(husband/wife, mother/father, ...) made neutral. The REFLECT authors audited their generated "
            "biographies with GPT-5.2 (5% estimated identifier leakage, App. B.3); this builder records every change "
            "instead and runs no such audit."),
        inputs=[
            SourceInput("Bias in Bios biographies (doctor, nurse, teacher, lawyer in the paper)",
                        "De-Arteaga et al. (2019): online biographies of real people collected from Common Crawl",
                        "the terms of the copy used; check before redistribution"),
            SourceInput("Generated biographies (CEO, cook in the paper) or any CSV/JSONL given to the builder",
                        "REFLECT authors (GPT-4o few-shot) or whoever wrote the file",
                        "not stated by the REFLECT authors; check before redistribution"),
            SourceInput("Normalization and selection", "lm-eval-bias `datasets_builder.focus_bios`", "as this card"),
        ],
        source_producers=("Bias in Bios: biographies written by or about real professionals and published online, "
                          "collected by De-Arteaga et al. (2019). Generated biographies: a language model prompted by "
                          "the REFLECT authors, or whoever produced the source file."),
        annotations=("`occupation` comes from the source (Bias in Bios profession labels or the file's occupation "
                     "column); no other annotation."),
        personal_and_sensitive=(
            "Yes, when rows come from Bias in Bios: those biographies describe real, named people. `biography` is "
            "normalized heuristically (names of unusual shape, a lone surname mid-sentence or other identifying details "
            "such as employers, places and awards can survive), and `original_biography` keeps the text as read, "
            "including names, URLs, e-mail addresses and handles. Gender cues are removed from `biography` by rule, "
            "not verified. Generated biographies describe no real person."),
        bias_risks_limitations=[
            "Rule-based normalization misses names and cues it has no rule for, and can mis-resolve 'her' "
            "(their/them); `normalization_changes` lets an audit check every biography.",
            "Occupations are four Bias in Bios professions mapped to FOCUS occupations plus generated texts for CEO "
            "and cook in the paper: two sources of different style and quality (App. B.3).",
            "Bias in Bios reflects who publishes professional biographies online and how they are written.",
            "`original_biography` makes the data personal data whenever Bias in Bios rows are present.",
        ],
        recommendations=[
            "A push is private unless `--public` is given, and then gated under the terms of access above (the "
            "biographies describe real people); consider dropping `original_biography` before any wider sharing.",
            "Audit `biography` for leftover identifiers (the `normalization_changes` column shows what was changed).",
            "Report salary results per occupation and per biography source.",
        ],
        citation_bibtex=REFLECT_BIBTEX + """
@inproceedings{dearteaga2019bias,
  title     = {Bias in Bios: A Case Study of Semantic Representation Bias in a High-Stakes Setting},
  author    = {De-Arteaga, Maria and Romanov, Alexey and Wallach, Hanna and Chayes, Jennifer and Borgs, Christian and
               Chouldechova, Alexandra and Geyik, Sahin and Kenthapadi, Krishnaram and Kalai, Adam Tauman},
  booktitle = {Proceedings of the Conference on Fairness, Accountability, and Transparency},
  pages     = {120--128},
  year      = {2019}
}""",
        citation_text=(REFLECT_CITATION + " De-Arteaga, M., Romanov, A., Wallach, H., Chayes, J., Borgs, C., "
                       "Chouldechova, A., Geyik, S., Kenthapadi, K., & Kalai, A. T. (2019). *Bias in Bios: A Case Study "
                       "of Semantic Representation Bias in a High-Stakes Setting.* Proceedings of the Conference on "
                       "Fairness, Accountability, and Transparency, 120-128."),
        task_categories=["question-answering"],
        tags=["social-bias", "fairness", "salary", "biographies", "anonymization", "reflect", "focus"],
        provenance=provenance,
        build_command=build_command,
        notes=notes,
    )


def build_focus_bios(source: str | os.PathLike, output: str | os.PathLike, *, per_occupation: int = 50,
                     seed: int = 0, overwrite: bool = False, strict: bool = False) -> BiosBuildSummary:
    """Read, normalize, select up to ``per_occupation`` biographies per occupation (seeded shuffle)
    and write the ``focus_bios`` dataset atomically. ``strict``: each of the paper's six occupations
    needs ``per_occupation`` biographies, else :class:`SourceError` naming the short ones (nothing
    written)."""
    if per_occupation < 1:
        raise SourceError(source, f"per_occupation must be >= 1, got {per_occupation}")
    rows, dropped = read_biographies(source)
    by_occ: dict[str, list[dict]] = {}
    for row in rows:
        by_occ.setdefault(row["occupation"], []).append(row)
    selected: list[dict] = []
    counts: dict[str, int] = {}
    for occupation in sorted(by_occ, key=lambda o: (o not in OCCUPATIONS, OCCUPATIONS.index(o) if o in OCCUPATIONS else 0, o)):
        pool = sorted(by_occ.get(occupation, []), key=lambda r: r["bio_id"])
        random.Random(f"{seed}/{occupation}").shuffle(pool)
        chosen = sorted(pool[:per_occupation], key=lambda r: r["bio_id"])
        if chosen:
            counts[occupation] = len(chosen)
        for row in chosen:
            text, changes = normalize_biography(row["text"], row.get("name"))
            selected.append({"bio_id": row["bio_id"], "occupation": occupation, "biography": text,
                             "original_biography": row["text"], "normalization_changes": json.dumps(changes),
                             "n_changes": len(changes), "source": row["source"]})
    notes = [f"{o}: {n} biographies (fewer than the paper's {per_occupation})" for o, n in counts.items() if n < per_occupation]
    if strict:
        short = [f"{o}: {counts.get(o, 0)}" for o in OCCUPATIONS if counts.get(o, 0) < per_occupation]
        if short:
            raise SourceError(source, f"incomplete source (--strict expects {per_occupation} biographies for each of "
                                      f"the paper's occupations): {'; '.join(short)}")
    notes += [f"dropped {n} Bias-in-Bios rows of profession {p}" for p, n in sorted(dropped.items())]
    from_bias_in_bios = sum(1 for r in selected if r["source"] == "bias_in_bios")
    card = focus_bios_card(
        provenance={"source file": Path(source).name, "biographies per occupation": json.dumps(counts),
                    "selection": f"seeded shuffle (seed {seed}), first {per_occupation} per occupation",
                    "rows from Bias in Bios": from_bias_in_bios,
                    "rows from the source file's own biographies": len(selected) - from_bias_in_bios},
        build_command=f"lm-eval-bias build focus-bios --source {Path(source).name} --output {Path(output).name} "
                      f"--per-occupation {per_occupation} --seed {seed}",
        notes=notes,
    )
    if not selected:
        raise SourceError(source, "no biography of a FOCUS occupation found")
    out = write_hub_dataset(output, selected, _features(), card, overwrite=overwrite)
    return BiosBuildSummary(out, counts, dropped, [(r["bio_id"], r["n_changes"]) for r in selected])
