"""Resumable ``--use_cache`` runs with images: cheap image keys, and every answer stored as it is looked up.

lm-eval's request cache (``--use_cache PATH``, :class:`lm_eval.api.model.CachingLM`) stores each answer
under ``hash_args(request type, request.args)`` and, on a restart, asks the model only the requests
whose key is not stored. Two things keep that from working for image tasks in lm-eval 0.4.13:

1. the key of an image is a SHA-256 of its PNG encoding (``_multimodal_cache_default`` ->
   ``convert_pil_to_hash``), ~0.14-0.2 s per 1024-px photo, paid for every request on every run;
2. ``hf-multimodal`` and ``vllm-vlm`` store each finished request early ("partial" results, through
   ``cache_hook.add_partial``) under ``(context, gen_kwargs)`` *without the images*, which the cache
   never looks up; answers are stored under the looked-up key only when the whole ``generate_until``
   call returns, so a run that dies at request 23,000 of 24,000 restarts from zero.

:func:`install` (called by :func:`lm_eval_bias.core.registration.register_plugin`, and by the image
helpers of :mod:`lm_eval_bias.core.data` when they run inside an lm-eval process, so plain ``lm_eval
--include_path`` runs of the plugin's image tasks get it too) patches, in this process only:

(a) **image keys**: ``lm_eval.api.model._multimodal_cache_default`` (looked up by ``hash_args`` at
    call time) keys a PIL image by :func:`image_key` instead of a PNG hash: the content key the
    plugin tagged it with (:func:`tag_image`; the image store tags each photo with a hash of its
    encoded bytes, computed once per photo, so keying needs neither decoding nor encoding), or else
    a SHA-256 of its mode, size, palette, transparency and raw pixels (``tobytes``; ~5 ms for a
    1024-px RGB image). Keys live in their own namespace (``{"__lm_eval_bias_image__": ...}``), so
    they never equal a stock lm-eval key; everything that is not an image is keyed as before.
(b) **checkpointed generation**: when a :class:`CachingLM` hands ``generate_until`` requests that
    carry images to ``hf-multimodal``, ``vllm-vlm`` or a subclass (``vllm-vlm-guided``), the backend
    is called on consecutive slices of them (one model batch each: ``batch_size`` requests;
    ``vllm-vlm`` with ``batch_size=auto``: 512), and after each slice every answer is written and
    committed under exactly the key the cache looks up (``hash_args("generate_until", request.args)``,
    images included). The backend's own image-less partial entries are not written (they could only
    ever be found by a text-only request with the same text, which would get an answer given with
    images). Requests are sliced in the backend's own batching order (same generation settings
    together, longest prompt first), and sampled requests (``do_sample=True``) are not stored, as
    lm-eval never looks them up. ``vllm-vlm`` with ``data_parallel_size > 1`` starts its engines per
    call, so it is called once (no slicing): its answers are stored when the call returns.

Safety. Only what a cache lookup reads is changed; a different image (or gen_kwargs, or text) gives
a different key. A tag is trusted only while the image keeps the read-only flag :func:`tag_image`
sets, its mode, its size and its pixel core: a PIL operation that changes it in place (``paste``,
``ImageDraw``, ``putpixel``, ``thumbnail``, ...) copies the pixels first or replaces the core, which
voids the tag, and the image is then keyed by its pixels. The patches are applied only to lm-eval
0.4.x from 0.4.13 (tested: 0.4.13) and only after checking that the internals they rely on are there
(``hash_args`` must key through ``_multimodal_cache_default``, verified by hashing a probe;
``CachingLM.__getattr__`` must look requests up with ``hash_args(attr, req.args)`` and pass the
misses to ``getattr(self.lm, attr)``); otherwise each is skipped with a warning and lm-eval behaves as
it ships (slow keys, no mid-run checkpoints; never a wrong answer). ``LM_EVAL_BIAS_CACHE_PATCH=0``
turns both off. Caches written without the patch are not reused for image requests (different
keys: those requests are asked again), and vice versa.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import logging
import os
import re
import sys
import threading
from typing import Any

logger = logging.getLogger(__name__)

#: Set to 0 to leave lm-eval's cache keying and its backends' partial caching untouched.
PATCH_ENV = "LM_EVAL_BIAS_CACHE_PATCH"
#: Requests per checkpoint (overrides the per-backend default: one model batch).
CHECKPOINT_ENV = "LM_EVAL_BIAS_CHECKPOINT_REQUESTS"
#: Requests per checkpoint for vllm-vlm with batch_size=auto (one engine call each).
VLLM_AUTO_CHECKPOINT = 512
#: lm-eval versions the patches are applied to: 0.4.x from 0.4.13 (tested against 0.4.13).
TESTED_LM_EVAL = "0.4.13"
MIN_LM_EVAL = (0, 4, 13)
MAX_LM_EVAL_EXCLUSIVE = (0, 5)

#: Instance attribute holding ``(key, mode, size, pixel core)`` of a tagged image.
TAG_ATTR = "_lm_eval_bias_cache_tag"
KEY_FIELD = "__lm_eval_bias_image__"
KEY_VERSION = "v1"

#: Backends whose partial results lack the images: "module.Class" of lm-eval (subclasses included).
CHECKPOINTED_BACKENDS = (
    "lm_eval.models.hf_vlms.HFMultimodalLM",
    "lm_eval.models.vllm_vlms.VLLM_VLM",
)

_lock = threading.RLock()
_state: dict[str, Any] = {"attempted": False, "keys": False, "checkpoints": False, "reasons": []}


# -- image keys ----------------------------------------------------------------------------------------
def pixel_key(image) -> str:
    """Content key of a PIL image from its pixels (no PNG encoding)."""
    digest = hashlib.sha256()
    digest.update(f"{image.mode}|{image.size[0]}x{image.size[1]}|".encode())
    if image.mode in ("P", "PA"):
        digest.update(b"palette|" + repr(image.getpalette()).encode() + b"|")
    transparency = image.info.get("transparency")
    if transparency is not None:
        digest.update(b"transparency|" + repr(transparency).encode() + b"|")
    digest.update(image.tobytes())
    return f"{KEY_VERSION}:pixels:{digest.hexdigest()}"


def bytes_key(encoded: bytes, transform: str) -> str:
    """Content key of an image decoded from ``encoded`` and then ``transform``-ed (e.g. "rgb")."""
    return f"{KEY_VERSION}:{transform}:{hashlib.blake2b(encoded, digest_size=32).hexdigest()}"


def tag_image(image, key: str | None = None):
    """Give ``image`` a content key for the request cache, and mark it read-only; returns it.

    ``key`` must determine the pixels (e.g. :func:`bytes_key` of the bytes the image is decoded from);
    None computes :func:`pixel_key` now, once, instead of at every cache lookup. Read-only makes any
    later in-place change through PIL copy the pixels first, which voids the tag (:func:`image_key`)."""
    if key is None:
        key = pixel_key(image)
    image.readonly = 1
    attrs = vars(image)
    attrs[TAG_ATTR] = (str(key), image.mode, tuple(image.size), _core(attrs))
    return image


def _core(attrs: dict):
    """The image's own pixel core (None for the image store's pooled images, whose pixels always
    come from their encoded bytes)."""
    return attrs.get("_im", attrs.get("im"))


def _tag_valid(image, attrs: dict, tag) -> bool:
    key, mode, size, core = tag
    readonly = attrs.get("_readonly", attrs.get("readonly", 0))  # not the property: it would decode a pooled image
    if not readonly or image.mode != mode or tuple(image.size) != size:
        return False
    return core is None or _core(attrs) is core


def image_key(image) -> str:
    """The cache key of a PIL image: its valid tag, else :func:`pixel_key`."""
    attrs = vars(image)
    tag = attrs.get(TAG_ATTR)
    if tag is not None and _tag_valid(image, attrs, tag):
        return tag[0]
    return pixel_key(image)


def _make_default(original):
    def _lm_eval_bias_cache_default(obj: Any) -> Any:
        from PIL import Image

        if isinstance(obj, Image.Image):
            return {KEY_FIELD: image_key(obj)}
        return original(obj)

    _lm_eval_bias_cache_default.__wrapped__ = original  # type: ignore[attr-defined]
    _lm_eval_bias_cache_default._lm_eval_bias = True  # type: ignore[attr-defined]
    return _lm_eval_bias_cache_default


# -- checkpointed generate_until -----------------------------------------------------------------------
def _is_checkpointed_backend(lm) -> bool:
    return any(f"{c.__module__}.{c.__qualname__}" in CHECKPOINTED_BACKENDS for c in type(lm).__mro__)


def _checkpoint_size(lm, n: int) -> int:
    configured = os.environ.get(CHECKPOINT_ENV, "").strip()
    if configured:
        try:
            return max(1, int(configured))
        except ValueError:
            logger.warning("%s=%r is not an integer; using the backend default", CHECKPOINT_ENV, configured)
    if int(getattr(lm, "data_parallel_size", 1) or 1) > 1:
        return max(1, n)  # vllm-vlm starts one engine per worker per call: a single call
    batch_size = getattr(lm, "batch_size", 1)
    if isinstance(batch_size, str) and batch_size.isdigit():
        batch_size = int(batch_size)
    if isinstance(batch_size, int) and batch_size > 0:
        return batch_size
    return VLLM_AUTO_CHECKPOINT


def _settings_key(gen_kwargs: Any) -> str:
    try:
        return json.dumps(gen_kwargs, sort_keys=True, default=repr)
    except (TypeError, ValueError):
        return repr(gen_kwargs)


def _accepts_disable_tqdm(fn) -> bool:
    try:
        return "disable_tqdm" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def _checkpointed(lm, generate_until):
    """``generate_until`` of ``lm`` that stores each slice's answers under their full cache keys."""
    quiet_slices = _accepts_disable_tqdm(generate_until)

    @functools.wraps(generate_until)
    def checkpointed_generate_until(requests, *args, **kwargs):
        hook = getattr(lm, "cache_hook", None)
        db = getattr(hook, "dbdict", None)
        if db is None or not requests or not all(
            len(r.args) >= 3 and isinstance(r.args[1], dict) and isinstance(r.args[2], dict) for r in requests
        ):
            return generate_until(requests, *args, **kwargs)  # no cache, or text-only: as lm-eval ships
        from lm_eval.api import model as lm_model
        from tqdm import tqdm

        n = len(requests)
        size = _checkpoint_size(lm, n)
        # vLLM: slice in the engine's photo-grouped order, so one photo's requests share a checkpoint batch
        provider = _checkpoint_order_provider[0]
        order = (provider(lm, requests) if provider is not None else None) or sorted(
            range(n), key=lambda i: (_settings_key(requests[i].args[1]), -len(requests[i].args[0])))
        results: list[Any] = [None] * n
        disable = bool(kwargs.get("disable_tqdm", args[0] if args else False)) or getattr(lm, "rank", 0) != 0
        if quiet_slices and size < n and not args:
            kwargs = {**kwargs, "disable_tqdm": True}  # one bar for the run below, not one per slice
        bar = tqdm(total=n, disable=disable or size >= n,
                   desc=f"generate_until with images, stored every {size} requests")
        lm.cache_hook = lm_model.CacheHook(None)  # the backend's own partial entries lack the images
        try:
            for start in range(0, n, size):
                indices = order[start:start + size]
                # keys first: what the cache looks up, even if the backend touched the args
                keys = [None if requests[i].args[1].get("do_sample", False)  # never looked up by lm-eval
                        else lm_model.hash_args("generate_until", requests[i].args) for i in indices]
                answers = generate_until([requests[i] for i in indices], *args, **kwargs)
                if len(answers) != len(indices):
                    raise RuntimeError(f"{type(lm).__name__}.generate_until returned {len(answers)} answers "
                                       f"for {len(indices)} requests")
                for i, key, answer in zip(indices, keys, answers):
                    results[i] = answer
                    if key is not None and answer is not None:
                        db[key] = answer
                db.commit()
                bar.update(len(indices))
        finally:
            lm.cache_hook = hook
            bar.close()
        return results

    checkpointed_generate_until._lm_eval_bias_checkpointed = True  # type: ignore[attr-defined]
    return checkpointed_generate_until


