"""lm_eval_bias.core.imagegen: seeds, shards, atomic writes, manifests, and the three backends
(tiny diffusers pipelines built offline; an OpenAI-compatible images endpoint served on 127.0.0.1)."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import threading
import warnings
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from lm_eval_bias.core import imagegen
from tests.loopback import send_json

RANK_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")


@pytest.fixture(autouse=True)
def _no_launcher_env(monkeypatch):
    for var in RANK_VARS:
        monkeypatch.delenv(var, raising=False)


# ------------------------------------------------------------------------------ seeds and shards


def test_derive_seed_is_the_first_31_bits_of_sha256():
    digest = hashlib.sha256(b"0:male/old-man_cooking").digest()
    assert imagegen.derive_seed("male/old-man_cooking") == int.from_bytes(digest[:4], "big") & 0x7FFFFFFF
    assert imagegen.derive_seed("male/old-man_cooking", base_seed=7) == \
        int.from_bytes(hashlib.sha256(b"7:male/old-man_cooking").digest()[:4], "big") & 0x7FFFFFFF
    assert imagegen.derive_seed("a") != imagegen.derive_seed("a", 1)
    assert all(0 <= imagegen.derive_seed(str(i)) < 2**31 for i in range(200))


def test_shards_are_round_robin_over_sorted_keys_and_ignore_input_order():
    items = [f"k{i:02d}" for i in range(10)]
    assert imagegen.shard_items(items, "0/3") == ["k00", "k03", "k06", "k09"]
    assert imagegen.shard_items(items[::-1], "1/3") == ["k07", "k04", "k01"]  # same set, given order kept
    parts = [imagegen.shard_items(items, f"{i}/3") for i in range(3)]
    assert sorted(sum(parts, [])) == items
    assert imagegen.shard_items(items, None) == items
    with pytest.raises(ValueError, match="need 0 <= i < n"):
        imagegen.shard_items(items, "3/3")


def test_launcher_ranks_split_alone_and_within_a_machine_shard(monkeypatch):
    items = list(range(12))
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "4")
    assert imagegen.shard_items(items) == [1, 5, 9]
    # --shard i/n over machines: the machine's part is split by the local rank
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    machine = imagegen.shard_items(items, "0/2", key=lambda x: x)
    assert machine == [2, 6, 10]  # part 1 of 2 of [0, 2, 4, 6, 8, 10]
    everything = []
    for shard in ("0/2", "1/2"):
        for rank in ("0", "1"):
            monkeypatch.setenv("LOCAL_RANK", rank)
            everything += imagegen.shard_items(items, shard)
    assert sorted(everything) == items
    monkeypatch.setenv("RANK", "4")
    with pytest.raises(ValueError, match="RANK=4"):
        imagegen.shard_items(items)


# ------------------------------------------------------------------------- atomic writes, manifest


def test_write_image_atomic_leaves_old_file_or_new_never_partial(tmp_path, monkeypatch):
    path = tmp_path / "male" / "x.png"
    imagegen.write_image_atomic(Image.new("RGB", (4, 4), (1, 2, 3)), path)
    first = path.read_bytes()
    assert Image.open(path).getpixel((0, 0)) == (1, 2, 3)

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        imagegen.write_image_atomic(Image.new("RGB", (4, 4), (9, 9, 9)), path)
    assert path.read_bytes() == first and sorted(p.name for p in path.parent.iterdir()) == ["x.png"]
    monkeypatch.undo()
    imagegen.write_image_atomic(Image.new("RGB", (4, 4), (1, 2, 3)), path)
    assert path.read_bytes() == first  # same pixels, same bytes


def test_manifest_ignores_a_torn_last_line_and_appends_on_a_fresh_line(tmp_path):
    manifest = imagegen.Manifest(tmp_path / "m.jsonl")
    manifest.append({"key": "a", "v": 1})
    with open(manifest.path, "a") as out:
        out.write('{"key": "b", "v"')  # killed mid-write
    with pytest.warns(UserWarning, match="m.jsonl:2: ignoring an incomplete manifest line"):
        assert manifest.done() == {"a": {"key": "a", "v": 1}}
    manifest.append({"key": "c", "v": 3})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert sorted(manifest.done()) == ["a", "c"]
    assert manifest.path.read_text().splitlines()[-1] == '{"key": "c", "v": 3}'


def test_merge_manifests_sorts_ignores_volatile_fields_and_refuses_conflicts(tmp_path):
    one, two = imagegen.Manifest(tmp_path / "1.jsonl"), imagegen.Manifest(tmp_path / "2.jsonl")
    one.append({"key": "b", "seed": 2, "created_at": "t1", "worker": "w1"})
    two.append({"key": "a", "seed": 1})
    two.append({"key": "b", "seed": 2, "created_at": "t2", "worker": "w2"})
    merged = imagegen.merge_manifests([one.path, two.path], tmp_path / "all.jsonl")
    assert list(merged) == ["a", "b"]
    assert [json.loads(line)["key"] for line in (tmp_path / "all.jsonl").read_text().splitlines()] == ["a", "b"]
    two.append({"key": "a", "seed": 99})
    with pytest.raises(imagegen.ManifestConflictError, match="'a'"):
        imagegen.merge_manifests([one.path, two.path, tmp_path / "all.jsonl"], tmp_path / "all.jsonl")
    assert len((tmp_path / "all.jsonl").read_text().splitlines()) == 2  # untouched on failure


def test_settings_fingerprint_and_mixing_rule():
    a = imagegen.settings_fingerprint({"steps": 20, "dtype": "float16"})
    assert a == imagegen.settings_fingerprint({"dtype": "float16", "steps": 20}) and len(a) == 16
    b = imagegen.settings_fingerprint({"steps": 4, "dtype": "float16"})
    entries = [{"key": "x", "settings_fingerprint": a}]
    assert imagegen.check_settings(entries, a) == set()
    with pytest.raises(imagegen.MixedSettingsError, match="--allow-mixed-settings"):
        imagegen.check_settings(entries, b)
    assert imagegen.check_settings(entries, b, allow_mixed=True) == {a}


# --------------------------------------------------------------------------------- diffusers


@pytest.fixture(scope="module")
def tiny_pipelines(tmp_path_factory):
    import torch

    from lm_eval_bias.testing.tiny_diffusers import build_tiny_instruct_pix2pix, build_tiny_text_to_image

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny models: threads only contend on a shared CPU
    root = tmp_path_factory.mktemp("tiny_diffusers")
    yield build_tiny_text_to_image(root / "t2i"), build_tiny_instruct_pix2pix(root / "ip2p")
    torch.set_num_threads(threads)


def _folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def test_tiny_diffusers_text_to_image_is_small_seeded_and_recorded(tiny_pipelines):
    t2i, _ = tiny_pipelines
    assert _folder_bytes(t2i) < 5_000_000
    backend = imagegen.DiffusersTextToImage(str(t2i), steps=2)
    assert isinstance(backend, imagegen.TextToImage)
    assert backend.settings["dtype"] == "float32" and backend.settings["requested_dtype"] == "float16"
    assert "float32 used on CPU" in backend.settings["notes"][0] and backend.settings["steps"] == 2
    assert backend.settings["pipeline"] == "StableDiffusionPipeline" and backend.revision is None
    one, again, other = (backend.generate("An old man engaged in cooking.", seed) for seed in (5, 5, 6))
    assert one.size == (32, 32)
    encode = lambda im: (buf := io.BytesIO(), im.save(buf, format="PNG"), buf.getvalue())[2]  # noqa: E731
    assert encode(one) == encode(again) and encode(one) != encode(other)
    assert backend.generate("x", 1).size == (32, 32)
    wide = imagegen.DiffusersTextToImage(str(t2i), steps=2, height=32, width=48, dtype="float32", attention_slicing=False)
    assert wide.generate("x", 1).size == (48, 32) and "notes" not in wide.settings


def test_tiny_instruct_pix2pix_edits_deterministically(tiny_pipelines):
    _, ip2p = tiny_pipelines
    assert _folder_bytes(ip2p) < 5_000_000
    editor = imagegen.DiffusersImageEditor(str(ip2p), steps=2, image_guidance_scale=1.5)
    assert isinstance(editor, imagegen.ImageEditor) and editor.settings["image_guidance_scale"] == 1.5
    source = Image.new("RGB", (32, 32), (200, 10, 10))
    a, b = editor.edit(source, "make the person older", 3), editor.edit(source, "make the person older", 3)
    assert a.size == (32, 32) and np.array_equal(np.asarray(a), np.asarray(b))


def test_missing_pipeline_folder_is_one_clear_error(tmp_path):
    with pytest.raises(imagegen.ImageBackendError, match="cannot load diffusers pipeline"):
        imagegen.DiffusersTextToImage(str(tmp_path / "nothing"))


# ------------------------------------------------------------------------ OpenAI-compatible images

SECRET = "sk-test-secret-4711"


def _png_b64(colour) -> str:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), colour).save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


class _Endpoint:
    """A scripted images endpoint on 127.0.0.1: statuses to answer in turn, requests recorded."""

    def __init__(self, statuses):
        self.statuses, self.requests = list(statuses), []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                endpoint.requests.append({"path": self.path, "auth": self.headers.get("Authorization"),
                                          "type": self.headers.get("Content-Type", ""), "body": body})
                status = endpoint.statuses.pop(0) if endpoint.statuses else 200
                answer = ({"created": 0, "data": [{"b64_json": _png_b64((0, 128, 255))}]} if status == 200
                        else {"error": {"message": f"status {status}"}})
                send_json(self, answer, status, {"Retry-After": "0"} if status == 429 else None)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def test_openai_images_retries_429_then_succeeds_and_keeps_the_key_out(monkeypatch):
    monkeypatch.setenv("TEST_IMAGES_KEY", SECRET)
    with _Endpoint([429, 503, 200]) as endpoint:
        backend = imagegen.OpenAIImages("gemini-2.5-flash-image", base_url=endpoint.url, api_key_env="TEST_IMAGES_KEY",
                                        retries=3, backoff=0.01)
        image = backend.generate("An old man engaged in cooking, with their face visible.", seed=11)
    assert image.getpixel((0, 0)) == (0, 128, 255)
    assert [r["path"] for r in endpoint.requests] == ["/v1/images/generations"] * 3
    assert endpoint.requests[0]["auth"] == f"Bearer {SECRET}"
    sent = json.loads(endpoint.requests[-1]["body"])
    assert sent == {"model": "gemini-2.5-flash-image", "prompt": "An old man engaged in cooking, with their face visible.",
                    "n": 1, "size": "1024x1024", "response_format": "b64_json"}
    assert SECRET not in json.dumps(backend.settings) and SECRET not in repr(backend)
    assert backend.model_id == "gemini-2.5-flash-image" and backend.revision is None


def test_openai_images_bounded_retries_and_no_retry_on_400(monkeypatch):
    monkeypatch.setenv("TEST_IMAGES_KEY", SECRET)
    with _Endpoint([500, 500, 500]) as endpoint:
        backend = imagegen.OpenAIImages("m", base_url=endpoint.url, api_key_env="TEST_IMAGES_KEY", retries=2, backoff=0.01)
        with pytest.raises(imagegen.ImageBackendError, match="after 3 attempt") as failure:
            backend.generate("p", 1)
    assert len(endpoint.requests) == 3 and SECRET not in str(failure.value)
    with _Endpoint([400]) as endpoint:
        backend = imagegen.OpenAIImages("m", base_url=endpoint.url, api_key_env="TEST_IMAGES_KEY", retries=5, backoff=0.01)
        with pytest.raises(imagegen.ImageBackendError, match="HTTP 400"):
            backend.generate("p", 1)
    assert len(endpoint.requests) == 1


def test_openai_images_edit_is_multipart_with_the_image(monkeypatch):
    monkeypatch.setenv("TEST_IMAGES_KEY", SECRET)
    with _Endpoint([200]) as endpoint:
        backend = imagegen.OpenAIImages("m", base_url=endpoint.url, api_key_env="TEST_IMAGES_KEY", send_seed=True)
        assert isinstance(backend, imagegen.ImageEditor)
        backend.edit(Image.new("RGB", (8, 8)), "make the person older", seed=5)
    request = endpoint.requests[0]
    assert request["path"] == "/v1/images/edits" and request["type"].startswith("multipart/form-data")
    assert b'name="prompt"\r\n\r\nmake the person older' in request["body"] and b'name="seed"\r\n\r\n5' in request["body"]
    assert b"\x89PNG" in request["body"]


def test_openai_images_needs_its_key_in_the_environment(monkeypatch):
    monkeypatch.delenv("TEST_IMAGES_KEY", raising=False)
    with pytest.raises(imagegen.ImageBackendError, match="TEST_IMAGES_KEY is not set"):
        imagegen.OpenAIImages("m", base_url="http://127.0.0.1:9/v1", api_key_env="TEST_IMAGES_KEY")
