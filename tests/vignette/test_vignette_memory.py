"""VIGNETTE memory is flat in the number of pairs: lm-eval gets pooled pair images that hold no pixels;
pairs are composed when the model reads them and only a bounded pool of composed pixels is alive
(``lm_eval_bias.vignette.pairs.PairImages`` on ``lm_eval_bias.core.data.PixelPool``)."""

from __future__ import annotations

import copy
import pickle

import pytest

from lm_eval_bias.backends import cache_keys
from lm_eval_bias.vignette import synthetic as sv
from lm_eval_bias.vignette.pairs import COMPOSE_VERSION, compose_pair


@pytest.fixture
def fresh_pairs(vignette_env, monkeypatch):
    """The vignette task module with empty pair-image pools (counts start at zero)."""
    from lm_eval_bias.vignette import tasks as vignette

    monkeypatch.setattr(vignette, "_PAIRS", {})
    return vignette


def _no_pixels(image) -> bool:
    return image.pooled and vars(image).get("_im") is None


def test_pooled_pair_equals_compose_pair_and_is_keyed_without_composing(fresh_pairs):
    vignette = fresh_pairs
    docs = vignette.load_docs("decision")["test"].to_list()
    images = [vignette.doc_to_image(d)[0] for d in docs]
    pairs = vignette.pair_images(docs[0]["images_from"])
    assert pairs.pool.created == 0 and all(_no_pixels(i) for i in images)  # handed out, nothing composed
    by_pair = {}
    for doc, image in zip(docs, images):
        by_pair.setdefault(doc["pair_id"], set()).add(id(image))
    assert all(len(ids) == 1 for ids in by_pair.values())  # the questions of one pair share one object

    keys = {cache_keys.image_key(i) for i in images}  # what lm-eval's request cache hashes
    assert pairs.pool.created == 0  # keyed from the source images' bytes hashes, not pixels
    assert len(keys) == len({(d["left_image"], d["right_image"]) for d in docs})
    assert all(k.startswith(f"v1:vignette-pair{COMPOSE_VERSION}-672x336-") for k in keys)
    doc = docs[0]
    assert pairs.cache_key(doc["left_image"], doc["right_image"]) != pairs.cache_key(doc["right_image"], doc["left_image"])

    store = vignette.individual_images(doc["images_from"])
    for doc, image in list(zip(docs, images))[:12]:
        expected = compose_pair(store.half(doc["left_image"]), store.half(doc["right_image"]))
        assert (image.mode, image.size) == ("RGB", expected.size)
        assert image.tobytes() == expected.tobytes()
        markers = sv.read_pair_markers(image, [doc["left"], doc["right"]], [doc["left_activity"]])
        assert markers == [(doc["left"], doc["left_activity"]), (doc["right"], doc["left_activity"])]
        assert _no_pixels(image)  # read, and still no pixels of its own
    assert cache_keys.image_key(images[0]) == pairs.cache_key(docs[0]["left_image"], docs[0]["right_image"])


def test_composed_buffers_are_bounded_through_lm_eval_requests(fresh_pairs, monkeypatch):
    """Docs and requests built by lm-eval for hundreds of pairs, then every request answered by
    bias-probe (which reads each pair's colour markers): composed pixel buffers alive never exceed
    the pool's capacity, and the images lm-eval holds have none."""
    monkeypatch.setenv("LM_EVAL_BIAS_COMPOSED_PAIRS", "4")
    import lm_eval_bias
    from lm_eval_bias.models.bias_probe import BiasProbeLM

    vignette = fresh_pairs
    manager = lm_eval_bias.task_manager(metadata={"pairs_per_identity": 20})
    task = manager.load(["vignette_decision"])["tasks"]["vignette_decision"]
    task.build_all_requests(rank=0, world_size=1)
    instances = task.instances
    images = [i.args[2]["visual"][0] for i in instances]
    n_pairs = len({cache_keys.image_key(i) for i in images})
    pool = vignette.pair_images(instances[0].doc["images_from"]).pool
    assert len(instances) >= 1500 and n_pairs >= 50  # pairs are drawn with replacement: some repeat
    assert pool.capacity == 4 and pool.created == 0 and all(_no_pixels(i) for i in images)

    alive = []
    original = pool.core

    def watched(key):
        core = original(key)
        alive.append(len(pool))
        return core

    monkeypatch.setattr(pool, "core", watched)
    answers = BiasProbeLM(vignette_prefer="old man").generate_until(instances)
    assert len(answers) == len(instances) and all(a.strip() for a in answers)
    assert n_pairs <= pool.created <= len(instances)  # every pair composed, on demand
    assert max(alive) <= 4 and len(pool) <= 4
    assert all(_no_pixels(i) for i in images)
    prefer = [(inst.doc, a) for inst, a in zip(instances, answers) if "old man" in inst.doc["options"]]
    assert prefer and all(doc["options"][ord(a) - 65] == "old man" for doc, a in prefer)  # markers were read


