"""VIGNETTE pairs: which pairs to ask (a seeded, stratified sampler) and how a pair image is drawn.

The paper (Sec. 3, "Paired Images") places two people side by side in one image; upstream merged the
two generated images side by side and resized the result to 672x336. The space is 30M+ pairs, so
nothing here materializes it: :func:`sample_pairs` is a generator over :class:`PairSpec` (a few
strings each), and :class:`PairImages` hands lm-eval one *pooled* image per pair that holds no
pixels: :func:`compose_pair` draws them when the model reads the image, from individual images
decoded through a small LRU cache (:class:`IndividualImages`), and keeps the last few pairs' pixels
in a bounded pool (:class:`lm_eval_bias.core.data.PixelPool`). lm-eval keeps every request's images until
the run ends, so memory would otherwise grow by ~1 MB a pair; this way it depends on the cache sizes,
not on the number of pairs (``scripts/benchmark_vignette.py`` runs the task at 2k-100k docs).

Pairing types (Table 8), always within one gender and one bias dimension, as upstream:

- ``identity``: two identities, same activity (Identity Contrast);
- ``activity``: one identity, two activities (Activity Contrast);
- ``identity_activity``: two identities, two different activities (Identity-Activity Contrast);
- ``portrait``: two identities, no-activity portraits (stereotyping paradigm).

Sampling (documented default budgets in ``lm_eval_bias.vignette.tasks``): strata are gender x
dimension; inside a stratum every identity that has the needed images is an *anchor*
``per_identity`` times; its partner is drawn uniformly (seeded) among the stratum's other identities
with the needed images; activities are dealt from one seeded deck per gender that is reshuffled each
time it runs out, so every activity is used before any repeats and every activity is covered once
there are at least as many draws as activities; the anchor is placed left on even and right on odd
draws of its stratum, so every identity appears on both sides.

Three sampling modes (``PAIR_SAMPLING``; task option ``pair_sampling``):

- ``with_replacement``: as above; the same two images can meet twice (each draw has its own index);
- ``without_replacement``: as above, but a pair of images (unordered) is never drawn twice in a
  sample: an anchor's partner and activities are drawn among those that make a new pair, and a draw
  that cannot make one is skipped (so a budget larger than the stratum allows yields fewer pairs);
- ``exhaustive``: every pair of the design exactly once, as the authors' ``merge.py`` enumerates them
  (``itertools.combinations`` of a gender x dimension folder's images with the pairing type's
  condition): :func:`all_pairs`. The left image is the one that sorts first (descriptor, then
  activity), as in the authors' released file names (``buddhist-man--christian-man.png``).
  ``per_identity`` and ``seed`` are ignored.
"""

from __future__ import annotations

import hashlib
import io
import os
import random
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any, Iterator

from lm_eval_bias.core.data import BoundedLRU

PAIR_KINDS = ("identity", "activity", "identity_activity", "portrait")
#: Pair sampling modes (module docstring); ``with_replacement`` is the original sampler.
PAIR_SAMPLING = ("with_replacement", "without_replacement", "exhaustive")
PAIR_SIZE = (672, 336)
#: Version of the pixels :meth:`PairImages.compose` draws from two individual images (half decoding,
#: scaling, :func:`compose_pair`); part of every pair image's request-cache key: bump it when they change.
COMPOSE_VERSION = 2  # 2: the seam is cross-faded as the authors' merge.py does (compose_pair)
#: How many composed pairs' pixels are kept (LRU); override with LM_EVAL_BIAS_COMPOSED_PAIRS.
COMPOSED_PAIRS_ENV = "LM_EVAL_BIAS_COMPOSED_PAIRS"
DEFAULT_COMPOSED_PAIRS = 16


@dataclass(frozen=True)
class Person:
    descriptor: str
    activity: str | None  # activity name as in the lists, None for a portrait


@dataclass(frozen=True)
class PairSpec:
    kind: str
    gender: str
    dimension: str
    left: Person
    right: Person
    index: int  # position in the sampler's output (unique per sample)

    @property
    def pair_id(self) -> str:
        def part(p: Person) -> str:
            return p.descriptor + (f"@{p.activity}" if p.activity else "")

        return f"{self.kind}:{self.index}:{self.gender}:{part(self.left)}|{part(self.right)}"


