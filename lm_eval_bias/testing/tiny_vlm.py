"""A tiny, random-weight LLaVA built fully offline, for tests of the real model path.

``build_tiny_llava(out_dir)`` writes a ~1 MB ``LlavaForConditionalGeneration`` folder (config,
safetensors weights, generation config, a BPE tokenizer trained locally with ``tokenizers``, a PIL
image processor, a ``LlavaProcessor`` and a chat template) that loads with
``AutoModelForImageTextToText`` / ``AutoProcessor`` and with lm-eval's ``hf-multimodal`` backend,
without the Hugging Face Hub and without torchvision.

The outputs are garbage (random weights); the model exists to exercise the processor, the chat
template, image-token expansion and generation end to end. Tests of parsing and metrics should use
a planted model instead.

Shape (chosen for lm-eval and vLLM's CPU backend, which needs a head size of at least 32):

* vision: CLIP, 32x32 px images, 8 px patches, hidden 64, 2 heads (head dim 32), 2 layers;
  ``vision_feature_select_strategy="default"`` drops CLS, so **16 ``<image>`` tokens per image**;
* text: Llama, hidden 64, 2 heads (head dim 32), 2 layers, 2,048 positions, vocabulary ~600;
* the generation config is greedy (``do_sample=False``) and suppresses the special tokens
  (``<image>``, pad, unk, bos, **and eos**) and the byte tokens that are not printable ASCII, so
  ``generate`` always yields exactly ``max_new_tokens`` new tokens of readable one-line text and
  lm-eval's ``until`` strings / ``max_gen_toks`` are what stop it;
* the weights are float32 safetensors, the vision tower stored as ``vision_tower.vision_model.*``
  (the llava-hf layout, which vLLM's loader requires; transformers loads it too).
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "CHAT_TEMPLATE",
    "IMAGE_SIZE",
    "IMAGE_TOKEN",
    "NUM_IMAGE_TOKENS",
    "build_tiny_llava",
    "build_tokenizer",
]

IMAGE_TOKEN = "<image>"
BOS, EOS, PAD, UNK = "<s>", "</s>", "<pad>", "<unk>"
SPECIAL_TOKENS = [UNK, BOS, EOS, PAD, IMAGE_TOKEN]  # ids 0..4, in this order

IMAGE_SIZE = 32
PATCH_SIZE = 8
NUM_IMAGE_TOKENS = (IMAGE_SIZE // PATCH_SIZE) ** 2  # CLS dropped ("default" strategy)
HIDDEN = 64
HEADS = 2  # head_dim 32: vLLM's CPU attention needs >= 32
LAYERS = 2
MAX_POSITIONS = 2048
VOCAB_SIZE = 640

# LLaVA-1.5-like: "USER: <image>\n... ASSISTANT:". No BOS here: the tokenizer's post-processor adds
# it when the rendered prompt is tokenized (as lm-eval and AutoProcessor do), so it is not doubled.
CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{%- if message['role'] == 'system' -%}{{- 'SYSTEM: ' -}}"
    "{%- elif message['role'] == 'user' -%}{{- 'USER: ' -}}"
    "{%- else -%}{{- 'ASSISTANT: ' -}}{%- endif -%}"
    "{%- if message['content'] is string -%}{{- message['content'] -}}"
    "{%- else -%}{%- for item in message['content'] -%}"
    "{%- if item['type'] == 'image' -%}{{- '<image>' -}}"
    "{%- elif item['type'] == 'text' -%}{{- item['text'] -}}{%- endif -%}"
    "{%- endfor -%}{%- endif -%}"
    "{%- if message['role'] == 'assistant' -%}{{- eos_token -}}{%- endif -%}"
    "{{- '\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- 'ASSISTANT:' -}}{%- endif -%}"
)

# Small built-in corpus: prompt words of the bias tasks, option letters, digits, money, punctuation.
_CORPUS = [
    "USER: ASSISTANT: SYSTEM: Question: Answer: Options: Choose one option. Reply with the letter only.",
    "Look at the two images. Which person is more likely to be the doctor, the nurse, the engineer,",
    "the teacher, the pilot, the cook, the lawyer, the cashier, the manager or the scientist?",
    "The first image shows a man, the second image shows a woman. The person on the left, on the right.",
    "A B C D E F (A) (B) (C) (D) (E) (F) A. B. C. D. E. F. A) B) C) D) E) F) Yes No Unknown Neither Both",
    "0 1 2 3 4 5 6 7 8 9 10 12 15 20 25 30 40 50 60 70 80 90 100 1000 2024 2025 0.5 1.5 99.9",
    "$1,000 $25,000 $50,000 $100,000 $1,500,000 per year salary income hourly wage dollars",
    "How old is this person? What is their job? How much do they earn? Estimate the age in years.",
    "Is this statement true or false? Describe the image in one sentence. Who is more trustworthy?",
    "young old adult child elderly male female nonbinary Black White Asian Hispanic Latino Arab Indian",
    "criminal suspect witness victim leader friendly hostile competent warm intelligent lazy rich poor",
    "I cannot determine this from the image. It is not possible to tell. The answer is",
    "please, thank you, because, therefore, however: \"quoted\" 'text' [x] {y} <z> - _ / ? ! ; : % & * + =",
    "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ",
]


def build_tokenizer():
    """Train the byte-level BPE tokenizer offline and wrap it as a ``PreTrainedTokenizerFast``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token=UNK))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        min_frequency=1,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_CORPUS * 4, trainer=trainer)
    bos_id = tok.token_to_id(BOS)
    tok.post_processor = processors.Sequence(
        [
            processors.ByteLevel(trim_offsets=False),
            processors.TemplateProcessing(
                single=f"{BOS} $A", pair=f"{BOS} $A {BOS} $B", special_tokens=[(BOS, bos_id)]
            ),
        ]
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=BOS,
        eos_token=EOS,
        pad_token=PAD,
        unk_token=UNK,
        extra_special_tokens={"image_token": IMAGE_TOKEN},
        model_max_length=MAX_POSITIONS,
        padding_side="left",
        chat_template=CHAT_TEMPLATE,
    )
    return fast


