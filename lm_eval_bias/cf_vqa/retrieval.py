"""Text embedders for exemplar retrieval (Counterfactual VQA's HNER prompting).

The paper ranks exemplar questions by CLIP ViT-L/14 text-embedding similarity (Sec. 4.3). Embedder
specs:

- ``tfidf`` (default, needs nothing from the Hub): smoothed idf, l2-normalised, word unigrams and
  bigrams;
- ``clip:<path>``: the paper's embedder, the text tower of a local CLIP checkpoint loaded with
  ``transformers`` (``CLIPModel`` + its tokenizer; e.g. a local copy of ``openai/clip-vit-large-patch14``),
  ``get_text_features`` l2-normalised, texts truncated to the model's 77 positions;
- ``sentence-transformers:<path>``: a local sentence-transformers model (package installed locally).

The embedder's name (the spec) is recorded in every HNER doc and record.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Sequence

import numpy as np

DEFAULT_EMBEDDER = "tfidf"


def _terms(text: str) -> list[str]:
    words = re.findall(r"[a-z0-9]+", text.lower())
    return words + [f"{a} {b}" for a, b in zip(words, words[1:])]


class TfidfEmbedder:
    name = "tfidf"

    def fit(self, corpus: Sequence[str]) -> "TfidfEmbedder":
        docs = [set(_terms(t)) for t in corpus]
        df = Counter(term for doc in docs for term in doc)
        self.vocab = {term: i for i, term in enumerate(sorted(df))}
        n = len(corpus)
        self.idf = np.asarray([math.log((1 + n) / (1 + df[t])) + 1.0 for t in sorted(df)])
        return self

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        matrix = np.zeros((len(texts), len(self.vocab)))
        for row, text in enumerate(texts):
            for term, count in Counter(_terms(text)).items():
                col = self.vocab.get(term)
                if col is not None:
                    matrix[row, col] = count * self.idf[col]
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return matrix / np.where(norms > 0, norms, 1.0)


class SentenceTransformerEmbedder:
    def __init__(self, model: str):
        from sentence_transformers import SentenceTransformer

        self.name = f"sentence-transformers:{model}"
        self.model = SentenceTransformer(model)

    def fit(self, corpus: Sequence[str]) -> "SentenceTransformerEmbedder":
        return self

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self.model.encode(list(texts), normalize_embeddings=True))


class ClipTextEmbedder:
    """CLIP text embeddings (the paper's retrieval, CLIP ViT-L/14) from a local checkpoint folder."""

    def __init__(self, path: str, batch_size: int = 64):
        from transformers import AutoTokenizer, CLIPModel

        self.name = f"clip:{path}"
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.tokenizer.padding_side = "right"  # CLIP pools at the end-of-text token
        self.model = CLIPModel.from_pretrained(path).eval()
        self.max_length = min(int(self.tokenizer.model_max_length),
                              int(self.model.config.text_config.max_position_embeddings))
        self.batch_size = batch_size

    def fit(self, corpus: Sequence[str]) -> "ClipTextEmbedder":
        return self

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        import torch

        rows = []
        with torch.no_grad():
            for start in range(0, len(texts), self.batch_size):
                batch = self.tokenizer(list(texts[start:start + self.batch_size]), padding=True, truncation=True,
                                       max_length=self.max_length, return_tensors="pt")
                features = self.model.get_text_features(input_ids=batch["input_ids"],
                                                        attention_mask=batch["attention_mask"])
                features = getattr(features, "pooler_output", features)  # transformers 5 returns an output object
                rows.append(features.float().cpu().numpy())
        matrix = np.concatenate(rows) if rows else np.zeros((0, 0))
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return matrix / np.where(norms > 0, norms, 1.0)


def make_embedder(spec: str = DEFAULT_EMBEDDER):
    if spec == "tfidf":
        return TfidfEmbedder()
    if spec.startswith("clip:"):
        return ClipTextEmbedder(spec.split(":", 1)[1])
    if spec.startswith("sentence-transformers:"):
        return SentenceTransformerEmbedder(spec.split(":", 1)[1])
    raise ValueError(f"unknown embedder {spec!r}; use 'tfidf', 'clip:<local CLIP folder>' or "
                     "'sentence-transformers:<local path>'")


def top_k(queries: Sequence[str], corpus: Sequence[str], k: int = 5, spec: str = DEFAULT_EMBEDDER,
          allowed: Sequence[Sequence[int]] | None = None) -> tuple[list[list[int]], str]:
    """Indices of the ``k`` most similar corpus texts per query (cosine; ties by corpus order), and
    the embedder's name. ``allowed[i]`` restricts query i's candidates (targeted retrieval)."""
    embedder = make_embedder(spec).fit(list(corpus))
    sims = embedder.encode(list(queries)) @ embedder.encode(list(corpus)).T
    result = []
    for i, row in enumerate(sims):
        candidates = list(range(len(corpus))) if allowed is None else list(allowed[i])
        ranked = sorted(candidates, key=lambda j: (-row[j], j))
        result.append(ranked[:k])
    return result, embedder.name