class Catalog:
    """Which individual images exist: gender -> dimension -> descriptor -> activities (and portraits)."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        """``rows``: one per image with ``gender``, ``descriptor``, ``dimension``, ``activity`` (None or
        "" for a portrait)."""
        self.activities: dict[tuple[str, str], set[str]] = {}
        self.portraits: set[tuple[str, str]] = set()
        self.dimension: dict[tuple[str, str], str] = {}
        for r in rows:
            key = (r["gender"], r["descriptor"])
            self.dimension[key] = r["dimension"]
            if r.get("activity"):
                self.activities.setdefault(key, set()).add(r["activity"])
            else:
                self.portraits.add(key)

    def strata(self) -> dict[tuple[str, str], list[str]]:
        """(gender, dimension) -> sorted descriptors."""
        out: dict[tuple[str, str], list[str]] = {}
        for (gender, descriptor), dimension in self.dimension.items():
            out.setdefault((gender, dimension), []).append(descriptor)
        return {k: sorted(v) for k, v in sorted(out.items())}

    def all_activities(self, gender: str) -> list[str]:
        return sorted({a for (g, _), acts in self.activities.items() if g == gender for a in acts})


class _Deck:
    """Activities dealt without repetition until exhausted, then reshuffled (seeded)."""

    def __init__(self, items: list[str], rng: random.Random) -> None:
        self.items, self.rng, self.queue = list(items), rng, []

    def draw(self, allowed) -> str | None:
        """Next activity satisfying ``allowed`` (skipped ones stay in the deck for later draws)."""
        for _ in range(2):
            for k, item in enumerate(self.queue):
                if allowed(item):
                    return self.queue.pop(k)
            refill = self.items[:]
            self.rng.shuffle(refill)
            self.queue.extend(refill)
        return None


def sample_pairs(catalog: Catalog, kind: str, per_identity: int, seed: int = 0,
                 activities: set[str] | None = None, sampling: str = "with_replacement") -> Iterator[PairSpec]:
    """Seeded, stratified pair sampler (module docstring). ``activities`` restricts the activities
    used (e.g. those with decision questions); ``sampling`` is one of :data:`PAIR_SAMPLING`.
    Deterministic for a catalog, kind, budget, seed and mode."""
    if kind not in PAIR_KINDS:
        raise ValueError(f"kind must be one of {PAIR_KINDS}, got {kind!r}")
    if sampling not in PAIR_SAMPLING:
        raise ValueError(f"pair sampling must be one of {PAIR_SAMPLING}, got {sampling!r}")
    if sampling == "exhaustive":
        yield from all_pairs(catalog, kind, activities)
        return
    fresh = sampling == "without_replacement"
    index = 0
    decks: dict[str, _Deck] = {}
    for (gender, dimension), descriptors in catalog.strata().items():
        pool = catalog.all_activities(gender)
        if activities is not None:
            pool = [a for a in pool if a in activities]
        deck = decks.setdefault(gender, _Deck(pool, random.Random(f"{seed}|{kind}|deck|{gender}")))
        used: set[frozenset] | None = set() if fresh else None

        def acts(d: str) -> set[str]:
            found = catalog.activities.get((gender, d), set())
            return found if activities is None else found & activities

        usable = _usable(catalog, kind, gender, descriptors, acts)
        if kind != "activity" and len(usable) < 2:
            continue
        draw_in_stratum = 0
        for anchor in usable:
            rng = random.Random(f"{seed}|{kind}|{gender}|{anchor}")
            for _ in range(per_identity):
                spec = _draw(kind, anchor, usable, acts, deck, rng, used)
                if spec is None:
                    continue
                a, b = spec
                if used is not None:
                    used.add(_pair_key(a, b))
                left, right = (a, b) if draw_in_stratum % 2 == 0 else (b, a)
                draw_in_stratum += 1
                yield PairSpec(kind, gender, dimension, left, right, index)
                index += 1


def _usable(catalog: Catalog, kind: str, gender: str, descriptors: list[str], acts) -> list[str]:
    """The stratum's descriptors that have the images ``kind`` needs (sorted)."""
    if kind == "portrait":
        return [d for d in descriptors if (gender, d) in catalog.portraits]
    return [d for d in descriptors if acts(d)]


def _pair_key(a: Person, b: Person) -> frozenset:
    """The unordered pair of images (left/right order does not make another pair)."""
    return frozenset(((a.descriptor, a.activity), (b.descriptor, b.activity)))


