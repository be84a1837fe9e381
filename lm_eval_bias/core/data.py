"""Where task data comes from, and the shared, decode-on-demand image store.

Every task reads a builder's output (a Hugging Face dataset in Hub layout). By default that is a Hub
dataset id; with ``LM_EVAL_BIAS_DATA_DIR=/dir`` set, every task reads ``/dir/<dataset name>``
instead (dataset names: ``focus``, ``focus_bios``).

Docs never carry images. A FOCUS 2AFC scenario has 4,320 docs over 480 distinct photos; copying the
images into docs multiplies memory by 18 and makes lm-eval decode and hash every copy
(``../shared/notes/harness-facts.md``). Docs carry image ids instead, and :class:`ImageStore`
decodes each photo once, on first use, and hands the same PIL object to every doc that shows it.
"""

from __future__ import annotations

import io
import os
import re
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

DATA_DIR_ENV = "LM_EVAL_BIAS_DATA_DIR"

#: Default Hub dataset ids per dataset name. The FOCUS photos are the REFLECT authors'; build them
#: with ``lm-eval-bias build focus`` and publish them under your own id (``--push-to-hub``), then
#: point tasks at it with ``--metadata '{"hub_id": "<org>/<name>"}'`` or ``LM_EVAL_BIAS_DATA_DIR``.
DEFAULT_HUB_IDS: dict[str, str] = {
    "focus": "lm-eval-bias/focus",
    "focus_bios": "lm-eval-bias/focus_bios",
    "fact_or_fair": "lm-eval-bias/fact_or_fair",
    "cf_vqa": "lm-eval-bias/cf_vqa",
    "vignette": "lm-eval-bias/vignette",
}


class DataSourceError(RuntimeError):
    """A task's dataset could not be found or does not have the expected shape."""


#: The builder command of each dataset name (``<DIR>``: the folder ``LM_EVAL_BIAS_DATA_DIR`` names).
BUILD_COMMANDS: dict[str, str] = {
    "focus": "lm-eval-bias build focus --source <FOCUS photos folder> --output {output}",
    "focus_bios": "lm-eval-bias build focus-bios --source <biographies CSV/JSONL> --output {output}",
    "fact_or_fair": "lm-eval-bias build fact-or-fair --source <authors' files folder> --output {output}",
    "cf_vqa": "lm-eval-bias build cf-vqa --source <folder with manifest.jsonl and images> --output {output}",
    "vignette": "lm-eval-bias build vignette --source <images folder> --lists <authors' lists folder> "
                "--output {output}",
}
#: The ``--metadata`` key that points tasks at another Hub copy of a dataset.
HUB_ID_KEYS: dict[str, str] = {"focus_bios": "bios_hub_id"}
#: Seconds the one Hub check may take when HF_HUB_ETAG_TIMEOUT is not set (no retries either way).
HUB_CHECK_TIMEOUT = 5.0


def build_command(name: str, output: str | None = None) -> str:
    """The ``lm-eval-bias build ...`` command line that writes dataset ``name`` to ``output``."""
    output = output or f"<DIR>/{name}"
    template = BUILD_COMMANDS.get(name, "lm-eval-bias build <dataset> --source <source> --output {output}")
    return template.format(output=output)


def _defaults_text() -> str:
    return "default Hub ids: " + ", ".join(f"{n}={h}" for n, h in DEFAULT_HUB_IDS.items())


def _dataset_name_of(location: str) -> str | None:
    return next((n for n, h in DEFAULT_HUB_IDS.items() if h == location), None)


def missing_dataset_message(name: str | None, hub_id: str, reason: str) -> str:
    """One line saying that Hub dataset ``hub_id`` (dataset ``name``) could not be read and why, and
    how to build it locally (builder command, ``LM_EVAL_BIAS_DATA_DIR``) or point tasks elsewhere."""
    label = f"dataset {name!r}" if name else f"dataset {hub_id!r}"
    key = HUB_ID_KEYS.get(name or "", "hub_id")
    why = "" if os.environ.get(DATA_DIR_ENV) else f"{DATA_DIR_ENV} is not set, so "
    return (f"{label} not found: {why}the task read the Hub dataset {hub_id!r}, which {reason}. "
            f"Build it locally with `{build_command(name or '<dataset>')}` and set {DATA_DIR_ENV}=<DIR> "
            f"(or point the task at your own Hub copy with --metadata '{{\"{key}\": \"<org>/<name>\"}}'); "
            f"{_defaults_text()}")