def _suppressed_token_ids(tokenizer) -> list[int]:
    """Special tokens and byte tokens that do not decode to printable ASCII (control bytes, UTF-8
    fragments): suppressing them keeps the random model's output readable single-line text."""
    suppressed = []
    for token_id in range(len(tokenizer)):
        text = tokenizer.decode([token_id])
        if token_id in tokenizer.all_special_ids or not (text.isascii() and text.isprintable()):
            suppressed.append(token_id)
    return suppressed


def _rename_vision_weights_for_vllm(out: Path) -> None:
    """Store the vision tower as ``vision_tower.vision_model.*`` (the llava-hf checkpoint layout).

    transformers 5 saves ``vision_tower.*`` but loads either name (``CLIPVisionModel`` drops a
    ``vision_model.`` prefix); vLLM's LLaVA loader only accepts ``vision_tower.vision_model.*``.
    """
    from safetensors.torch import load_file, save_file

    path = out / "model.safetensors"
    state = load_file(path)
    renamed = {}
    for key, tensor in state.items():
        if key.startswith("vision_tower.") and not key.startswith("vision_tower.vision_model."):
            key = "vision_tower.vision_model." + key[len("vision_tower.") :]
        renamed[key] = tensor.contiguous()
    save_file(renamed, path, metadata={"format": "pt"})


def build_tiny_llava(out_dir: str | Path, seed: int = 0) -> Path:
    """Build a random-weight tiny LLaVA into ``out_dir`` (created) and return it as a ``Path``.

    Deterministic for a given ``seed``: the same seed gives byte-identical weights and tokenizer.
    Needs only ``torch``, ``transformers`` (>= 5, PIL image processors), ``tokenizers`` and
    ``safetensors``; it never contacts the Hub and does not import torchvision. Takes ~0.1 s after
    imports and writes ~1.1 MB. Loads back with ``AutoModelForImageTextToText.from_pretrained(out_dir)``
    and ``AutoProcessor.from_pretrained(out_dir)``.
    """
    import torch
    from transformers import (
        CLIPVisionConfig,
        GenerationConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
    )
    from transformers.models.llava.image_processing_pil_llava import LlavaImageProcessorPil

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)

    tokenizer = build_tokenizer()
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS}

    vision_config = CLIPVisionConfig(
        hidden_size=HIDDEN,
        intermediate_size=2 * HIDDEN,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        image_size=IMAGE_SIZE,
        patch_size=PATCH_SIZE,
        projection_dim=HIDDEN,
    )
    text_config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=HIDDEN,
        intermediate_size=2 * HIDDEN,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        num_key_value_heads=HEADS,
        head_dim=HIDDEN // HEADS,
        max_position_embeddings=MAX_POSITIONS,
        bos_token_id=ids[BOS],
        eos_token_id=ids[EOS],
        pad_token_id=ids[PAD],
        tie_word_embeddings=False,
    )
    config = LlavaConfig(
        vision_config=vision_config,
        text_config=text_config,
        image_token_index=ids[IMAGE_TOKEN],
        image_seq_length=NUM_IMAGE_TOKENS,
        vision_feature_select_strategy="default",
        vision_feature_layer=-2,
        tie_word_embeddings=False,
    )
    config.pad_token_id = ids[PAD]

    with torch.random.fork_rng(devices=[]):  # leave the caller's global RNG state untouched
        torch.manual_seed(seed)
        model = LlavaForConditionalGeneration(config).to(torch.float32).eval()

    model.generation_config = GenerationConfig(
        do_sample=False,
        bos_token_id=ids[BOS],
        eos_token_id=ids[EOS],
        pad_token_id=ids[PAD],
        suppress_tokens=_suppressed_token_ids(tokenizer),
    )
    model.save_pretrained(out)
    _rename_vision_weights_for_vllm(out)

    image_processor = LlavaImageProcessorPil(
        size={"shortest_edge": IMAGE_SIZE},
        crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE},
    )
    processor = LlavaProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        patch_size=PATCH_SIZE,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,  # CLIP's CLS; "default" strategy removes it again
        chat_template=CHAT_TEMPLATE,
        image_token=IMAGE_TOKEN,
    )
    processor.save_pretrained(out)
    return out


def build_tiny_llama(out_dir: str | Path, seed: int = 0) -> Path:
    """A random-weight tiny text-only Llama with the same offline tokenizer and chat template, for
    text-only tasks (FACT-OR-FAIR) through lm-eval's ``hf`` backend. ~0.6 MB, deterministic per seed."""
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer()
    tokenizer.chat_template = CHAT_TEMPLATE
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS}
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=HIDDEN, intermediate_size=2 * HIDDEN, num_hidden_layers=LAYERS,
        num_attention_heads=HEADS, num_key_value_heads=HEADS, head_dim=HIDDEN // HEADS,
        max_position_embeddings=MAX_POSITIONS, bos_token_id=ids[BOS], eos_token_id=ids[EOS], pad_token_id=ids[PAD],
        tie_word_embeddings=False,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config).to(torch.float32).eval()
    model.generation_config = GenerationConfig(do_sample=False, bos_token_id=ids[BOS], eos_token_id=ids[EOS],
                                               pad_token_id=ids[PAD], suppress_tokens=_suppressed_token_ids(tokenizer))
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out
