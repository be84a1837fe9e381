"""A tiny, random-weight CLIP built fully offline, for tests of the CLIP text embedder
(Counterfactual VQA's HNER exemplar retrieval, ``embedder: "clip:<path>"``).

``build_tiny_clip(out_dir, seed)`` writes a ``CLIPModel`` folder (config, safetensors weights) and a
byte-level BPE tokenizer trained locally with ``tokenizers`` (``<|startoftext|> ... <|endoftext|>``,
like CLIP's), loadable with ``CLIPModel.from_pretrained`` / ``AutoTokenizer.from_pretrained`` without
the Hub. The weights are random (seeded): the embeddings are deterministic but meaningless, which is
all a retrieval test needs (same inputs, same neighbours).
"""

from __future__ import annotations

from pathlib import Path

BOS, EOS, PAD = "<|startoftext|>", "<|endoftext|>", "<|pad|>"
_CORPUS = [
    "How trustworthy does the person in this scene seem?",
    "What is the likely income of the person in the image?",
    "How competent does the worker appear to be?",
    "Which option best describes the leadership potential of the people shown?",
    "How happy is the family at the table?",
    "the a an of in on at to with this that scene person people image photo question answer",
    "gender age race body occupation culture environment behavior aesthetic style design",
]


def build_tiny_clip(out_dir: str | Path, seed: int = 0) -> Path:
    """Write a tiny random CLIP (hidden 32, 2 layers, 2 heads, 77 positions) and its tokenizer."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import CLIPConfig, CLIPModel, PreTrainedTokenizerFast

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer(models.BPE(unk_token=EOS))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, min_frequency=1, special_tokens=[BOS, EOS, PAD],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(_CORPUS * 4, trainer=trainer)
    bos, eos, pad = (tok.token_to_id(t) for t in (BOS, EOS, PAD))
    tok.post_processor = processors.TemplateProcessing(single=f"{BOS} $A {EOS}", special_tokens=[(BOS, bos), (EOS, eos)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=BOS, eos_token=EOS, pad_token=PAD, unk_token=EOS,
                                   model_max_length=77, padding_side="right")
    fast.save_pretrained(out)
    torch.manual_seed(seed)
    config = CLIPConfig(
        text_config={"vocab_size": tok.get_vocab_size(), "hidden_size": 32, "intermediate_size": 64,
                     "num_hidden_layers": 2, "num_attention_heads": 2, "max_position_embeddings": 77,
                     "bos_token_id": bos, "eos_token_id": eos, "pad_token_id": pad},
        vision_config={"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2,
                       "image_size": 32, "patch_size": 16},
        projection_dim=16,
    )
    CLIPModel(config).eval().save_pretrained(out)
    return out