def resolve_dataset_location(name: str, hub_id: str | None = None) -> str:
    """Local folder or Hub id a task reads dataset ``name`` from.

    ``LM_EVAL_BIAS_DATA_DIR`` wins when set (the folder ``$LM_EVAL_BIAS_DATA_DIR/<name>`` must exist);
    otherwise ``hub_id`` or the default Hub id of ``name``.
    """
    data_dir = os.environ.get(DATA_DIR_ENV)
    if data_dir:
        path = Path(data_dir).expanduser() / name
        if not path.is_dir():
            hub = hub_id or DEFAULT_HUB_IDS.get(name)
            instead = f"; or unset {DATA_DIR_ENV} to read the Hub dataset {hub!r} instead" if hub else ""
            raise DataSourceError(
                f"{DATA_DIR_ENV}={data_dir} is set but {path} does not exist; build it with "
                f"`{build_command(name, str(path))}`{instead}"
            )
        _READ[name] = str(path.resolve())
        return _READ[name]
    if not hub_id:
        try:
            hub_id = DEFAULT_HUB_IDS[name]
        except KeyError:
            raise DataSourceError(f"unknown dataset name {name!r}; known: {sorted(DEFAULT_HUB_IDS)}") from None
    repo_id, revision = split_revision(hub_id)
    _READ[name] = pinned_hub_location(repo_id, revision or _PINS.get(HUB_REVISION_KEYS.get(name, "hub_revision")), name)
    return _READ[name]


#: dataset name -> the location (folder, or Hub ``<id>@<commit>``) tasks of this process resolved it to
_READ: dict[str, str] = {}


def datasets_read() -> dict[str, dict[str, Any]]:
    """What the tasks of this process read, by dataset name: ``{"hub_id", "revision"}`` for a Hub copy
    (the commit it was resolved to) or ``{"folder"}`` for a local build. Recorded in every plugin task's
    ``metadata`` (``datasets``), so lm-eval's results JSON says which data the numbers come from."""
    read: dict[str, dict[str, Any]] = {}
    for name, location in sorted(_READ.items()):
        repo_id, revision = split_revision(location)
        read[name] = {"folder": location} if revision is None else {"hub_id": repo_id, "revision": revision}
    return read


# -- Hub copies: pinned to a commit, checked against the builder's card ---------------------------------
#: The ``--metadata`` key that pins the Hub revision of a dataset (default ``hub_revision``).
HUB_REVISION_KEYS: dict[str, str] = {"focus_bios": "bios_hub_revision"}
#: Revisions asked for with ``--metadata`` in this process (:func:`note_metadata`).
_PINS: dict[str, str] = {}
#: The heading of the card section that lists the data files' sha256 (written by the builders).
FILES_HEADING = "## Files (sha256)"
_RESOLVED: dict[tuple[str, str | None], str] = {}
_VERIFIED: dict[tuple[str, str], Path] = {}


def note_metadata(metadata: Any) -> None:
    """Remember the revision pins (``hub_revision``, ``bios_hub_revision``) of a run's ``--metadata``.

    Called with the metadata every ``TaskManager`` of the process is built with (lm-eval hands the same
    metadata to every task; :mod:`lm_eval_bias.core.autoload`), before tasks resolve their datasets."""
    _PINS.clear()
    if isinstance(metadata, dict):
        for key in {"hub_revision", *HUB_REVISION_KEYS.values()}:
            if isinstance(metadata.get(key), str) and metadata[key].strip():
                _PINS[key] = metadata[key].strip()


def split_revision(location: str) -> tuple[str, str | None]:
    """``"org/name@rev"`` -> ``("org/name", "rev")``; a location without ``@`` -> ``(location, None)``."""
    if "@" in location and not os.path.isdir(location):
        repo_id, _, revision = location.partition("@")
        return repo_id, revision or None
    return location, None