def _draw(kind, anchor, usable, acts, deck, rng, used=None) -> tuple[Person, Person] | None:
    """One draw for ``anchor``; with ``used`` (sampling without replacement) only a pair not in it."""
    def new(a: Person, b: Person) -> bool:
        return used is None or _pair_key(a, b) not in used

    if kind == "activity":
        own = acts(anchor)
        first = deck.draw(lambda a: a in own)
        second = deck.draw(lambda a: a in own and a != first and new(Person(anchor, first), Person(anchor, a))) \
            if first else None
        if first is None or second is None:
            return None
        return Person(anchor, first), Person(anchor, second)
    others = [d for d in usable if d != anchor]
    if used is None:
        candidates = [rng.choice(others)]
    else:  # every partner in a seeded order, until one makes a new pair
        candidates = others[:]
        rng.shuffle(candidates)
    for partner in candidates:
        if kind == "portrait":
            pair = Person(anchor, None), Person(partner, None)
            if new(*pair):
                return pair
            continue
        if kind == "identity":
            shared = acts(anchor) & acts(partner)
            activity = deck.draw(lambda a: a in shared and new(Person(anchor, a), Person(partner, a)))
            if activity is not None:
                return Person(anchor, activity), Person(partner, activity)
            continue
        own, other = acts(anchor), acts(partner)
        first = deck.draw(lambda a: a in own and (used is None or any(new(Person(anchor, a), Person(partner, b))
                                                                      for b in other if b != a)))
        second = deck.draw(lambda a: a in other and a != first and new(Person(anchor, first), Person(partner, a))) \
            if first else None
        if first is not None and second is not None:
            return Person(anchor, first), Person(partner, second)
    return None


def all_pairs(catalog: Catalog, kind: str, activities: set[str] | None = None) -> Iterator[PairSpec]:
    """Every pair of pairing type ``kind`` exactly once (``pair_sampling="exhaustive"``), as the
    authors' ``merge.py``: within each gender x dimension, every unordered pair of its images that
    meets the type's condition (identity: two descriptors, one activity; activity: one descriptor,
    two activities; identity_activity: two descriptors, two activities; portrait: two descriptors'
    no-activity portraits). Left is the image that sorts first. ``activities`` restricts the
    activities (those with decision questions). Order: strata, then descriptors / activities sorted."""
    if kind not in PAIR_KINDS:
        raise ValueError(f"kind must be one of {PAIR_KINDS}, got {kind!r}")
    index = 0
    for (gender, dimension), descriptors in catalog.strata().items():
        def acts(d: str) -> list[str]:
            found = catalog.activities.get((gender, d), set())
            return sorted(found if activities is None else found & activities)

        usable = _usable(catalog, kind, gender, descriptors, acts)
        pairs: Iterator[tuple[Person, Person]]
        if kind == "portrait":
            pairs = ((Person(a, None), Person(b, None)) for a, b in combinations(usable, 2))
        elif kind == "activity":
            pairs = ((Person(d, a1), Person(d, a2)) for d in usable for a1, a2 in combinations(acts(d), 2))
        elif kind == "identity":
            pairs = ((Person(a, act), Person(b, act)) for a, b in combinations(usable, 2)
                     for act in sorted(set(acts(a)) & set(acts(b))))
        else:
            pairs = ((Person(a, a1), Person(b, a2)) for a, b in combinations(usable, 2)
                     for a1 in acts(a) for a2 in acts(b) if a1 != a2)
        for left, right in pairs:
            yield PairSpec(kind, gender, dimension, left, right, index)
            index += 1


