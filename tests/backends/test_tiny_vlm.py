"""The offline tiny LLaVA: builds, loads with Auto classes, generates from two images."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("tokenizers")
Image = pytest.importorskip("PIL.Image")

from lm_eval_bias.testing.tiny_vlm import (  # noqa: E402
    IMAGE_TOKEN,
    NUM_IMAGE_TOKENS,
    build_tiny_llava,
)

MAX_NEW_TOKENS = 12


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return build_tiny_llava(tmp_path_factory.mktemp("tiny_llava"), seed=0)


@pytest.fixture(scope="module")
def loaded(tiny_dir):
    processor = transformers.AutoProcessor.from_pretrained(tiny_dir)
    model = transformers.AutoModelForImageTextToText.from_pretrained(tiny_dir).eval()
    return processor, model


def _two_images():
    # Different sizes and colours: the processor resizes and crops both to 32x32.
    return [Image.new("RGB", (64, 48), (200, 30, 30)), Image.new("RGB", (40, 90), (20, 40, 220))]


def _messages():
    return [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Image A: "},
                {"type": "image"},
                {"type": "text", "text": " Image B: "},
                {"type": "image"},
                {"type": "text", "text": " Which person is the doctor? Answer A or B."},
            ],
        }
    ]


def _generate(processor, model, prompt, images):
    enc = processor(text=prompt, images=images, return_tensors="pt")
    with torch.no_grad():
        out = model.generate(**enc, max_new_tokens=MAX_NEW_TOKENS)
    return enc, out[0, enc["input_ids"].shape[1] :]


def test_folder_is_small_and_complete(tiny_dir):
    names = {p.name for p in tiny_dir.iterdir()}
    assert {
        "config.json",
        "generation_config.json",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
        "processor_config.json",
        "chat_template.jinja",
    } <= names
    size = sum(p.stat().st_size for p in tiny_dir.rglob("*") if p.is_file())
    assert size < 5 * 1024 * 1024, size


def test_classes_and_shape(loaded):
    processor, model = loaded
    assert type(processor).__name__ == "LlavaProcessor"
    assert type(processor.image_processor).__name__.endswith("Pil")  # no torchvision needed
    assert type(model).__name__ == "LlavaForConditionalGeneration"
    text = model.config.text_config
    assert text.hidden_size // text.num_attention_heads >= 32  # vLLM CPU attention
    vision = model.config.vision_config
    assert vision.hidden_size // vision.num_attention_heads >= 32
    assert processor.tokenizer.convert_tokens_to_ids(IMAGE_TOKEN) == model.config.image_token_id


def test_generate_two_images_via_chat_template(loaded):
    processor, model = loaded
    prompt = processor.apply_chat_template(_messages(), add_generation_prompt=True)
    assert prompt.count(IMAGE_TOKEN) == 2
    assert prompt.startswith("USER: ") and prompt.endswith("ASSISTANT:")

    enc, new = _generate(processor, model, prompt, _two_images())
    # Each placeholder expands to 16 image tokens; both images reach the vision tower.
    assert int((enc["input_ids"] == model.config.image_token_id).sum()) == 2 * NUM_IMAGE_TOKENS
    assert tuple(enc["pixel_values"].shape) == (2, 3, 32, 32)
    assert enc["input_ids"][0, 0].item() == processor.tokenizer.bos_token_id  # one BOS, not two
    assert enc["input_ids"][0, 1].item() != processor.tokenizer.bos_token_id

    # eos and special tokens are suppressed: always exactly max_new_tokens of printable text.
    assert len(new) == MAX_NEW_TOKENS
    text = processor.decode(new, skip_special_tokens=True)
    assert isinstance(text, str) and text.strip()
    assert text.isascii() and text.isprintable()

    # Greedy and deterministic; the images matter (swapping them changes the output).
    _, again = _generate(processor, model, prompt, _two_images())
    assert torch.equal(new, again)
    _, swapped = _generate(processor, model, prompt, _two_images()[::-1])
    assert not torch.equal(new, swapped)


def test_generate_two_images_plain_prompt(loaded):
    processor, model = loaded
    prompt = f"Image A: {IMAGE_TOKEN} Image B: {IMAGE_TOKEN} Question: who is older?\nAnswer:"
    enc, new = _generate(processor, model, prompt, _two_images())
    assert int((enc["input_ids"] == model.config.image_token_id).sum()) == 2 * NUM_IMAGE_TOKENS
    assert len(new) == MAX_NEW_TOKENS
    assert isinstance(processor.decode(new, skip_special_tokens=True), str)


def test_vision_weights_use_llava_hf_layout(tiny_dir):
    from safetensors import safe_open

    with safe_open(tiny_dir / "model.safetensors", "pt") as f:
        keys = list(f.keys())
    vision = [k for k in keys if k.startswith("vision_tower.")]
    assert vision and all(k.startswith("vision_tower.vision_model.") for k in vision)


def test_same_seed_same_weights(tiny_dir, tmp_path):
    from safetensors.torch import load_file

    again = build_tiny_llava(tmp_path / "again", seed=0)
    other = build_tiny_llava(tmp_path / "other", seed=1)
    for name in ("tokenizer.json", "config.json", "generation_config.json"):
        assert (tiny_dir / name).read_bytes() == (again / name).read_bytes(), name
    first = load_file(tiny_dir / "model.safetensors")
    second = load_file(again / "model.safetensors")
    third = load_file(other / "model.safetensors")
    assert first.keys() == second.keys() == third.keys()
    assert all(torch.equal(first[k], second[k]) for k in first)
    assert not all(torch.equal(first[k], third[k]) for k in first)


def test_lm_eval_hf_multimodal_generate_until(tiny_dir):
    """lm-eval's own hf-multimodal backend, two images per request, with and without chat template."""
    pytest.importorskip("lm_eval")
    import lm_eval.models  # noqa: F401  (register built-in models first)
    from lm_eval.api.instance import Instance
    from lm_eval.models.hf_vlms import HFMultimodalLM

    lm = HFMultimodalLM(pretrained=str(tiny_dir), device="cpu", batch_size=2)
    context = "Image A: <image> Image B: <image> Question: who is the doctor?\nAnswer:"
    gen_kwargs = {"until": ["\n\n"], "max_gen_toks": 6, "do_sample": False}

    def requests(ctx):
        return [
            Instance(
                request_type="generate_until",
                doc={},
                arguments=(ctx, dict(gen_kwargs), {"visual": imgs}),
                idx=0,
            )
            for imgs in (_two_images(), _two_images()[::-1], _two_images())
        ]

    plain = lm.generate_until(requests(context), disable_tqdm=True)
    assert len(plain) == 3 and all(isinstance(s, str) and s.strip() for s in plain)
    assert plain[0] == plain[2]

    chat_prompt = lm.apply_chat_template([{"role": "user", "content": context}])
    assert chat_prompt.count(IMAGE_TOKEN) == 2 and chat_prompt.endswith("ASSISTANT:")
    chat = lm.generate_until(requests(chat_prompt), disable_tqdm=True)
    assert len(chat) == 3 and all(isinstance(s, str) and s.strip() for s in chat)