def pinned_hub_location(repo_id: str, revision: str | None = None, name: str | None = None) -> str:
    """``"<repo_id>@<commit sha>"``: the Hub dataset at ``revision`` (a branch, tag or commit; default the
    main branch), resolved once per process with ``HfApi().dataset_info`` (offline: the commit the
    local Hugging Face cache holds). Docs record this location, so every logged sample names the commit
    its data came from. :class:`DataSourceError` (one line) when the dataset cannot be reached."""
    check_hub_dataset(repo_id, name)
    key = (repo_id, revision)
    if key not in _RESOLVED:
        _RESOLVED[key] = f"{repo_id}@{_commit_of(repo_id, revision, name)}"
    return _RESOLVED[key]


def _commit_of(repo_id: str, revision: str | None, name: str | None) -> str:
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError

    if re.fullmatch(r"[0-9a-f]{40}", revision or ""):
        return str(revision)
    api = HfApi()
    if not _hub_offline():
        try:
            return str(api.dataset_info(repo_id, revision=revision, timeout=_hub_check_timeout()).sha)
        except HfHubHTTPError as exc:
            raise DataSourceError(f"Hub dataset {repo_id!r} has no revision {revision!r} ({_first_line(exc)})"
                                  if revision else missing_dataset_message(name, repo_id, f"could not be resolved "
                                                                                          f"to a commit ({_first_line(exc)})")) from None
    try:  # offline: the commit of the cached snapshot of that revision
        return Path(api.snapshot_download(repo_id, repo_type="dataset", revision=revision, local_files_only=True)).name
    except Exception as exc:  # noqa: BLE001 - not cached at that revision
        raise DataSourceError(f"Hub dataset {repo_id!r} at revision {revision or 'main'!r} is not in the local Hugging "
                              f"Face cache and HF_HUB_OFFLINE is set ({_first_line(exc)})") from None