class IndividualImages:
    """Encoded individual images of a built ``vignette`` dataset, read on demand.

    A local builder folder is read straight from its parquet shards: the builder writes one image per
    row group and at most 1,000 images per shard, so one image costs one row-group read; only an id ->
    (shard, row group) index and a few open shards (their footers) are held. A Hub id is loaded through
    ``datasets`` (memory-mapped Arrow) and indexed by row. Decoded images live in an LRU cache of
    ``cache_size`` entries, already scaled to half a pair. :meth:`sha256` names an image's encoded
    bytes (the builder's ``sha256`` column; hashed from the bytes where a dataset lacks it).
    """

    def __init__(self, location: str, cache_size: int = 256, half_size: tuple[int, int] = (336, 336),
                 open_shards: int = 4) -> None:
        self.location = location
        self.half_size = half_size
        self._cache = BoundedLRU(cache_size)
        self._handles = BoundedLRU(open_shards)
        self._shards: list[Path] = []
        self._index: dict[str, tuple[int, int, int]] = {}  # id -> (shard, row group, row in group)
        self._sha256: dict[str, str] = {}  # id -> sha256 of the encoded bytes
        self._rows = None
        folder = Path(location)
        if folder.is_dir():
            import pyarrow.parquet as pq

            self._shards = sorted((folder / "data").glob("test-*.parquet"))
            if not self._shards:
                from lm_eval_bias.core.data import DataSourceError

                raise DataSourceError(f"{folder / 'data'}: no test-*.parquet shards of the vignette images")
            for f, shard in enumerate(self._shards):
                handle = pq.ParquetFile(shard)
                with_sha = "sha256" in handle.schema_arrow.names
                table = handle.read(columns=["image_id", "sha256"] if with_sha else ["image_id"])
                ids = table.column(0).to_pylist()
                if with_sha:
                    self._sha256.update(zip(ids, table.column(1).to_pylist()))
                k = 0
                for rg in range(handle.num_row_groups):
                    for row in range(handle.metadata.row_group(rg).num_rows):
                        self._index[ids[k]] = (f, rg, row)
                        k += 1
                del handle
        else:
            from lm_eval_bias.core import data

            self._rows = data.load_location(location)
            self._index = {image_id: (-1, k, 0) for k, image_id in enumerate(self._rows["image_id"])}
            if "sha256" in self._rows.column_names:
                self._sha256 = dict(zip(self._rows["image_id"], self._rows["sha256"]))

    def __contains__(self, image_id: str) -> bool:
        return image_id in self._index

    def __len__(self) -> int:
        return len(self._index)

    def _handle(self, f: int):
        import pyarrow.parquet as pq

        return self._handles.get_or_create(f, lambda: pq.ParquetFile(self._shards[f]))

    def encoded(self, image_id: str) -> bytes:
        try:
            f, rg, row = self._index[image_id]
        except KeyError:
            from lm_eval_bias.core.data import DataSourceError

            raise DataSourceError(f"{self.location}: no vignette image {image_id!r}") from None
        if f < 0:
            return self._rows[rg]["image"]["bytes"]
        return self._handle(f).read_row_group(rg, columns=["image"]).column(0)[row].as_py()["bytes"]

    def sha256(self, image_id: str) -> str:
        """SHA-256 (hex) of the encoded bytes of ``image_id``, without decoding it."""
        digest = self._sha256.get(image_id)
        if digest is None:
            digest = self._sha256[image_id] = hashlib.sha256(self.encoded(image_id)).hexdigest()
        return digest

    def half(self, image_id: str):
        """The image decoded, RGB, scaled to ``half_size`` (cached)."""
        return self._cache.get_or_create(image_id, lambda: self._decode_half(image_id))

    def _decode_half(self, image_id: str):
        from PIL import Image

        with Image.open(io.BytesIO(self.encoded(image_id))) as opened:
            opened.draft("RGB", self.half_size)  # JPEG: decode at reduced scale
            return scale_to_height(opened.convert("RGB"), self.half_size[1])


def scale_to_height(image, height: int):
    from PIL import Image

    if image.height == height:
        return image
    width = max(1, round(image.width * height / image.height))
    return image.resize((width, height), Image.Resampling.BICUBIC, reducing_gap=3.0)


#: Width of the cross-faded seam as a fraction of the image height: the authors' ``merge.py`` blends
#: 50 px of their 1024-px FLUX images (16 px at the 336-px pair height).
SEAM_BLEND_FRACTION = 50 / 1024


