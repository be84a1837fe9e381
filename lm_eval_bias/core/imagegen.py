"""Image generation shared by the benchmarks' data pipelines: seeds, shards, backends, manifests.

Knows no benchmark. A pipeline (``lm-eval-bias generate vignette``, the Counterfactual VQA pairs)
lists its items, keeps its part (:func:`shard_items`), skips what its output folder's manifests
already hold (:meth:`Manifest.done`), and for each remaining item derives a seed from the item's
identity (:func:`derive_seed`), asks a backend for the image, writes it atomically
(:func:`write_image_atomic`) and only then appends the item to the manifest (:meth:`Manifest.append`).
Killed anywhere, a run leaves either a finished image with its manifest line, a finished image
without one (regenerated on resume: same seed, same pixels), or nothing; never a half-written image
under its final name.

Backends (all expose ``model_id``, ``revision`` and ``settings``, everything that changes the pixels):

* :class:`DiffusersTextToImage` / :class:`DiffusersImageEditor`: a local ``diffusers`` pipeline
  (a Hub id or a folder), seeded with ``torch.Generator(device).manual_seed(seed)``;
* :class:`OpenAIImages`: any OpenAI-compatible images endpoint (``/images/generations``,
  ``/images/edits``), bounded retries, the API key read from the environment only and never written.

Settings that would mix in one folder are caught by :func:`settings_fingerprint` and
:func:`check_settings` (a run whose fingerprint differs from the folder's refuses unless allowed).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import json
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Iterable, Protocol, runtime_checkable

from PIL import Image

from lm_eval_bias.core.sharding import parse_shard

__all__ = [
    "DiffusersImageEditor",
    "DiffusersTextToImage",
    "ImageBackendError",
    "ImageEditor",
    "Manifest",
    "ManifestConflictError",
    "MixedSettingsError",
    "OpenAIImages",
    "TextToImage",
    "VOLATILE_FIELDS",
    "check_settings",
    "derive_seed",
    "merge_manifests",
    "process_rank",
    "settings_fingerprint",
    "shard_items",
    "write_bytes_atomic",
    "write_image_atomic",
]

#: Manifest fields that may differ between two productions of the same image (timing, worker).
VOLATILE_FIELDS = frozenset({"created_at", "elapsed_s", "worker"})


class ImageBackendError(RuntimeError):
    """A backend could not produce an image (bad model folder, endpoint failure after retries)."""


class MixedSettingsError(RuntimeError):
    """The output folder holds images made with other settings (see :func:`check_settings`)."""


class ManifestConflictError(ValueError):
    """Two manifests record the same key with different content."""


# --------------------------------------------------------------------------------------- seeds


def derive_seed(identity: str, base_seed: int = 0) -> int:
    """A 31-bit seed from the image's identity: ``sha256(f"{base_seed}:{identity}")``, first 4 bytes.

    The same identity gives the same seed on every machine, in every shard and on resume, so an
    image can be regenerated exactly (given the same model, revision, settings and hardware kind).
    """
    digest = hashlib.sha256(f"{int(base_seed)}:{identity}".encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


# -------------------------------------------------------------------------------------- shards


def _env_rank(global_first: bool = True) -> tuple[int, int] | None:
    """(rank, world size) from torchrun/accelerate variables, or None when not launched that way."""
    pairs = [("RANK", "WORLD_SIZE"), ("LOCAL_RANK", "LOCAL_WORLD_SIZE")]
    if not global_first:
        pairs = pairs[::-1]
    for rank_var, size_var in pairs:
        rank, size = os.environ.get(rank_var), os.environ.get(size_var)
        if rank is None or size is None:
            continue
        try:
            rank_i, size_i = int(rank), int(size)
        except ValueError:
            raise ValueError(f"{rank_var}={rank!r} / {size_var}={size!r} are not integers") from None
        if size_i < 1 or not 0 <= rank_i < size_i:
            raise ValueError(f"{rank_var}={rank_i} is not in 0..{size_i - 1} ({size_var}={size_i})")
        return rank_i, size_i
    return None


def process_rank(shard: str | None = None) -> tuple[int, int] | None:
    """The (rank, world size) :func:`shard_items` splits an explicit shard's items by, if any.

    Without ``shard``: ``RANK``/``WORLD_SIZE`` (torchrun, accelerate; global over machines), else
    ``LOCAL_RANK``/``LOCAL_WORLD_SIZE``. With ``shard`` (one machine's part of a multi-machine run):
    the local rank within this machine, ``LOCAL_RANK``/``LOCAL_WORLD_SIZE`` first.
    """
    return _env_rank(global_first=shard is None)


def _deal(items: list, index: int, count: int, key: Callable[[Any], Any]) -> list:
    order = sorted(range(len(items)), key=lambda i: key(items[i]))
    chosen = {item_index for position, item_index in enumerate(order) if position % count == index}
    return [item for i, item in enumerate(items) if i in chosen]


def shard_items(items: list, shard: str | None = None, *, key: Callable[[Any], Any] | None = None) -> list:
    """This process's part of ``items``, dealt round-robin over a stable sort of their keys.

    ``shard="i/n"`` (0-based, parsed as the tasks' ``--shard``) keeps part i of n. When the process
    was started by ``torchrun`` / ``accelerate launch`` it then keeps its own part of that: with no
    ``shard``, part RANK of WORLD_SIZE (falling back to LOCAL_RANK of LOCAL_WORLD_SIZE); with a
    ``shard``, part LOCAL_RANK of LOCAL_WORLD_SIZE of the machine's shard. ``key`` (default: the item
    itself) must be sortable and identify the item; the split depends only on the set of keys, not
    on the order items come in, so every process computes the same partition. Items are returned in
    their given order. The parts of all processes are disjoint and together cover ``items``.
    """
    key = key or (lambda item: item)
    items = list(items)
    parsed = parse_shard(shard)
    if parsed is not None:
        items = _deal(items, parsed[0], parsed[1], key)
    rank = process_rank(shard)
    if rank is not None and rank[1] > 1:
        items = _deal(items, rank[0], rank[1], key)
    return items


# -------------------------------------------------------------------------------------- writing


def write_bytes_atomic(data: bytes, path: str | Path) -> Path:
    """Write ``data`` to a hidden temp file in ``path``'s folder, fsync, then ``os.replace``.

    Readers see the old file or the complete new one, never a partial one; the temp file's name
    (``.<name>.<random>.tmp``) matches no ``*.png`` / ``*.jsonl`` glob, and is removed on failure.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def write_image_atomic(image: Image.Image, path: str | Path) -> Path:
    """Save ``image`` as PNG at ``path`` atomically (see :func:`write_bytes_atomic`).

    PNG encoding by Pillow carries no timestamp, so the same pixels give the same bytes.
    """
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return write_bytes_atomic(buffer.getvalue(), path)


# ------------------------------------------------------------------------------------- manifest


def settings_fingerprint(settings: dict) -> str:
    """16 hex digits of sha256 over the settings as canonical JSON (sorted keys, no spaces)."""
    canonical = json.dumps(settings, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def check_settings(entries: Iterable[dict], fingerprint: str, *, allow_mixed: bool = False) -> set[str]:
    """Refuse a run whose settings fingerprint differs from the images already in the folder.

    ``entries`` are the folder's manifest entries (their ``"settings_fingerprint"`` field). Returns
    the set of other fingerprints found; raises :class:`MixedSettingsError` when there are any and
    ``allow_mixed`` is false.
    """
    others = {entry.get("settings_fingerprint") for entry in entries} - {fingerprint}
    others.discard(None)
    if others and not allow_mixed:
        raise MixedSettingsError(
            f"the output folder holds images made with other settings (fingerprint(s) {', '.join(sorted(others))}; "
            f"this run's is {fingerprint}); use a new --output folder, the same settings, or --allow-mixed-settings"
        )
    return others


class Manifest:
    """An append-only JSONL of finished items, one JSON object per line with a ``"key"`` field.

    :meth:`append` writes a line with flush + fsync; call it only once the item's files are in place.
    A process killed mid-append leaves a torn last line: :meth:`done` ignores it (with a warning),
    and the next :meth:`append` starts on a fresh line so the torn text never swallows an entry.
    One writer per file: concurrent processes (shards, ranks) each keep their own manifest.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def entries(self) -> list[dict]:
        """Every well-formed entry in file order (a key appended twice appears twice)."""
        if not self.path.exists():
            return []
        entries = []
        lines = self.path.read_text(encoding="utf-8").split("\n")
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                entry = None
            if not isinstance(entry, dict) or "key" not in entry:
                warnings.warn(f"{self.path}:{number}: ignoring an incomplete manifest line (a run was interrupted mid-write)", stacklevel=2)
                continue
            entries.append(entry)
        return entries

    def done(self) -> dict[str, dict]:
        """Finished items by key (a later line for the same key replaces an earlier one)."""
        return {entry["key"]: entry for entry in self.entries()}

    def append(self, entry: dict) -> None:
        if "key" not in entry:
            raise ValueError("a manifest entry needs a 'key'")
        line = json.dumps(entry, sort_keys=True, ensure_ascii=False, default=str)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "ab+") as out:
            out.seek(0, os.SEEK_END)
            if out.tell() > 0:
                out.seek(-1, os.SEEK_END)
                if out.read(1) != b"\n":
                    out.write(b"\n")
            out.write(line.encode("utf-8") + b"\n")
            out.flush()
            os.fsync(out.fileno())


def _stable_content(entry: dict) -> dict:
    return {k: v for k, v in entry.items() if k not in VOLATILE_FIELDS}


def merge_manifests(paths: Iterable[str | Path], out: str | Path, *, keep: Callable[[dict], bool] | None = None) -> dict[str, dict]:
    """Merge manifests into one JSONL sorted by key, written atomically; returns the entries by key.

    A key found in several manifests must have the same content in each (ignoring
    :data:`VOLATILE_FIELDS`); otherwise :class:`ManifestConflictError` names the key and the files.
    ``keep`` (optional) drops entries first, e.g. stale ones whose image was since regenerated.
    ``out`` may be one of ``paths`` (its entries are read before it is replaced).
    """
    merged: dict[str, dict] = {}
    source: dict[str, Path] = {}
    for path in paths:
        path = Path(path)
        for key, entry in Manifest(path).done().items():
            if keep is not None and not keep(entry):
                continue
            if key in merged and _stable_content(merged[key]) != _stable_content(entry):
                raise ManifestConflictError(
                    f"key {key!r} is recorded differently in {source[key]} and {path} "
                    "(same image produced with different prompts, seeds or settings)"
                )
            merged.setdefault(key, entry)
            source.setdefault(key, path)
    text = "".join(json.dumps(merged[key], sort_keys=True, ensure_ascii=False, default=str) + "\n" for key in sorted(merged))
    write_bytes_atomic(text.encode("utf-8"), out)
    return {key: merged[key] for key in sorted(merged)}


# ------------------------------------------------------------------------------------- backends


@runtime_checkable
class TextToImage(Protocol):
    """Makes one image from a prompt and a seed. ``settings`` holds everything that changes pixels."""

    model_id: str
    revision: str | None
    settings: dict

    def generate(self, prompt: str, seed: int) -> Image.Image: ...


@runtime_checkable
class ImageEditor(Protocol):
    """Edits one image by an instruction and a seed. ``settings`` holds everything that changes pixels."""

    model_id: str
    revision: str | None
    settings: dict

    def edit(self, image: Image.Image, instruction: str, seed: int) -> Image.Image: ...


_DTYPES = {"float16": "float16", "fp16": "float16", "bfloat16": "bfloat16", "bf16": "bfloat16", "float32": "float32", "fp32": "float32"}


def _resolved_revision(model: str, revision: str | None) -> str | None:
    """The commit a Hub id was loaded from (the snapshot folder's name), None for a local folder."""
    if Path(model).exists():
        return revision
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(model, revision=revision, local_files_only=True)).name
    except Exception:  # noqa: BLE001 - best effort: the requested revision is recorded then
        return revision


@contextlib.contextmanager
def _loading_bars(show: bool):
    """diffusers' and transformers' loading progress bars on or off for a block, restored after."""
    from diffusers.utils import logging as diffusers_logging
    from transformers.utils import logging as transformers_logging

    modules = (diffusers_logging, transformers_logging)
    before = [m.is_progress_bar_enabled() for m in modules]
    for m in modules:
        (m.enable_progress_bar if show else m.disable_progress_bar)()
    try:
        yield
    finally:
        for m, was in zip(modules, before):
            (m.enable_progress_bar if was else m.disable_progress_bar)()


class _DiffusersBase:
    _kind = "text-to-image"

    def __init__(self, model: str, *, revision: str | None, dtype: str, device: str | None, attention_slicing: bool):
        try:
            import torch
            from diffusers import DiffusionPipeline
        except ImportError as exc:
            raise ImageBackendError(f"diffusers backend needs torch and diffusers: {exc} (pip install 'lm-eval-bias[generate]')") from None
        if str(dtype) not in _DTYPES:
            raise ImageBackendError(f"dtype {dtype!r} is not one of {', '.join(sorted(set(_DTYPES.values())))}")
        requested = _DTYPES[str(dtype)]
        if device is None:  # one GPU per process under torchrun / accelerate launch
            local_rank = os.environ.get("LOCAL_RANK")
            device = ("cuda" if local_rank is None else f"cuda:{int(local_rank)}") if torch.cuda.is_available() else "cpu"
        device_type = torch.device(device).type
        effective = requested
        notes = []
        if device_type == "cpu" and requested == "float16":
            effective = "float32"
            notes.append("float16 requested; float32 used on CPU (half precision is not supported there)")
        try:
            with _loading_bars(sys.stderr.isatty()):  # no progress bars in logs and captured output
                pipe = DiffusionPipeline.from_pretrained(model, revision=revision, dtype=getattr(torch, effective))
        except Exception as exc:  # noqa: BLE001 - one line for the command
            raise ImageBackendError(f"cannot load diffusers pipeline {model!r}: {type(exc).__name__}: {exc}") from None
        if attention_slicing and hasattr(pipe, "enable_attention_slicing"):
            pipe.enable_attention_slicing()
        pipe.to(device)
        pipe.set_progress_bar_config(disable=True)
        self._torch = torch
        self.pipeline = pipe
        self.device = device
        self.model_id = str(model)
        self.revision = _resolved_revision(str(model), revision)
        self._base_settings = {
            "backend": "diffusers",
            "pipeline": type(pipe).__name__,
            "dtype": effective,
            "requested_dtype": requested,
            "attention_slicing": bool(attention_slicing),
            "generator_device": device_type,
        }
        if notes:
            self._base_settings["notes"] = notes

    def _generator(self, seed: int):
        return self._torch.Generator(self.device).manual_seed(int(seed))


class DiffusersTextToImage(_DiffusersBase):
    """A local ``diffusers`` text-to-image pipeline (``DiffusionPipeline.from_pretrained``).

    Defaults follow the VIGNETTE authors' ``gen_image_sd.py``: float16, attention slicing, 20 steps,
    the pipeline's own guidance scale and size when ``guidance_scale`` / ``height`` / ``width`` are
    None. On CPU float16 becomes float32 (recorded in ``settings["notes"]``). The seed goes to
    ``torch.Generator(device).manual_seed(seed)``: the same seed, model, settings and device kind
    give the same image.
    """

    def __init__(self, model: str, *, revision: str | None = None, dtype: str = "float16", steps: int = 20,
                 guidance_scale: float | None = None, height: int | None = None, width: int | None = None,
                 attention_slicing: bool = True, device: str | None = None):
        super().__init__(model, revision=revision, dtype=dtype, device=device, attention_slicing=attention_slicing)
        self.steps, self.guidance_scale, self.height, self.width = int(steps), guidance_scale, height, width
        self.settings = {**self._base_settings, "steps": self.steps, "guidance_scale": guidance_scale, "height": height, "width": width}

    def generate(self, prompt: str, seed: int) -> Image.Image:
        kwargs: dict[str, Any] = {"num_inference_steps": self.steps, "generator": self._generator(seed)}
        for name, value in (("guidance_scale", self.guidance_scale), ("height", self.height), ("width", self.width)):
            if value is not None:
                kwargs[name] = value
        with self._torch.inference_mode():
            return self.pipeline(prompt, **kwargs).images[0]


class DiffusersImageEditor(_DiffusersBase):
    """A local instruction-editing ``diffusers`` pipeline (e.g. ``StableDiffusionInstructPix2PixPipeline``)."""

    def __init__(self, model: str, *, revision: str | None = None, dtype: str = "float16", steps: int = 20,
                 image_guidance_scale: float | None = None, guidance_scale: float | None = None,
                 device: str | None = None, attention_slicing: bool = False):
        super().__init__(model, revision=revision, dtype=dtype, device=device, attention_slicing=attention_slicing)
        self.steps, self.image_guidance_scale, self.guidance_scale = int(steps), image_guidance_scale, guidance_scale
        self.settings = {**self._base_settings, "steps": self.steps, "image_guidance_scale": image_guidance_scale,
                         "guidance_scale": guidance_scale}

    def edit(self, image: Image.Image, instruction: str, seed: int) -> Image.Image:
        kwargs: dict[str, Any] = {"num_inference_steps": self.steps, "generator": self._generator(seed)}
        for name, value in (("image_guidance_scale", self.image_guidance_scale), ("guidance_scale", self.guidance_scale)):
            if value is not None:
                kwargs[name] = value
        with self._torch.inference_mode():
            return self.pipeline(prompt=instruction, image=image.convert("RGB"), **kwargs).images[0]


class OpenAIImages:
    """Any OpenAI-compatible images endpoint: ``POST {base_url}/images/generations`` and ``/images/edits``.

    Responses must carry ``data[0].b64_json``. Requests that fail with 429, a 5xx status, a timeout
    or a connection error are retried at most ``retries`` times, waiting ``backoff * 2**attempt``
    seconds (or the server's ``Retry-After``, at most 60 s); other statuses fail at once. The API key
    is read from the environment variable ``api_key_env`` (None: send no key, for local servers) and
    is kept out of ``settings``, manifests, logs and error messages. Hosted models are generally not
    reproducible from a seed; ``send_seed=True`` passes ``seed`` for servers that accept it.
    """

    def __init__(self, model: str, *, base_url: str, api_key_env: str | None = "OPENAI_API_KEY", size: str | None = "1024x1024",
                 retries: int = 3, timeout: float = 120, backoff: float = 1.0, response_format: str | None = "b64_json",
                 send_seed: bool = False, quality: str | None = None):
        if api_key_env is not None and not os.environ.get(api_key_env):
            raise ImageBackendError(f"environment variable {api_key_env} is not set (the images endpoint's API key is read from it only)")
        self._api_key = os.environ.get(api_key_env) if api_key_env else None
        self.model_id = str(model)
        self.revision = None
        self.base_url = base_url.rstrip("/")
        self.size, self.retries, self.timeout, self.backoff = size, int(retries), float(timeout), float(backoff)
        self.response_format, self.send_seed, self.quality = response_format, bool(send_seed), quality
        self.settings = {"backend": "openai-images", "base_url": self.base_url, "size": size, "quality": quality,
                         "response_format": response_format, "send_seed": self.send_seed}

    def _redact(self, text: str) -> str:
        return text.replace(self._api_key, "***") if self._api_key else text

    def _fields(self, prompt: str, seed: int) -> dict[str, Any]:
        fields: dict[str, Any] = {"model": self.model_id, "prompt": prompt, "n": 1}
        for name, value in (("size", self.size), ("response_format", self.response_format), ("quality", self.quality)):
            if value is not None:
                fields[name] = value
        if self.send_seed:
            fields["seed"] = int(seed)
        return fields

    def _post(self, route: str, *, json_body: dict | None = None, data: dict | None = None, files: dict | None = None) -> Image.Image:
        import requests

        url = f"{self.base_url}/{route}"
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        last = ""
        for attempt in range(self.retries + 1):
            wait = self.backoff * 2**attempt
            try:
                response = requests.post(url, json=json_body, data=data, files=files, headers=headers, timeout=self.timeout)
            except (requests.ConnectionError, requests.Timeout) as exc:
                last = f"{type(exc).__name__}"
            else:
                if response.status_code == 200:
                    return self._decode(response)
                last = f"HTTP {response.status_code}: {response.text[:200]}"
                if response.status_code != 429 and response.status_code < 500:
                    break
                retry_after = response.headers.get("Retry-After")
                if retry_after:
                    try:
                        wait = min(float(retry_after), 60.0)
                    except ValueError:
                        pass
            if attempt < self.retries:
                time.sleep(wait)
        raise ImageBackendError(self._redact(f"{url} failed after {attempt + 1} attempt(s): {last}"))

    def _decode(self, response) -> Image.Image:
        try:
            payload = response.json()
            encoded = payload["data"][0]["b64_json"]
            image = Image.open(io.BytesIO(base64.b64decode(encoded)))
            image.load()
        except Exception as exc:  # noqa: BLE001 - one line for the command
            raise ImageBackendError(self._redact(f"{self.base_url}: the response has no decodable data[0].b64_json image ({type(exc).__name__})")) from None
        return image

    def generate(self, prompt: str, seed: int) -> Image.Image:
        return self._post("images/generations", json_body=self._fields(prompt, seed))

    def edit(self, image: Image.Image, instruction: str, seed: int) -> Image.Image:
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
        fields = {k: str(v) for k, v in self._fields(instruction, seed).items()}
        return self._post("images/edits", data=fields, files={"image": ("image.png", buffer.getvalue(), "image/png")})

    def __repr__(self) -> str:  # never the key
        return f"OpenAIImages(model={self.model_id!r}, base_url={self.base_url!r})"