def _ensure_checkpointed(lm) -> None:
    current = vars(lm).get("generate_until")
    if current is not None and getattr(current, "_lm_eval_bias_checkpointed", False):
        return
    lm.generate_until = _checkpointed(lm, lm.generate_until)


def _make_getattr(original):
    def __getattr__(self, attr: str):
        if attr == "generate_until":
            lm = vars(self).get("lm")
            if lm is not None and _is_checkpointed_backend(lm):
                _ensure_checkpointed(lm)
        return original(self, attr)

    __getattr__.__wrapped__ = original  # type: ignore[attr-defined]
    __getattr__._lm_eval_bias = True  # type: ignore[attr-defined]
    return __getattr__


# -- installation --------------------------------------------------------------------------------------
def _version_tuple(text: str) -> tuple[int, ...]:
    found = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", text.strip())
    return tuple(int(g) for g in found.groups(default="0")) if found else ()


def _lm_eval_version_ok() -> str | None:
    """None if the installed lm-eval is in the supported range, else why not."""
    import importlib.metadata

    try:
        version = importlib.metadata.version("lm_eval")
    except importlib.metadata.PackageNotFoundError:
        return "lm-eval's version is unknown"
    found = _version_tuple(version)
    if not (MIN_LM_EVAL <= found < MAX_LM_EVAL_EXCLUSIVE):
        return f"lm-eval {version} is outside the supported 0.4.13 <= version < 0.5 (tested: {TESTED_LM_EVAL})"
    return None