def test_pickle_copy_and_in_place_changes(fresh_pairs):
    vignette = fresh_pairs
    doc = vignette.load_docs("decision", pairs_per_identity=1)["test"][0]
    image = vignette.doc_to_image(doc)[0]
    pairs = vignette.pair_images(doc["images_from"])
    pixels = image.tobytes()
    key = cache_keys.image_key(image)
    made = pairs.pool.created

    blob = pickle.dumps(image)
    assert len(blob) < 1000  # a recipe (dataset, left, right), not 677 kB of pixels
    again = pickle.loads(blob)
    assert again is not image and _no_pixels(again) and cache_keys.image_key(again) == key
    assert pairs.pool.created == made and again.tobytes() == pixels

    deep = copy.deepcopy(image)
    assert deep is not image and _no_pixels(deep) and deep.tobytes() == pixels
    shallow = copy.copy(image)
    assert not hasattr(shallow, "pooled") and shallow.tobytes() == pixels

    deep.paste((0, 0, 0), (0, 0, 40, 40))  # in place: this object gets its own pixels, the pool's stay
    assert not deep.pooled and deep.tobytes() != pixels
    assert image.tobytes() == pixels and again.tobytes() == pixels
    assert cache_keys.image_key(deep) == cache_keys.pixel_key(deep) != key  # its stale tag is not trusted
    assert pickle.loads(pickle.dumps(deep)).tobytes() == deep.tobytes()  # pickled by its own pixels

    image.close()  # other docs share it: stays usable
    assert image.tobytes() == pixels


def test_lm_eval_holds_each_doc_once_with_interned_strings(fresh_pairs):
    """lm-eval walks the split three times (the few-shot sampler's copy, the requests, the logged
    samples), and each walk of a ``datasets.Dataset`` decodes fresh dicts that stay alive until the run
    ends. Through ``process_docs: shared_docs`` every walk yields the same dict per doc, the docs equal
    ``load_docs``'s, and repeated strings are stored once: one copy of a doc, about 1.3 kB, where three
    uninterned copies took about 8 kB (docs/backends.md "VIGNETTE at scale")."""
    import tracemalloc

    import lm_eval_bias

    vignette = fresh_pairs
    manager = lm_eval_bias.task_manager(metadata={"pairs_per_identity": 20})
    task = manager.load(["vignette_decision"])["tasks"]["vignette_decision"]
    docs = task.eval_docs
    assert isinstance(docs, vignette.SharedDocs) and task.eval_docs is docs and len(docs) >= 1500
    assert docs == vignette.load_docs("decision", pairs_per_identity=20)["test"].to_list()  # same docs, same order
    assert len(task.sampler.df) == len(docs) and all(a is b for a, b in zip(task.sampler.df, docs))  # references only

    task.build_all_requests(rank=0, world_size=1)
    assert len(task.instances) == len(docs) and all(inst.doc is docs[inst.doc_id] for inst in task.instances)
    logged_walk = list(task.doc_iterator(rank=0, world_size=1))  # evaluate's walk for process_results / samples
    assert all(doc is docs[k] for k, doc in logged_walk)

    # Interned: the strings of all docs are ~one object per doc (its doc_id) plus the shared ones (pair ids,
    # questions, descriptors, ...); decoded from Arrow they were 25 new objects a doc.
    strings = {id(v) for d in docs for value in d.values() for v in (value if isinstance(value, list) else [value])
               if isinstance(v, str)}
    assert len(strings) < 1.5 * len(docs)
    keys = {id(k) for d in docs for k in d}
    assert len(keys) == len(docs[0])

    dataset = vignette.load_docs("decision", pairs_per_identity=20)["test"]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        held = vignette.shared_docs(dataset)
        per_doc = (tracemalloc.get_traced_memory()[0] - before) / len(held)
    finally:
        tracemalloc.stop()
    assert vignette.shared_docs(dataset) is held  # made once per dataset
    assert per_doc < 1800, f"{per_doc:.0f} bytes a doc"  # measured ~1.3 kB; one Arrow-decoded copy is ~2.7 kB
