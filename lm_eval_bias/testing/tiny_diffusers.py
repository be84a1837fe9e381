"""Tiny, random-weight ``diffusers`` pipelines built fully offline, for tests of image generation.

``build_tiny_text_to_image(out_dir)`` writes a ``StableDiffusionPipeline`` folder and
``build_tiny_instruct_pix2pix(out_dir)`` a ``StableDiffusionInstructPix2PixPipeline`` folder, both
loadable with ``diffusers.DiffusionPipeline.from_pretrained(folder)`` without the Hugging Face Hub.
They are built the way diffusers' own test-suite builds its pipelines (tiny component configs,
random weights), with a CLIP tokenizer whose vocabulary is written locally (byte-level characters,
no merges) instead of the ``hf-internal-testing`` tokenizer the Hub would give.

Shape: UNet and VAE with channels (16, 32), one layer per block, group norms of 8; a 2-layer CLIP
text encoder of width 32; a PNDM scheduler. The VAE halves the resolution once, so the default
image is **32 x 32 px** (latents 16 x 16); ``height``/``width`` may be any multiple of 8. Each
folder is ~1 MB of float32 safetensors and one 32-px image with 2-20 steps takes a few
hundredths of a second on a CPU. The same seed gives the same weights (``build_*``) and the same
pixels (the pipeline with ``torch.Generator("cpu").manual_seed(seed)``).

The images are noise: enough to test naming, manifests, seeds, resume, sharding and the builders;
tests of what a picture shows use the planted markers of the synthetic sources instead.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["TINY_IMAGE_SIZE", "build_clip_tokenizer", "build_tiny_instruct_pix2pix", "build_tiny_text_to_image"]

TINY_IMAGE_SIZE = 32
_CHANNELS = (16, 32)
_GROUPS = 8
_TEXT_WIDTH = 32
_MAX_TOKENS = 77


def build_clip_tokenizer():
    """A ``CLIPTokenizer`` over the 256 byte-level characters (plain and word-final), no merges.

    Every text tokenizes (one token per byte), so prompts of any wording work; written locally, so
    nothing comes from the Hub.
    """
    from tokenizers import pre_tokenizers
    from transformers import CLIPTokenizer

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    tokens = ["<|startoftext|>", "<|endoftext|>"] + alphabet + [c + "</w>" for c in alphabet]
    vocab = {token: index for index, token in enumerate(tokens)}
    tokenizer = CLIPTokenizer(vocab=vocab, merges=[])
    tokenizer.model_max_length = _MAX_TOKENS
    return tokenizer


def _text_encoder(vocab_size: int):
    from transformers import CLIPTextConfig, CLIPTextModel

    config = CLIPTextConfig(
        bos_token_id=0,
        eos_token_id=1,
        pad_token_id=1,
        hidden_size=_TEXT_WIDTH,
        intermediate_size=37,
        layer_norm_eps=1e-05,
        num_attention_heads=4,
        num_hidden_layers=2,
        vocab_size=vocab_size,
        max_position_embeddings=_MAX_TOKENS,
    )
    return CLIPTextModel(config).eval()


def _vae():
    from diffusers import AutoencoderKL

    return AutoencoderKL(
        block_out_channels=list(_CHANNELS),
        in_channels=3,
        out_channels=3,
        down_block_types=["DownEncoderBlock2D", "DownEncoderBlock2D"],
        up_block_types=["UpDecoderBlock2D", "UpDecoderBlock2D"],
        latent_channels=4,
        layers_per_block=1,
        norm_num_groups=_GROUPS,
        sample_size=TINY_IMAGE_SIZE,
    ).eval()


def _unet(in_channels: int):
    from diffusers import UNet2DConditionModel

    return UNet2DConditionModel(
        block_out_channels=_CHANNELS,
        layers_per_block=1,
        sample_size=TINY_IMAGE_SIZE // 2,
        in_channels=in_channels,
        out_channels=4,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        cross_attention_dim=_TEXT_WIDTH,
        attention_head_dim=8,
        norm_num_groups=_GROUPS,
    ).eval()


def _build(out_dir: str | Path, seed: int, pipeline_class: str, unet_in_channels: int) -> Path:
    import diffusers
    import torch
    from diffusers import PNDMScheduler

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    tokenizer = build_clip_tokenizer()
    components = {
        "unet": _unet(unet_in_channels),
        "vae": _vae(),
        "text_encoder": _text_encoder(len(tokenizer)),
        "tokenizer": tokenizer,
        "scheduler": PNDMScheduler(skip_prk_steps=True, steps_offset=1),
        "safety_checker": None,
        "feature_extractor": None,
        "requires_safety_checker": False,
    }
    pipeline = getattr(diffusers, pipeline_class)(**components)
    pipeline.save_pretrained(out, safe_serialization=True)
    return out


def build_tiny_text_to_image(out_dir: str | Path, seed: int = 0) -> Path:
    """Write a tiny random-weight ``StableDiffusionPipeline`` to ``out_dir``; return the folder.

    Load it with ``DiffusionPipeline.from_pretrained(out_dir)`` (or
    :class:`lm_eval_bias.core.imagegen.DiffusersTextToImage`); it makes 32 x 32 px noise images.
    """
    return _build(out_dir, seed, "StableDiffusionPipeline", unet_in_channels=4)


def build_tiny_instruct_pix2pix(out_dir: str | Path, seed: int = 0) -> Path:
    """Write a tiny random-weight ``StableDiffusionInstructPix2PixPipeline`` to ``out_dir``.

    The UNet takes 8 input channels (noisy latents + the source image's latents), as InstructPix2Pix
    does. Load it with :class:`lm_eval_bias.core.imagegen.DiffusersImageEditor`.
    """
    return _build(out_dir, seed, "StableDiffusionInstructPix2PixPipeline", unet_in_channels=8)
