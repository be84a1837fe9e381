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


def resolve_dataset_location(name: str, hub_id: str | None = None) -> str:
    """Local folder or Hub id a task reads dataset ``name`` from.

    ``LM_EVAL_BIAS_DATA_DIR`` wins when set (the folder ``$LM_EVAL_BIAS_DATA_DIR/<name>`` must exist);
    otherwise ``hub_id`` or the default Hub id of ``name``.
    """
    data_dir = os.environ.get(DATA_DIR_ENV)
    if data_dir:
        path = Path(data_dir).expanduser() / name
        if not path.is_dir():
            raise DataSourceError(
                f"{DATA_DIR_ENV}={data_dir} is set but {path} does not exist; build it with "
                f"`lm-eval-bias build {name.replace('_', '-')} --output {path} ...`"
            )
        return str(path.resolve())
    if hub_id:
        return hub_id
    try:
        return DEFAULT_HUB_IDS[name]
    except KeyError:
        raise DataSourceError(f"unknown dataset name {name!r}; known: {sorted(DEFAULT_HUB_IDS)}") from None


_SPLIT_CACHE: dict[tuple[str, str], Any] = {}
_CACHE_LOCK = threading.Lock()


def load_split(name: str, hub_id: str | None = None, split: str = "test", config: str | None = None):
    """Load one split (of one config) of dataset ``name``, cached per process so tasks of one run
    share it. Image columns are returned undecoded (``{"bytes", "path"}``); decode through
    :class:`ImageStore`."""
    return _load_location(resolve_dataset_location(name, hub_id), split, config)


def load_location(location: str, split: str = "test", config: str | None = None):
    """Like :func:`load_split`, for a location recorded in a doc (folder or Hub id)."""
    return _load_location(location, split, config)


def _load_location(location: str, split: str, config: str | None = None):
    import datasets

    key = (location, split, config)
    with _CACHE_LOCK:
        if key not in _SPLIT_CACHE:
            try:
                if Path(location).is_dir():
                    ds = _read_local_split(Path(location), split, config)
                else:
                    ds = datasets.load_dataset(location, config, split=split)
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
    """:class:`PIL.Image.Image` subclass whose pixels live in its store's bounded cache.

    lm-eval keeps every request's images alive until the run ends, so decoded photos handed to it
    would all stay in memory (480 FOCUS photos at 1024 px: 1.4 GB). A pooled image is a normal RGB
    PIL image to every reader (``getpixel``, ``convert``, ``np.asarray``, ``save``, processors): its
    pixel core is fetched from the store on access and re-decoded from the original bytes when it
    was evicted. It is read-only; operations return ordinary images.
    """
    from PIL import Image

    class PooledImage(Image.Image):
        def __init__(self, store: "ImageStore", image_id: str, size: tuple[int, int]) -> None:
            self._pool = (store, image_id)
            super().__init__()
            self._mode = "RGB"
            self._size = size
            self.readonly = 1

        @property
        def _im(self):  # type: ignore[override]
            store, image_id = self._pool
            return store.core(image_id)

        @_im.setter
        def _im(self, value) -> None:  # Image.__init__ assigns None; pixels always come from the pool
            pass

        def __reduce__(self):
            return (Image.frombytes, ("RGB", self.size, self.tobytes()))

    return PooledImage


_POOLED = None


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
        self._decoded = BoundedLRU(max_decoded if max_decoded is not None
                                   else os.environ.get(DECODED_IMAGES_ENV, DEFAULT_DECODED_IMAGES))
        self.decodes = 0

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
        return self._decoded.get_or_create(image_id, lambda: self._decode(image_id))

    def _decode(self, image_id: str):
        from PIL import Image

        with Image.open(io.BytesIO(self._bytes(image_id))) as opened:
            core = opened.convert("RGB").im
        self.decodes += 1
        return core

    def get(self, image_id: str):
        """The RGB image ``image_id`` (the same object on every call; pixels decoded on demand)."""
        global _POOLED
        image = self._images.get(image_id)
        if image is not None:
            return image
        from PIL import Image

        with self._lock:
            image = self._images.get(image_id)
            if image is None:
                with Image.open(io.BytesIO(self._bytes(image_id))) as opened:
                    size = opened.size  # header only
                if _POOLED is None:
                    _POOLED = _pooled_image_class()
                image = _POOLED(self, image_id, size)
                # keyed for lm-eval's request cache by its encoded bytes: no decode, no PNG encode
                self._images[image_id] = tag_image(image, _cache_keys().bytes_key(self._bytes(image_id), "rgb"))
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
    cache_keys = _cache_keys()
    cache_keys.install_if_lm_eval_loaded()
    return cache_keys.tag_image(image, key)


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