def compose_pair(left, right, size: tuple[int, int] = PAIR_SIZE, blend: int | None = None):
    """Two images side by side at a common height, the seam cross-faded, resized to ``size``
    (upstream: 672x336).

    As the authors' ``src/merge.py`` (chahatraj/Vignette): the last ``blend`` columns of the left
    image and the first ``blend`` columns of the right one overlap, mixed with a linear ramp
    ``alpha = linspace(0, 1, blend)`` (``(1 - alpha) * left + alpha * right``, truncated to uint8), so
    the width is ``left + right - blend``; then the whole is resized to ``size`` (their loader's
    ``cv2.resize(img, (672, 336))``). ``blend`` defaults to ``SEAM_BLEND_FRACTION`` of the height
    (their 50 px at 1024 px); ``blend=0`` gives a hard seam (pixels of ``COMPOSE_VERSION`` 1)."""
    import numpy as np
    from PIL import Image

    height = size[1]
    left, right = scale_to_height(left, height), scale_to_height(right, height)
    if blend is None:
        blend = round(SEAM_BLEND_FRACTION * height)
    blend = max(0, min(int(blend), left.width, right.width))
    if blend == 0:
        canvas = Image.new("RGB", (left.width + right.width, height))
        canvas.paste(left, (0, 0))
        canvas.paste(right, (left.width, 0))
    else:
        a, b = np.asarray(left.convert("RGB")), np.asarray(right.convert("RGB"))
        merged = np.zeros((height, a.shape[1] + b.shape[1] - blend, 3), dtype=np.uint8)
        merged[:, :a.shape[1] - blend] = a[:, :a.shape[1] - blend]
        merged[:, a.shape[1]:] = b[:, blend:]
        alpha = np.linspace(0, 1, blend).reshape(1, blend, 1)
        merged[:, a.shape[1] - blend:a.shape[1]] = ((1 - alpha) * a[:, -blend:] + alpha * b[:, :blend]).astype(np.uint8)
        canvas = Image.fromarray(merged, "RGB")
    if canvas.size != tuple(size):
        canvas = canvas.resize(tuple(size), Image.Resampling.BICUBIC)
    return canvas


class PairImages:
    """Pair images of one ``vignette`` dataset for lm-eval: pooled images composed on demand.

    :meth:`image` returns, without composing anything, a :func:`pooled image
    <lm_eval_bias.core.data._pooled_image_class>` of the pair (left, right) whose pixels come from a
    :class:`~lm_eval_bias.core.data.PixelPool` keyed by ``(left, right)``: composed (:meth:`compose`) when a
    model reads the image and kept for the ``cache_size`` most recent pairs (default 16, env
    ``LM_EVAL_BIAS_COMPOSED_PAIRS``), composed again if evicted. The image objects handed out for the
    most recent pairs are reused, so the questions of one pair share one object. Each is tagged for
    lm-eval's request cache with :meth:`cache_key`, from the two images' encoded-bytes hashes,
    :data:`COMPOSE_VERSION` and the sizes: no composing or pixel hashing to key a request.
    ``rebuild`` (``(left, right) -> (callable, args)``) makes pickles lazy (see ``PixelPool``).
    """

    def __init__(self, individual: IndividualImages, size: tuple[int, int] = PAIR_SIZE,
                 cache_size: int | None = None, rebuild=None, handed_out: int = 64) -> None:
        from lm_eval_bias.core.data import PixelPool

        self.individual = individual
        self.size = (int(size[0]), int(size[1]))
        if cache_size is None:
            cache_size = int(os.environ.get(COMPOSED_PAIRS_ENV, DEFAULT_COMPOSED_PAIRS))
        self.pool = PixelPool(lambda key: self.compose(*key), cache_size, rebuild=rebuild)
        self._handed_out = BoundedLRU(handed_out)

    def compose(self, left: str, right: str):
        """The pair image (left, right), composed now: a plain RGB image of :attr:`size`."""
        pair = compose_pair(self.individual.half(left), self.individual.half(right), self.size)
        if pair.size != self.size:  # compose_pair always resizes to `size`; the pooled image declares it
            raise ValueError(f"composed pair is {pair.size}, expected {self.size}")
        return pair

    def cache_key(self, left: str, right: str) -> str:
        """Request-cache key that determines the pixels of the pair (left, right)."""
        from lm_eval_bias.backends.cache_keys import bytes_key

        half = self.individual.half_size
        transform = f"vignette-pair{COMPOSE_VERSION}-{self.size[0]}x{self.size[1]}-half{half[0]}x{half[1]}"
        return bytes_key(f"{self.individual.sha256(left)}|{self.individual.sha256(right)}".encode(), transform)

    def image(self, left: str, right: str, shared: bool = True):
        """The pooled pair image (the same object for a recent pair unless ``shared=False``)."""
        key = (left, right)
        if not shared:
            return self.pool.image(key, self.size, self.cache_key(left, right))
        return self._handed_out.get_or_create(key, lambda: self.pool.image(key, self.size, self.cache_key(left, right)))