def file_manifest(folder: str | os.PathLike) -> dict[str, str]:
    """{path relative to ``folder`` (POSIX): sha256} of every data file of a builder's output (its
    ``data/`` folder), sorted by path."""
    import hashlib

    root = Path(folder)
    files = {}
    for path in sorted((root / "data").rglob("*")):
        if path.is_file():
            digest = hashlib.sha256()
            with open(path, "rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
            files[path.relative_to(root).as_posix()] = digest.hexdigest()
    return files


def manifest_digest(files: dict[str, str]) -> str:
    """sha256 of a file manifest, as ``sha256sum`` lines (``<sha256>  <path>``) sorted by path: one
    string that identifies a dataset's content (the leaderboard pins it)."""
    import hashlib

    return hashlib.sha256("".join(f"{sha}  {path}\n" for path, sha in sorted(files.items())).encode()).hexdigest()


def files_section(files: dict[str, str]) -> str:
    """The dataset card's section listing the data files' sha256 (``sha256sum -c`` reads its lines)."""
    lines = "".join(f"{sha}  {path}\n" for path, sha in sorted(files.items()))
    return (f"\n{FILES_HEADING}\n\nEvery data file of this dataset, as `sha256sum` prints it; lm-eval-bias checks a "
            f"Hub copy against this list before a task reads it.\n\n```text\n{lines}```\n")


def card_file_manifest(folder: str | os.PathLike) -> dict[str, str] | None:
    """The file manifest the builder wrote into ``folder/README.md`` (None: no card, or no such section)."""
    readme = Path(folder) / "README.md"
    if not readme.is_file():
        return None
    text = readme.read_text(encoding="utf-8", errors="replace")
    found = re.search(re.escape(FILES_HEADING) + r"\n.*?```text\n(.*?)```", text, re.S)
    if not found:
        return None
    files = {}
    for line in found.group(1).splitlines():
        sha, _, path = line.partition("  ")
        if re.fullmatch(r"[0-9a-f]{64}", sha) and path:
            files[path] = sha
    return files


def verify_dataset_folder(folder: str | os.PathLike, label: str) -> dict[str, str]:
    """Check a downloaded dataset against its builder's card; returns the file manifest.

    Refused (:class:`DataSourceError`, one line) when the folder has no lm-eval-bias builder card
    (``README.md`` with the :data:`FILES_HEADING` section), when a listed file is missing or its
    sha256 differs, or when a data file is not listed."""
    listed = card_file_manifest(folder)
    if listed is None:
        raise DataSourceError(f"{label}: refused: no lm-eval-bias builder card (README.md with a {FILES_HEADING!r} "
                              "section); only datasets written by `lm-eval-bias build` are read from the Hub")
    found = file_manifest(folder)
    missing = sorted(set(listed) - set(found))
    changed = sorted(p for p in set(listed) & set(found) if listed[p] != found[p])
    extra = sorted(set(found) - set(listed))
    for what, paths in (("missing", missing), ("sha256 differs from the card", changed),
                        ("not listed in the card", extra)):
        if paths:
            raise DataSourceError(f"{label}: refused: {len(paths)} data file(s) {what}: {', '.join(paths[:3])}"
                                  f"{' ...' if len(paths) > 3 else ''}")
    return found


def verified_snapshot(repo_id: str, commit: str) -> Path:
    """The Hub dataset ``repo_id`` at ``commit``, downloaded (``HfApi().snapshot_download``, cached by
    huggingface_hub) and checked by :func:`verify_dataset_folder`, once per process."""
    key = (repo_id, commit)
    if key not in _VERIFIED:
        from huggingface_hub import HfApi

        try:
            folder = Path(HfApi().snapshot_download(repo_id, repo_type="dataset", revision=commit,
                                                    local_files_only=_hub_offline()))
        except Exception as exc:  # noqa: BLE001 - one line naming the dataset and the cause
            raise DataSourceError(f"Hub dataset {repo_id}@{commit}: could not download it ({_first_line(exc)})") from None
        verify_dataset_folder(folder, f"Hub dataset {repo_id}@{commit}")
        _VERIFIED[key] = folder
    return _VERIFIED[key]


def dataset_identity(location: str) -> dict[str, Any]:
    """What identifies the data a doc's ``location`` names: ``hub_id`` and ``revision`` (Hub copies) or
    ``folder``, and the ``manifest_sha256`` of its data files (:func:`manifest_digest`)."""
    repo_id, revision = split_revision(location)
    if revision:
        folder = verified_snapshot(repo_id, revision)
        return {"hub_id": repo_id, "revision": revision, "manifest_sha256": manifest_digest(file_manifest(folder))}
    if Path(location).is_dir():
        return {"folder": Path(location).resolve().name, "revision": None,
                "manifest_sha256": manifest_digest(file_manifest(location))}
    raise DataSourceError(f"{location}: neither a dataset folder nor a pinned Hub location (<id>@<commit>)")


def _datasets_setting(name: str):
    """A ``datasets.config`` setting when ``datasets`` is loaded, else None (importing it costs ~2 s)."""
    import sys

    config = sys.modules.get("datasets.config")
    return getattr(config, name, None) if config is not None else None


def _in_local_hf_cache(repo_id: str) -> bool:
    """Whether ``datasets`` (prepared) or ``huggingface_hub`` (downloaded) hold Hub dataset ``repo_id``
    on this machine, in the folders those libraries use (``HF_DATASETS_CACHE``, ``HF_HUB_CACHE``)."""
    import re

    from huggingface_hub import constants

    prepared = _datasets_setting("HF_DATASETS_CACHE") or os.getenv("HF_DATASETS_CACHE") or os.path.join(
        os.getenv("HF_HOME", os.path.join(os.getenv("XDG_CACHE_HOME", "~/.cache"), "huggingface")), "datasets")
    namespace, _, dataset = repo_id.rpartition("/")
    # datasets' folder name: <namespace>___<dataset in snake case> (datasets.naming.camelcase_to_snakecase)
    snake = re.sub(r"([a-z\d])([A-Z])", r"\1_\2", re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", dataset)).lower()
    folders = {"___".join(filter(None, [namespace, snake])), "___".join(filter(None, [namespace, dataset]))}
    if any((Path(prepared).expanduser() / folder).is_dir() for folder in folders):
        return True
    hub_folder = Path(constants.HF_HUB_CACHE).expanduser() / f"datasets--{repo_id.replace('/', '--')}"
    return (hub_folder / "snapshots").is_dir()


def _hub_offline() -> bool:
    """``HF_HUB_OFFLINE`` (or ``HF_DATASETS_OFFLINE``), as ``datasets`` and ``huggingface_hub`` read it."""
    from huggingface_hub import constants

    flags = (os.environ.get(v, "") for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"))
    return bool(_datasets_setting("HF_HUB_OFFLINE") or constants.HF_HUB_OFFLINE
                or any(f.strip().upper() in ("1", "ON", "YES", "TRUE") for f in flags))


def _hub_check_timeout() -> float:
    from huggingface_hub import constants

    return float(constants.HF_HUB_ETAG_TIMEOUT) if os.environ.get("HF_HUB_ETAG_TIMEOUT") else HUB_CHECK_TIMEOUT


_HUB_CHECKED: dict[tuple[str, bool], str | None] = {}


def check_hub_dataset(location: str, name: str | None = None) -> None:
    """Fail fast, naming the way out, when Hub dataset ``location`` cannot be read.

    ``datasets.load_dataset`` retries an unreachable Hub for ~25 s before failing. A copy in the local
    Hugging Face cache is left to ``datasets`` (it reads it offline). Otherwise: with ``HF_HUB_OFFLINE``
    set this raises at once; without it, one ``HfApi().dataset_info`` call, no retries, timeout
    ``HF_HUB_ETAG_TIMEOUT`` or :data:`HUB_CHECK_TIMEOUT` s, tells whether the dataset is there."""
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    location = split_revision(location)[0]
    name = name or _dataset_name_of(location)
    try:
        validate_repo_id(location)
    except HFValidationError:
        what = f"dataset {name!r}" if name else "dataset"
        raise DataSourceError(f"{what} not found: {location} is neither a folder nor a Hub dataset id; build it with "
                              f"`{build_command(name or '<dataset>', location)}`") from None
    key = (location, _hub_offline())
    if key not in _HUB_CHECKED:
        _HUB_CHECKED[key] = _hub_problem(location)
    if _HUB_CHECKED[key]:
        raise DataSourceError(missing_dataset_message(name, location, _HUB_CHECKED[key]))


def _hub_problem(location: str) -> str | None:
    from huggingface_hub.errors import HfHubHTTPError, RepositoryNotFoundError

    if _in_local_hf_cache(location):
        return None
    if _hub_offline():
        return "is not in the local Hugging Face cache, and HF_HUB_OFFLINE is set"
    from huggingface_hub import HfApi

    timeout = _hub_check_timeout()
    try:
        HfApi().dataset_info(location, timeout=timeout)
    except RepositoryNotFoundError:
        return ("does not exist on the Hub or is private (for a private copy, log in with `hf auth login` or set "
                "HF_TOKEN)")
    except HfHubHTTPError as exc:  # 401 with a bad token, 5xx ...
        return f"is not in the local Hugging Face cache, and the Hub refused the check ({_first_line(exc)})"
    except Exception as exc:  # noqa: BLE001 - no route, DNS, timeout, proxy: the Hub is not reachable now
        return (f"is not in the local Hugging Face cache, and the Hub could not be reached ({_first_line(exc)}; "
                f"one try, {timeout:g} s timeout)")
    return None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


_SPLIT_CACHE: dict[tuple[str, str], Any] = {}
_CACHE_LOCK = threading.Lock()


def load_split(name: str, hub_id: str | None = None, split: str = "test", config: str | None = None):
    """Load one split (of one config) of dataset ``name``, cached per process so tasks of one run
    share it. Image columns are returned undecoded (``{"bytes", "path"}``); decode through
    :class:`ImageStore`."""
    return _load_location(resolve_dataset_location(name, hub_id), split, config, name=name)


def load_location(location: str, split: str = "test", config: str | None = None):
    """Like :func:`load_split`, for a location recorded in a doc (folder or Hub id)."""
    return _load_location(location, split, config)


def _load_location(location: str, split: str, config: str | None = None, name: str | None = None):
    key = (location, split, config)
    if key not in _SPLIT_CACHE and not Path(location).is_dir():
        repo_id, revision = split_revision(location)
        location = pinned_hub_location(repo_id, revision, name)  # a missing dataset fails fast, before `datasets`
    import datasets

    with _CACHE_LOCK:
        if key not in _SPLIT_CACHE:
            try:
                if Path(location).is_dir():
                    ds = _read_local_split(Path(location), split, config)
                else:  # a Hub copy: its builder's files, checked against the card, read like a local build
                    ds = _read_local_split(verified_snapshot(*split_revision(location)), split, config)
            except DataSourceError:
                raise
            except Exception as exc:  # noqa: BLE001 - re-raised with the location that failed
                raise DataSourceError(f"could not load dataset from {location}: {exc}") from exc
            for column, feature in ds.features.items():
                if isinstance(feature, datasets.Image):
                    ds = ds.cast_column(column, datasets.Image(decode=False))
            _SPLIT_CACHE[key] = ds
        return _SPLIT_CACHE[key]


def _read_local_split(folder: Path, split: str, config: str | None = None):
    """A builder's Hub-layout folder, read straight from its parquet shards.

    Not through ``datasets.load_dataset``: its cache key for local folders can collide between two
    folders of the same name, so a rebuilt dataset could be served stale from ``~/.cache``.
    """
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    data_dir = folder / "data" / config if config and config != "default" else folder / "data"
    shards = sorted(data_dir.glob(f"{split}-*.parquet"))
    if not shards:
        raise DataSourceError(f"{data_dir}: no {split}-*.parquet shards (not a builder output folder?)")
    table = pa.concat_tables([pq.read_table(shard) for shard in shards])
    features = datasets.Features.from_arrow_schema(table.schema)
    return datasets.Dataset(table, info=datasets.DatasetInfo(features=features))


def require_columns(ds, columns: tuple[str, ...], name: str) -> None:
    """Fail fast, naming the dataset and the missing columns."""
    missing = [c for c in columns if c not in ds.column_names]
    if missing:
        raise DataSourceError(f"dataset {name!r} lacks columns {missing}; has {ds.column_names}")


class BoundedLRU:
    """Thread-safe cache of the ``capacity`` most recently used values, each created on its first
    miss by the caller's factory (decoded photos, opened parquet shards). The factory runs under the
    lock, so concurrent readers of one key create its value once."""

    def __init__(self, capacity: int) -> None:
        self.capacity = max(1, int(capacity))
        self._items: "OrderedDict[Any, Any]" = OrderedDict()
        self._lock = threading.RLock()

    def __len__(self) -> int:
        return len(self._items)

    def get_or_create(self, key: Any, create) -> Any:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
            value = self._items[key] = create()
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)
            return value


#: How many decoded photos a store keeps (LRU); override with LM_EVAL_BIAS_DECODED_IMAGES.
DECODED_IMAGES_ENV = "LM_EVAL_BIAS_DECODED_IMAGES"
DEFAULT_DECODED_IMAGES = 64


def _pooled_image_class():
    """:class:`PIL.Image.Image` subclass whose pixels live in a bounded pool, made again on demand.

    lm-eval keeps every request's images alive until the run ends, so pixels handed to it would all
    stay in memory (480 FOCUS photos at 1024 px: 1.4 GB; one composed VIGNETTE pair per ~6 docs:
    ~1 MB a pair). A pooled image is a normal PIL image to every reader (``getpixel``, ``convert``,
    ``np.asarray``, ``save``, processors) but holds no pixels itself: its pixel core is fetched from
    its pool (``pool.core(key)``: an :class:`ImageStore` decoding photos, a :class:`PixelPool`
    composing VIGNETTE pairs) on every access and made again when the pool evicted it.

    Read-only and shared: operations return ordinary images; an in-place change (``paste``,
    ``putpixel``, ``thumbnail``, ...) makes PIL copy the core first, and from then on this one image
    owns its pixels (the pool's stay untouched) and loses its read-only flag, which voids its
    request-cache tag. ``close()`` leaves a pooled image usable (other docs share it). Pickling and
    ``copy.deepcopy`` give an image with the same pixels: a new pooled image when the pool can say how
    to make one (``pool.rebuild(key)``: VIGNETTE pairs), else a plain image of the pixels;
    ``copy.copy`` / ``.copy()`` give a plain image.
    """
    from PIL import Image
    from PIL._util import DeferredError

    class PooledImage(Image.Image):
        def __init__(self, pool, key, size: tuple[int, int], mode: str = "RGB") -> None:
            self._pool = (pool, key)
            super().__init__()
            self._mode = mode
            self._size = tuple(size)
            self.readonly = 1

        @property
        def _im(self):  # type: ignore[override]
            own = self.__dict__.get("_im")
            if own is not None:
                return own
            pool, key = self._pool
            return pool.core(key)

        @_im.setter
        def _im(self, value) -> None:
            # Image.__init__ assigns None and close() a DeferredError: the shared pixels stay. Any other
            # core is this image's own from now on (PIL copied it for an in-place change).
            if value is None or isinstance(value, DeferredError):
                return
            self.__dict__["_im"] = value
            self._readonly = 0

        @property
        def readonly(self) -> int:  # type: ignore[override]  (Image's would fetch the pixels)
            own = self.__dict__.get("_im")
            return (own is not None and own.readonly) or self._readonly

        @readonly.setter
        def readonly(self, value: int) -> None:
            self._readonly = value

        @property
        def pooled(self) -> bool:
            """True while the pixels come from the pool (no in-place change made its own copy)."""
            return self.__dict__.get("_im") is None

        def __reduce__(self):
            pool, key = self._pool
            rebuild = getattr(pool, "rebuild", None)
            if rebuild is not None and self.pooled:
                return rebuild(key)
            return (Image.frombytes, (self.mode, self.size, self.tobytes()))

    return PooledImage


_POOLED = None


def pooled_image_class():
    """The :func:`pooled image <_pooled_image_class>` class (created once, on first use)."""
    global _POOLED
    if _POOLED is None:
        _POOLED = _pooled_image_class()
    return _POOLED


class PixelPool:
    """Pixel cores made on demand by ``create(key)`` (an RGB ``PIL.Image.Image``) and kept in an LRU
    of ``capacity``: the backing store of :func:`pooled images <_pooled_image_class>`.

    ``image(key, size, cache_key)`` hands out a pooled image of ``key`` that holds no pixels, tagged
    for lm-eval's request cache with ``cache_key`` (which must determine the pixels, and is computed
    without making them). ``rebuild`` (optional, ``key -> (callable, args)``) says how a pickled
    image is made again in another process (lazily); without it, pickles carry the pixels.
    ``created`` counts cores made; ``len(pool)`` is how many are alive in the cache."""

    def __init__(self, create, capacity: int, rebuild=None) -> None:
        self._create = create
        self._cores = BoundedLRU(capacity)
        self.rebuild = rebuild
        self.created = 0

    @property
    def capacity(self) -> int:
        return self._cores.capacity

    def __len__(self) -> int:
        return len(self._cores)

    def core(self, key: Any):
        """The pixel core of ``key`` (LRU-cached; made on a miss)."""
        return self._cores.get_or_create(key, lambda: self._make(key))

    def _make(self, key: Any):
        image = self._create(key)
        if image.mode != "RGB":
            image = image.convert("RGB")
        self.created += 1
        return image.im

    def image(self, key: Any, size: tuple[int, int], cache_key: str):
        """A new pooled RGB image of ``key`` (``size`` must be the size ``create(key)`` makes)."""
        return tag_image(pooled_image_class()(self, key, size), cache_key)


class ImageStore:
    """Encoded images by id, handed out as shared, lazily decoded RGB images.

    ``get`` returns the same :func:`pooled <_pooled_image_class>` image object for an id on every
    call; its pixels are decoded on first access and kept in an LRU cache of ``max_decoded`` photos
    (default 64, env ``LM_EVAL_BIAS_DECODED_IMAGES``), so memory stays bounded however many docs
    show them. Docs are ordered so that consecutive requests reuse the same few photos.
    """

    def __init__(self, encoded: dict[str, bytes], source: str = "", max_decoded: int | None = None) -> None:
        self._encoded = encoded
        self._images: dict[str, Any] = {}
        self._lock = threading.RLock()
        self.source = source
        self._pixels = PixelPool(self._decode, max_decoded if max_decoded is not None
                                 else os.environ.get(DECODED_IMAGES_ENV, DEFAULT_DECODED_IMAGES))

    @property
    def decodes(self) -> int:
        """How many photos were decoded (again, after an eviction, counts)."""
        return self._pixels.created

    @classmethod
    def from_dataset(cls, ds, id_column: str = "image_id", image_column: str = "image", source: str = ""):
        ids = ds[id_column]
        images = ds[image_column]
        encoded: dict[str, bytes] = {}
        for image_id, image in zip(ids, images):
            if image_id in encoded:
                raise DataSourceError(f"{source}: duplicate {id_column} {image_id!r}")
            data = image.get("bytes") if isinstance(image, dict) else None
            if not data:
                path = image.get("path") if isinstance(image, dict) else None
                if not path or not os.path.isfile(path):
                    raise DataSourceError(f"{source}: image {image_id!r} has no bytes and no readable path")
                data = Path(path).read_bytes()
            encoded[image_id] = data
        return cls(encoded, source=source)

    def __contains__(self, image_id: str) -> bool:
        return image_id in self._encoded

    def __len__(self) -> int:
        return len(self._encoded)

    def _bytes(self, image_id: str) -> bytes:
        try:
            return self._encoded[image_id]
        except KeyError:
            raise DataSourceError(f"{self.source}: no image with id {image_id!r}") from None

    def core(self, image_id: str):
        """The decoded RGB pixel core of ``image_id`` (LRU-cached)."""
        return self._pixels.core(image_id)

    def _decode(self, image_id: str):
        from PIL import Image

        with Image.open(io.BytesIO(self._bytes(image_id))) as opened:
            return opened.convert("RGB")

    def get(self, image_id: str):
        """The RGB image ``image_id`` (the same object on every call; pixels decoded on demand)."""
        image = self._images.get(image_id)
        if image is not None:
            return image
        from PIL import Image

        with self._lock:
            image = self._images.get(image_id)
            if image is None:
                with Image.open(io.BytesIO(self._bytes(image_id))) as opened:
                    size = opened.size  # header only
                # keyed for lm-eval's request cache by its encoded bytes: no decode, no PNG encode
                image = tag_image(pooled_image_class()(self, image_id, size),
                                  _cache_keys().bytes_key(self._bytes(image_id), "rgb"))
                self._images[image_id] = image
        return image


def _cache_keys():
    from lm_eval_bias.backends import cache_keys

    return cache_keys


def tag_image(image, key: str | None = None):
    """``image`` (returned) with a content key for lm-eval's request cache, marked read-only.

    Every image the plugin hands to lm-eval goes through here: ``key`` must determine the pixels
    (the store passes a hash of the encoded bytes, with how they are decoded); None hashes the
    pixels now, once. lm-eval then keys cached requests by this key instead of PNG-encoding the
    image per request; an in-place change voids the key (:mod:`lm_eval_bias.backends.cache_keys`).
    Inside an lm-eval process this also installs that keying, for plain ``lm_eval`` runs."""
    from lm_eval_bias.backends import install_request_patches_if_lm_eval_loaded

    install_request_patches_if_lm_eval_loaded()
    return _cache_keys().tag_image(image, key)


_STORES: dict[tuple[str, str], ImageStore] = {}


def image_store(name: str, hub_id: str | None = None, split: str = "test") -> ImageStore:
    """The process-wide :class:`ImageStore` of dataset ``name``."""
    return image_store_at(resolve_dataset_location(name, hub_id), split)


def image_store_at(location: str, split: str = "test") -> ImageStore:
    """The process-wide :class:`ImageStore` of the dataset at ``location`` (folder or Hub id).

    Docs record the location their images come from, so ``doc_to_image`` needs nothing else.
    """
    key = (location, split)
    with _CACHE_LOCK:
        store = _STORES.get(key)
    if store is None:
        ds = _load_location(location, split)
        require_columns(ds, ("image_id", "image"), location)
        store = ImageStore.from_dataset(ds, source=location)
        with _CACHE_LOCK:
            store = _STORES.setdefault(key, store)
    return store