def _install_keys(model_module) -> str | None:
    from PIL import Image

    original = getattr(model_module, "_multimodal_cache_default", None)
    hash_args = getattr(model_module, "hash_args", None)
    if original is None or hash_args is None:
        return "lm_eval.api.model has no _multimodal_cache_default / hash_args"
    if getattr(original, "_lm_eval_bias", False):
        return None
    patched = _make_default(original)
    model_module._multimodal_cache_default = patched
    probe = tag_image(Image.new("RGB", (2, 2)), f"{KEY_VERSION}:probe")
    args = ("probe", {"until": []}, {"visual": [probe]})
    expected = hashlib.sha256(json.dumps(["generate_until", *args[:2], {"visual": [{KEY_FIELD: f"{KEY_VERSION}:probe"}]}])
                              .encode("utf-8")).hexdigest()
    try:
        ok = hash_args("generate_until", args) == expected
    except Exception as exc:  # noqa: BLE001 - any failure means the internals differ: leave them alone
        ok, exc_text = False, repr(exc)
    else:
        exc_text = "its key differs from the expected one"
    if not ok:
        model_module._multimodal_cache_default = original
        return f"hash_args does not key images through _multimodal_cache_default ({exc_text})"
    return None


def _install_checkpoints(model_module) -> str | None:
    caching = getattr(model_module, "CachingLM", None)
    hook = getattr(model_module, "CacheHook", None)
    original = vars(caching).get("__getattr__") if caching is not None else None
    if original is None or hook is None:
        return "lm_eval.api.model has no CachingLM.__getattr__ / CacheHook"
    if getattr(original, "_lm_eval_bias", False):
        return None
    try:
        source = inspect.getsource(original)
        null_hook = hook(None)
    except Exception as exc:  # noqa: BLE001
        return f"CachingLM could not be inspected ({exc!r})"
    needed = ("hash_args(attr, req.args)", "getattr(self.lm, attr)(remaining_reqs)", "self.dbdict[hsh] = r")
    missing = [snippet for snippet in needed if snippet not in source]
    if missing or getattr(null_hook, "dbdict", "missing") is not None:
        return f"CachingLM.__getattr__ differs from lm-eval 0.4.13 (lacks {missing or 'CacheHook(None).dbdict'})"
    caching.__getattr__ = _make_getattr(original)
    return None


