"""Write datasets in Hugging Face Hub layout, atomically, and publish them. Shared by every builder.

Layout: ``OUT/README.md`` (dataset card in the layout of the Hub's dataset card template: YAML
metadata with ``pretty_name``, ``license``, ``language``, ``task_categories``, ``tags``,
``size_categories``, ``configs``, ``dataset_info`` and, for pictures of people, the ``extra_gated_*``
access terms; body with description, uses, structure, creation and provenance, personal and
sensitive information, bias and limitations, citation) and
``OUT/data/<split>-NNNNN-of-NNNNN.parquet`` shards, which ``datasets.load_dataset(OUT)`` loads exactly
as it loads the same repository from the Hub.

Atomicity: everything is written into a temporary sibling folder that is renamed into place only when
complete; on any error the temporary folder is removed and nothing is left at OUT.

Publishing (:func:`push_to_hub`): private by default; public only when asked, and then gated for
pictures of people. Cards are checked offline against the Hub's metadata spec
(:func:`card_metadata_problems`) before anything is written or uploaded.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import yaml

from lm_eval_bias.core.data import file_manifest, files_section
from lm_eval_bias.datasets_builder.readers import SourceError

BUILDER_VERSION = "1"
__all__ = ["BUILDER_VERSION", "GATED_FIELDS", "GATE_MODE", "DatasetCard", "PushRefused", "PushResult", "SourceError",
           "SourceInput", "ContentIndex", "ImageFacts", "card_metadata_problems", "check_card", "check_image",
           "check_variant_image", "check_variant_set", "image_facts", "has_person_images", "push_to_hub",
           "read_card_metadata", "size_category", "write_hub_dataset", "write_hub_dataset_configs"]



@dataclass(frozen=True)
class SourceInput:
    """One input of a built dataset, for the card's provenance table: what it is, where it comes from
    and under which licence (say plainly when a licence is not known)."""

    name: str
    source: str
    license: str


@dataclass
class DatasetCard:
    """What the dataset card says about a dataset.

    The card follows the Hub's dataset card template (``huggingface_hub/templates/datasetcard_template.md``):
    Dataset Description, Uses, Dataset Structure, Dataset Creation (Source Data, Annotations, Personal
    and Sensitive Information), Bias, Risks, and Limitations, Recommendations and Citation, with the
    YAML metadata of the Hub's dataset card spec. Each builder fills in its benchmark's content; a
    section left empty says so instead of inventing anything.

    ``person_images=True`` (FOCUS, VIGNETTE, Counterfactual VQA: pictures of people) needs
    ``access_terms``: they go into the card's ``extra_gated_prompt`` with the :data:`GATED_FIELDS`
    form, and :func:`push_to_hub` publishes such a dataset only gated."""

    name: str
    pretty_name: str
    description: str
    license: str
    columns: dict[str, str]
    provenance: dict[str, Any] = field(default_factory=dict)
    build_command: str = ""
    notes: list[str] = field(default_factory=list)
    summary: str = ""
    license_note: str = ""
    license_name: str = ""
    license_link: str = ""
    curated_by: str = ""
    repository: str = ""
    paper: str = ""
    direct_use: str = ""
    out_of_scope_use: str = ""
    structure: str = ""
    curation_rationale: str = ""
    collection_and_processing: str = ""
    source_producers: str = ""
    inputs: list[SourceInput] = field(default_factory=list)
    annotations: str = ""
    personal_and_sensitive: str = ""
    bias_risks_limitations: list[str] = field(default_factory=list)
    recommendations: list[str] = field(default_factory=list)
    citation_bibtex: str = ""
    citation_text: str = ""
    task_categories: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    language: list[str] = field(default_factory=lambda: ["en"])
    person_images: bool = False
    access_terms: str = ""


def check_image(path: Path, data: bytes, max_image_pixels: int, min_side: int, max_side: int) -> tuple[int, int]:
    """Decode ``data`` (the file at ``path``) fully and return its size; :class:`SourceError` for a
    broken file, a decompression bomb, a format other than JPEG/PNG or a side outside [min_side,
    max_side]."""
    return _checked(path, data, max_image_pixels, min_side, max_side, False)[0]


def check_variant_image(path: Path, data: bytes, max_image_pixels: int, min_side: int, max_side: int) -> "ImageFacts":
    """:func:`check_image` and :func:`image_facts` (its EXIF-orientation refusal included) in one decode:
    the :class:`ImageFacts` of a counterfactual variant."""
    facts = _checked(path, data, max_image_pixels, min_side, max_side, True)[1]
    _refuse_rotation(facts)
    return facts


def _checked(path: Path, data: bytes, max_image_pixels: int, min_side: int, max_side: int,
             with_facts: bool) -> tuple[tuple[int, int], "ImageFacts | None"]:
    import io
    import warnings

    from PIL import Image

    saved = Image.MAX_IMAGE_PIXELS
    Image.MAX_IMAGE_PIXELS = max_image_pixels
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as im:
                fmt = im.format
                im.verify()
            with Image.open(io.BytesIO(data)) as im:
                size = im.size
                if size[0] * size[1] > max_image_pixels:
                    raise SourceError(path, f"decompression bomb: {size[0]}x{size[1]} exceeds {max_image_pixels} pixels")
                im.load()
                facts = _facts(im, path, data) if with_facts else None
    except SourceError:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise SourceError(path, f"decompression bomb: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - PIL raises many types for broken files
        raise SourceError(path, f"image does not decode ({type(exc).__name__}: {exc})") from None
    finally:
        Image.MAX_IMAGE_PIXELS = saved
    if fmt not in ("JPEG", "PNG"):
        raise SourceError(path, f"expected a JPEG or PNG file, found {fmt}")
    if min(size) < min_side or max(size) > max_side:
        raise SourceError(path, f"size {size[0]}x{size[1]} outside the accepted range [{min_side}, {max_side}] px per side")
    return size, facts


# --- Counterfactual integrity: the variants of one photo / pair must differ only where intended ---------
#: EXIF tag of the orientation (1: as stored; 2-8: a viewer would mirror or rotate the pixels)
EXIF_ORIENTATION_TAG = 0x0112


@dataclass(frozen=True)
class ImageFacts:
    """What the integrity checks compare between images: file, mode, size, EXIF orientation, and
    digests of the file bytes and of the decoded pixels (equal pixels in two encodings are caught)."""

    path: Path
    mode: str
    size: tuple[int, int]
    orientation: int
    sha256: str
    pixels: str


def image_facts(path: Path, data: bytes) -> ImageFacts:
    """:class:`ImageFacts` of an image already accepted by :func:`check_image`; :class:`SourceError`
    for an EXIF orientation other than 1: the builders store the original bytes, and a viewer (or a
    model's processor) that applies the tag would see a rotated or mirrored variant while the others
    are upright, so the tag is refused rather than applied (the fix: rotate the pixels, e.g.
    ``PIL.ImageOps.exif_transpose``, and save without the tag)."""
    import io

    from PIL import Image

    with Image.open(io.BytesIO(data)) as im:
        im.load()
        facts = _facts(im, path, data)
    _refuse_rotation(facts)
    return facts


def _facts(im, path: Path, data: bytes) -> ImageFacts:
    """:class:`ImageFacts` of a loaded PIL image."""
    import hashlib

    try:
        orientation = int(im.getexif().get(EXIF_ORIENTATION_TAG, 1) or 1)
    except Exception:  # noqa: BLE001 - an unreadable EXIF block is not an orientation
        orientation = 1
    pixels = hashlib.sha256(f"{im.mode} {im.size}".encode() + im.tobytes()).hexdigest()
    return ImageFacts(Path(path), im.mode, im.size, orientation, hashlib.sha256(data).hexdigest(), pixels)


def _refuse_rotation(facts: ImageFacts) -> None:
    if facts.orientation != 1:
        raise SourceError(facts.path, f"EXIF orientation {facts.orientation} (the image is displayed rotated or "
                                      "mirrored): refused, the variants must be stored upright; apply it to the pixels "
                                      "(e.g. PIL.ImageOps.exif_transpose) and save without the tag")


def check_variant_set(images: list[ImageFacts], what: str) -> None:
    """The variants of one photo or pair (``what``: "template", "pair" ...): pairwise distinct content
    (file bytes and decoded pixels; the later file is named), one mode, one size (the file that
    differs from the most common mode and size is named, the first such file where counts tie)."""
    if not images:
        return
    from collections import Counter

    common = Counter((f.mode, f.size) for f in images).most_common(1)[0][0]
    first = next(f for f in images if (f.mode, f.size) == common)
    seen: dict[str, ImageFacts] = {}
    for facts in images:
        for digest in (facts.sha256, facts.pixels):
            other = seen.get(digest)
            if other is not None and other.path != facts.path:
                same = "the same file content" if digest == facts.sha256 else "the same pixels"
                raise SourceError(facts.path, f"{same} as {other.path.name} in the same {what}: a counterfactual "
                                              "variant must differ from the others (one copied over another?)")
        seen.setdefault(facts.sha256, facts)
        seen.setdefault(facts.pixels, facts)
        if facts.mode != first.mode:
            raise SourceError(facts.path, f"colour mode {facts.mode} differs from {first.path.name} ({first.mode}) in "
                                          f"the same {what}: convert every variant to one mode (e.g. RGB)")
        if facts.size != first.size:
            raise SourceError(facts.path, f"size {facts.size[0]}x{facts.size[1]} differs from {first.path.name} "
                                          f"({first.size[0]}x{first.size[1]}) in the same {what}")


class ContentIndex:
    """Images seen so far in one source: the same content (bytes or pixels) under two names is
    refused (a duplicated template folder, an image reused across pairs or identities)."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._seen: dict[str, tuple[ImageFacts, str]] = {}

    def add(self, facts: ImageFacts, label: str) -> None:
        for digest in (facts.sha256, facts.pixels):
            found = self._seen.get(digest)
            if found is not None and found[1] != label:
                raise SourceError(facts.path, f"same content as {found[0].path} ({found[1]}): {self.what}")
        self._seen.setdefault(facts.sha256, (facts, label))
        self._seen.setdefault(facts.pixels, (facts, label))


# --- The Hub's dataset card metadata spec, for checking cards offline --------------------------------
# ``DatasetCard.validate`` asks the Hub API; these lists let builders, ``push_to_hub`` and the tests
# check the same fields without the network. Sources: licence identifiers from the Hub docs
# (hub-docs ``docs/hub/repositories-licenses.md``); task categories from huggingface.js
# ``packages/tasks/src/pipelines.ts`` (PIPELINE_DATA); size categories as in ``datasets``'
# ``utils/resources/size_categories.json`` and ``huggingface_hub.DatasetCardData``; metadata keys
# from hub-docs ``datasetcard.md``, ``DatasetCardData`` and ``docs/hub/datasets-gated.md``.
HUB_LICENSES = frozenset("""
apache-2.0 mit openrail bigscience-openrail-m creativeml-openrail-m bigscience-bloom-rail-1.0 bigcode-openrail-m
afl-3.0 artistic-2.0 bsl-1.0 bsd bsd-2-clause bsd-3-clause bsd-3-clause-clear c-uda cc cc0-1.0 cc-by-2.0
cc-by-2.5 cc-by-3.0 cc-by-4.0 cc-by-sa-3.0 cc-by-sa-4.0 cc-by-nc-2.0 cc-by-nc-3.0 cc-by-nc-4.0 cc-by-nd-4.0
cc-by-nc-nd-3.0 cc-by-nc-nd-4.0 cc-by-nc-sa-2.0 cc-by-nc-sa-3.0 cc-by-nc-sa-4.0 cdla-sharing-1.0
cdla-permissive-1.0 cdla-permissive-2.0 wtfpl ecl-2.0 epl-1.0 epl-2.0 etalab-2.0 eupl-1.1 agpl-3.0 gfdl gpl
gpl-2.0 gpl-3.0 lgpl lgpl-2.1 lgpl-3.0 isc lppl-1.3c ms-pl mpl-2.0 odc-by odbl openrail++ osl-3.0 postgresql
ofl-1.1 ncsa unlicense zlib pddl lgpl-lr deepfloyd-if-license llama2 gemma unknown other
""".split())
HUB_SIZE_CATEGORIES = ("n<1K", "1K<n<10K", "10K<n<100K", "100K<n<1M", "1M<n<10M", "10M<n<100M", "100M<n<1B",
                       "1B<n<10B", "10B<n<100B", "100B<n<1T", "n>1T", "unknown", "other")
HUB_TASK_CATEGORIES = frozenset("""
biology text-classification token-classification table-question-answering question-answering
zero-shot-classification translation summarization feature-extraction text-generation text2text-generation
fill-mask sentence-similarity text-to-speech text-to-audio automatic-speech-recognition audio-to-audio
audio-classification audio-text-to-text voice-activity-detection depth-estimation image-classification
object-detection image-segmentation text-to-image image-to-text image-to-image image-to-video
unconditional-image-generation video-classification reinforcement-learning robotics tabular-classification
tabular-regression tabular-to-text table-to-text multiple-choice text-ranking text-retrieval
time-series-forecasting text-to-video image-text-to-text visual-question-answering document-question-answering
zero-shot-image-classification graph-ml mask-generation zero-shot-object-detection text-to-3d image-to-3d
image-feature-extraction video-text-to-text keypoint-detection visual-document-retrieval any-to-any other
""".split())
HUB_CARD_KEYS = frozenset("""
language license license_name license_link license_details tags annotations_creators language_creators
language_details pretty_name size_categories source_datasets task_categories task_ids paperswithcode_id
configs dataset_info extra_gated_fields extra_gated_prompt extra_gated_heading extra_gated_description
extra_gated_button_content extra_gated_eu_disallowed gated multilinguality config_names train-eval-index viewer
""".split())
HUB_GATED_FIELD_TYPES = frozenset({"text", "checkbox", "date_picker", "country", "select"})

#: The access-request form of a gated dataset of people's pictures (``extra_gated_fields``).
GATED_FIELDS: dict[str, Any] = {
    "Name": "text",
    "Affiliation": "text",
    "Intended use": {"type": "select",
                     "options": ["Evaluating or studying social bias in AI models", "Teaching about AI bias", "Other research"]},
    "I will use the images only to study bias in models, never to identify or profile the people shown": "checkbox",
    "I will not train face recognition or demographic classifiers on the images": "checkbox",
    "I will not redistribute the images outside this repository": "checkbox",
    "I have read the provenance, licence, and bias and limitations sections of this card": "checkbox",
}
#: How access requests to a gated dataset are approved (``HfApi.update_repo_settings(gated=...)``).
GATE_MODE = "manual"


def size_category(n_rows: int) -> str:
    """The Hub's ``size_categories`` value for ``n_rows`` examples."""
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
                        (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M"), (1_000_000_000, "100M<n<1B")):
        if n_rows < limit:
            return name
    return "1B<n<10B"


def card_metadata_problems(metadata: dict[str, Any]) -> list[str]:
    """What the Hub's dataset card metadata spec would reject in ``metadata`` (the card's YAML), checked
    offline; an empty list when it is fine."""
    problems = [f"unknown metadata key {k!r}" for k in metadata if k not in HUB_CARD_KEYS]

    def as_list(key: str) -> list:
        value = metadata.get(key)
        return [] if value is None else value if isinstance(value, list) else [value]

    for lic in as_list("license"):
        if lic not in HUB_LICENSES:
            problems.append(f"license {lic!r} is not a Hub licence identifier")
    if "other" in as_list("license") and not metadata.get("license_name"):
        problems.append("license: other needs license_name")
    if metadata.get("license_name") and not re.fullmatch(r"[a-z0-9][a-z0-9.-]*", str(metadata["license_name"])):
        problems.append(f"license_name {metadata['license_name']!r} must be a lower-case id like my-license-1.0")
    problems += [f"size_categories {v!r} is not one of {HUB_SIZE_CATEGORIES}"
                 for v in as_list("size_categories") if v not in HUB_SIZE_CATEGORIES]
    problems += [f"task_categories {v!r} is not a Hub task" for v in as_list("task_categories") if v not in HUB_TASK_CATEGORIES]
    problems += [f"language {v!r} is not an ISO 639 code" for v in as_list("language")
                 if not (isinstance(v, str) and re.fullmatch(r"[a-z]{2,3}", v))]
    problems += [f"tag {v!r} must be a non-empty string" for v in as_list("tags") if not (isinstance(v, str) and v.strip())]
    for key in ("pretty_name", "extra_gated_prompt", "extra_gated_heading", "extra_gated_button_content", "license_link"):
        if key in metadata and not (isinstance(metadata[key], str) and metadata[key].strip()):
            problems.append(f"{key} must be a non-empty string")
    fields = metadata.get("extra_gated_fields")
    if fields is not None:
        if not isinstance(fields, dict) or not fields:
            problems.append("extra_gated_fields must map field names to field types")
        else:
            for name, kind in fields.items():
                kind_name = kind.get("type") if isinstance(kind, dict) else kind
                if kind_name not in HUB_GATED_FIELD_TYPES:
                    problems.append(f"extra_gated_fields {name!r}: type {kind_name!r} is not one of {sorted(HUB_GATED_FIELD_TYPES)}")
                elif kind_name == "select" and not (isinstance(kind, dict) and kind.get("options")):
                    problems.append(f"extra_gated_fields {name!r}: a select needs options")
        if not metadata.get("extra_gated_prompt"):
            problems.append("extra_gated_fields without extra_gated_prompt (the terms users agree to)")
    for config in as_list("configs"):
        if not isinstance(config, dict) or not config.get("config_name") or not config.get("data_files"):
            problems.append(f"configs entry {config!r} needs config_name and data_files")
    return problems


def read_card_metadata(folder: str | os.PathLike) -> dict[str, Any]:
    """The YAML metadata of the dataset card ``folder/README.md`` (:class:`SourceError` when absent)."""
    readme = Path(folder) / "README.md"
    if not readme.is_file():
        raise SourceError(readme, "no dataset card: build the dataset first")
    text = readme.read_text(encoding="utf-8")
    lines = text.splitlines()
    if not lines or lines[0] != "---" or "---" not in lines[1:]:
        raise SourceError(readme, "dataset card has no YAML metadata block")
    end = lines[1:].index("---") + 1
    metadata = yaml.safe_load("\n".join(lines[1:end])) or {}
    if not isinstance(metadata, dict):
        raise SourceError(readme, "dataset card metadata is not a mapping")
    return metadata


def has_person_images(metadata: dict[str, Any]) -> bool:
    """Whether a card describes pictures of people: it carries access terms (``extra_gated_prompt``),
    or (fail-safe) any config has an image column."""
    if metadata.get("extra_gated_prompt"):
        return True

    def images(features) -> bool:
        if isinstance(features, dict):
            return features.get("dtype") == "image" or any(images(v) for v in features.values())
        if isinstance(features, list):
            return any(images(v) for v in features)
        return False

    infos = metadata.get("dataset_info") or []
    return images(infos if isinstance(infos, list) else [infos])


def _metadata(card: DatasetCard, configs: dict[str, tuple[Any, int]], split: str) -> dict[str, Any]:
    header: dict[str, Any] = {"pretty_name": card.pretty_name, "license": card.license}
    if card.license == "other":
        header["license_name"] = card.license_name or f"{card.name.replace('_', '-')}-upstream-terms"
        if card.license_link:
            header["license_link"] = card.license_link
    header["language"] = list(card.language)
    if card.task_categories:
        header["task_categories"] = list(card.task_categories)
    header["tags"] = list(dict.fromkeys(["lm-eval-bias", "bias-evaluation", *card.tags]))
    header["size_categories"] = [size_category(sum(n for _, n in configs.values()))]
    if card.person_images or card.access_terms:
        header["extra_gated_heading"] = f"Request access to {card.pretty_name}"
        header["extra_gated_prompt"] = card.access_terms
        header["extra_gated_fields"] = GATED_FIELDS
        header["extra_gated_button_content"] = "Agree to the terms and request access"
    header["configs"] = [{"config_name": name, "data_files": [{"split": split, "path": _shard_glob(name, split)}]}
                         for name in configs]
    header["dataset_info"] = [{"config_name": name, "features": features._to_yaml_list()}
                              for name, (features, _) in configs.items()]
    return header


def check_card(card: DatasetCard) -> None:
    """Raise :class:`SourceError` for a card the Hub would reject or that lacks required content
    (before anything is written)."""
    if card.license not in HUB_LICENSES:
        raise SourceError("--license", f"{card.license!r} is not a Hub licence identifier; use one listed at "
                                       "https://huggingface.co/docs/hub/repositories-licenses (e.g. cc-by-nc-4.0) or other")
    if card.person_images and not card.access_terms.strip():
        raise ValueError(f"{card.name}: a dataset of people's pictures needs access terms (DatasetCard.access_terms)")


def _feature_type(feature) -> str:
    dtype = getattr(feature, "dtype", None)
    if type(feature).__name__ == "Value" and dtype:
        return dtype
    if type(feature).__name__ in ("Sequence", "List", "LargeList"):
        inner = getattr(feature, "feature", None)
        return f"list of {_feature_type(inner)}" if inner is not None else "list"
    return type(feature).__name__.lower()


def _or_missing(text: str) -> str:
    return text.strip() or "Not documented by the upstream authors or by this builder."


def _card_text(card: DatasetCard, configs: dict[str, tuple[Any, int]], split: str) -> str:
    """Card for ``configs``: {config name: (features, number of rows)}, in the Hub template's layout."""
    header = _metadata(card, configs, split)
    problems = card_metadata_problems(header)
    if problems:
        raise ValueError(f"{card.name}: dataset card metadata rejected: {'; '.join(problems)}")
    total = sum(n for _, n in configs.values())
    license_line = f"`{card.license}`" + (f" — {card.license_note}" if card.license_note else "")
    lines = ["---", yaml.safe_dump(header, sort_keys=False, allow_unicode=True, width=1000).rstrip(), "---", "",
             f"# Dataset Card for {card.pretty_name}", "", card.summary or card.description, "",
             "## Dataset Details", "", "### Dataset Description", "", card.description, "",
             f"- **Curated by:** {_or_missing(card.curated_by)}",
             "- **Shared by:** built with lm-eval-bias `datasets_builder` "
             f"v{BUILDER_VERSION} by whoever ran the build command below",
             f"- **Language(s) (NLP):** {', '.join(card.language)}",
             f"- **License:** {license_line}", "",
             "### Dataset Sources", "",
             f"- **Repository:** {_or_missing(card.repository)}",
             f"- **Paper:** {_or_missing(card.paper)}", ""]
    if card.person_images or card.access_terms:
        lines += ["## Terms of Access", "", card.access_terms.strip(), "",
                  "`lm-eval-bias build ... --push-to-hub` uploads this dataset to a private repository; with "
                  f"`--public` the repository becomes public but gated ({GATE_MODE} approval): the Hub shows these "
                  "terms and the request form, and files are served only to approved users.", ""]
    lines += ["## Uses", "", "### Direct Use", "", _or_missing(card.direct_use), "",
              "### Out-of-Scope Use", "", _or_missing(card.out_of_scope_use), "",
              "## Dataset Structure", ""]
    if card.structure:
        lines += [card.structure, ""]
    lines += [f"One split, `{split}`, {total} rows in all.", ""]
    for name, (features, n_rows) in configs.items():
        lines += [f"### Config `{name}` ({n_rows} rows)", ""]
        lines += ["| column | type | description |", "|---|---|---|"]
        for column, feature in features.items():
            lines.append(f"| `{column}` | {_feature_type(feature)} | {card.columns.get(column, '')} |")
        lines.append("")
    lines += ["## Dataset Creation", "", "### Curation Rationale", "", _or_missing(card.curation_rationale), "",
              "### Source Data", "", "#### Data Collection and Processing", "", _or_missing(card.collection_and_processing),
              "", "This build:", ""]
    lines += [f"- **{k}**: {v}" for k, v in card.provenance.items()]
    lines += [f"- **builder**: lm-eval-bias `datasets_builder` v{BUILDER_VERSION}",
              f"- **built**: {_dt.datetime.now(_dt.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
              f"- **rows**: {total} ({split} split)", ""]
    if card.build_command:
        lines += ["```bash", card.build_command, "```", ""]
    if card.notes:
        lines += ["Build notes:", ""] + [f"- {n}" for n in card.notes] + [""]
    if card.inputs:
        lines += ["#### Inputs, sources and licences", "", "| input | source | licence |", "|---|---|---|"]
        lines += [f"| {i.name} | {i.source} | {i.license} |" for i in card.inputs]
        lines.append("")
    lines += ["#### Who are the source data producers?", "", _or_missing(card.source_producers), "",
              "### Annotations", "", _or_missing(card.annotations), "",
              "#### Personal and Sensitive Information", "", _or_missing(card.personal_and_sensitive), "",
              "## Bias, Risks, and Limitations", ""]
    lines += [f"- {item}" for item in card.bias_risks_limitations] or [_or_missing("")]
    lines += ["", "### Recommendations", ""]
    lines += [f"- {item}" for item in card.recommendations] or [_or_missing("")]
    lines += ["", "## Citation", ""]
    if card.citation_bibtex:
        lines += ["**BibTeX:**", "", "```bibtex", card.citation_bibtex.strip(), "```", ""]
    lines += [_or_missing(card.citation_text), "",
              "## License", "", license_line, "",
              "## Dataset Card Contact", "",
              "The owner of the Hub repository this card is published in (lm-eval-bias wrote the card; it does not know "
              "who pushed it). Questions about the upstream data go to its authors (see Citation).", ""]
    return "\n".join(lines)


def _shard_glob(config: str, split: str) -> str:
    return f"data/{split}-*" if config == "default" else f"data/{config}/{split}-*"


def write_hub_dataset(output: str | os.PathLike, rows: Iterable[dict[str, Any]] | Any, features, card: DatasetCard, *,
                      split: str = "test", overwrite: bool = False, max_shard_bytes: int = 256 * 2**20) -> Path:
    """Write ``rows`` (dicts, or a ``datasets.Dataset``) as a one-config Hub-layout dataset at ``output``."""
    return write_hub_dataset_configs(output, {"default": (rows, features)}, card, split=split, overwrite=overwrite,
                                     max_shard_bytes=max_shard_bytes)


def write_hub_dataset_configs(output: str | os.PathLike, configs: dict[str, tuple[Any, Any]], card: DatasetCard, *,
                              split: str = "test", overwrite: bool = False, max_shard_bytes: int = 256 * 2**20,
                              rows_per_row_group: dict[str, int] | None = None,
                              max_shard_rows: dict[str, int] | None = None) -> Path:
    """Write several configs ``{name: (rows, features)}`` as one Hub-layout dataset at ``output``
    (``load_dataset(output, name)`` loads a config). Atomic, as the module docstring says.

    ``rows_per_row_group`` sets the parquet row-group size of some configs (``datasets`` picks one
    otherwise); ``{"default": 1}`` makes every row readable on its own (VIGNETTE images).
    ``max_shard_rows`` caps the rows per shard of some configs, which keeps each shard's footer (one
    entry per row group) small enough to parse on demand."""
    import datasets

    check_card(card)
    output = Path(output).absolute()
    if output.exists() and not overwrite:
        raise SourceError(output, "output already exists (pass --overwrite to replace it)")
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{output.name}.tmp-", dir=output.parent))
    try:
        written: dict[str, tuple[Any, int]] = {}
        for name, (rows, features) in configs.items():
            ds = rows if isinstance(rows, datasets.Dataset) else datasets.Dataset.from_list(list(rows), features=features)
            # No min/max statistics for image columns: parquet would copy two images per row group
            # into the footer (a 25k-image VIGNETTE set had a 49 MB footer of 64-px images).
            with_statistics = [c for c, f in ds.features.items() if not isinstance(f, datasets.Image)]
            folder = tmp / Path(_shard_glob(name, split)).parent
            folder.mkdir(parents=True, exist_ok=True)
            n_shards = max(1, min(len(ds), -(-int(ds.data.nbytes) // max_shard_bytes)))
            if (max_shard_rows or {}).get(name):
                n_shards = max(n_shards, -(-len(ds) // max_shard_rows[name]))
            for k in range(n_shards):
                shard = ds.shard(num_shards=n_shards, index=k, contiguous=True)
                shard.to_parquet(str(folder / f"{split}-{k:05d}-of-{n_shards:05d}.parquet"),
                                 batch_size=(rows_per_row_group or {}).get(name), write_statistics=with_statistics)
            written[name] = (ds.features, len(ds))
        # the files' sha256 go into the card: tasks reading a Hub copy check them (core/data.py verify_dataset_folder)
        (tmp / "README.md").write_text(_card_text(card, written, split) + files_section(file_manifest(tmp)),
                                       encoding="utf-8")
        if output.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{output.name}.old-", dir=output.parent))
            os.rename(output, old / "previous")
            os.rename(tmp, output)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, output)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return output


@dataclass(frozen=True)
class PushResult:
    """What :func:`push_to_hub` did: the repository URL, its visibility and its gating."""

    url: str
    private: bool
    gated: str | bool  # "manual" / "auto" when access requests are on, else False
    person_images: bool

    def describe(self) -> str:
        if self.private:
            return "private (only you and members of your organisation can see it)"
        if self.gated:
            return (f"public, gated ({self.gated} approval): users must accept the access terms in the dataset card "
                    "before they can download files")
        return "public (anyone can download it)"


class PushRefused(SourceError):
    """A push that would expose data more widely than asked (nothing was uploaded)."""


def push_to_hub(folder: str | os.PathLike, repo_id: str, *, public: bool = False) -> PushResult:
    """Upload a built dataset folder to the Hub as a dataset repository.

    Private by default: the repository is created private (``create_repo(private=True)``) and the files
    are uploaded; an existing repository that is public is refused (make it private, or pass
    ``public=True``). With ``public=True``: a dataset of people's pictures (its card carries access
    terms, ``extra_gated_prompt``, or has an image column) is gated first
    (``update_repo_settings(gated="manual")``) and only then made public; a text-only dataset is made
    public ungated. An existing public repository is gated before the upload (and nothing is uploaded
    unless the Hub then reports it gated). Gating is read back from the Hub at the end; were it off, the
    repository is made private again and :class:`PushRefused` raised.

    The card is checked offline against the Hub's metadata spec first (:func:`card_metadata_problems`).
    The token comes from the standard environment (``HF_TOKEN`` or the login cache) through
    ``huggingface_hub`` itself; it is never passed, printed, logged or written here.
    """
    from huggingface_hub import HfApi

    folder = Path(folder)
    metadata = read_card_metadata(folder)
    problems = card_metadata_problems(metadata)
    if problems:
        raise SourceError(folder / "README.md", "dataset card metadata rejected: " + "; ".join(problems))
    person_images = has_person_images(metadata)
    if public and person_images and not metadata.get("extra_gated_prompt"):
        raise PushRefused(folder / "README.md", "pictures of people are published only gated, and the card states no "
                                                 "access terms (extra_gated_prompt); rebuild it with lm-eval-bias")
    gate = GATE_MODE if public and person_images else None

    api = HfApi()
    url = str(api.create_repo(repo_id, repo_type="dataset", private=True, exist_ok=True))
    info = api.repo_info(repo_id, repo_type="dataset")
    if not info.private:  # the repository existed already, public: create_repo leaves visibility alone
        if not public:
            raise PushRefused(repo_id, "the repository exists and is public; a push without --public uploads only to a "
                                       "private repository. Make it private on the Hub, or pass --public")
        if gate and not info.gated:
            api.update_repo_settings(repo_id, gated=gate, repo_type="dataset")  # gated before any file lands
            if not api.repo_info(repo_id, repo_type="dataset").gated:
                raise PushRefused(repo_id, "the repository is public and the Hub does not report it gated; nothing "
                                           "was uploaded")
    api.upload_folder(folder_path=str(folder), repo_id=repo_id, repo_type="dataset",
                      commit_message="Upload dataset built by lm-eval-bias")
    if public and info.private:
        if gate and not info.gated:
            api.update_repo_settings(repo_id, gated=gate, repo_type="dataset")  # gated while still private
        api.update_repo_settings(repo_id, private=False, repo_type="dataset")
    final = api.repo_info(repo_id, repo_type="dataset")
    if gate and not final.private and not final.gated:
        api.update_repo_settings(repo_id, private=True, repo_type="dataset")
        raise PushRefused(repo_id, "the Hub reports the repository as not gated; it was made private again")
    return PushResult(url, bool(final.private), final.gated or False, person_images)