def install() -> dict[str, Any]:
    """Apply patches (a) and (b) once per process (idempotent); returns :func:`status`.

    Each is skipped, with a warning, when lm-eval's internals differ from what it relies on."""
    with _lock:
        if _state["attempted"]:
            return status()
        _state["attempted"] = True
        if os.environ.get(PATCH_ENV, "1").strip().lower() in ("0", "false", "no", "off"):
            _state["reasons"].append(f"{PATCH_ENV}=0")
            return status()
        try:
            problem = _lm_eval_version_ok()
            if problem is None:
                import lm_eval.api.model as model_module

                for name, install_one in (("keys", _install_keys), ("checkpoints", _install_checkpoints)):
                    problem_one = install_one(model_module)
                    if problem_one is None:
                        _state[name] = True
                    else:
                        _state["reasons"].append(problem_one)
            else:
                _state["reasons"].append(problem)
        except Exception as exc:  # noqa: BLE001 - never break a run over an optimization
            _state["reasons"].append(f"{type(exc).__name__}: {exc}")
        if _state["reasons"]:
            logger.warning(
                "lm-eval-bias: request-cache patch %s (%s); --use_cache works as lm-eval ships it: image keys "
                "PNG-hash every image and hf-multimodal / vllm-vlm runs resume only from completed calls",
                "partly skipped" if (_state["keys"] or _state["checkpoints"]) else "skipped",
                "; ".join(_state["reasons"]))
        return status()


def install_if_lm_eval_loaded() -> bool:
    """:func:`install`, but only inside a process that already uses lm-eval's model API (so that
    building datasets or reports never imports lm-eval). True when it installed now."""
    if not _state["attempted"] and "lm_eval.api.model" in sys.modules:
        install()
        return True
    return False


#: who orders a checkpointed ``generate_until`` call's requests (``(lm, requests) -> list[int] | None``);
#: :func:`lm_eval_bias.backends.vllm_order.install` sets the engine's photo-grouped order here
_checkpoint_order_provider: list = [None]


def set_checkpoint_order(provider) -> None:
    """Let ``provider(lm, requests)`` choose the slicing order of checkpointed requests (None: default)."""
    _checkpoint_order_provider[0] = provider


def status() -> dict[str, Any]:
    """Which patches are active: ``{"keys": bool, "checkpoints": bool, "reasons": [...]}``."""
    return {"keys": _state["keys"], "checkpoints": _state["checkpoints"], "reasons": list(_state["reasons"])}
