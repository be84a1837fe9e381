"""Counterfactual image-pair quality (paper Table 1, App. C): Attribute Reflection and Common Content
Discrepancy, on CLIP ViT-B/32 embeddings.

A pair is two images (I+, I-) generated from two prompts (p+, p-) that differ only in the bias
attribute b. The functions below are pure numpy on embeddings; :class:`ClipPairEmbedder` is the thin
loader that turns images and words into those embeddings with a local CLIP folder (no Hub).

App. C.1, token-conditioned saliency
    Prompt words are split into attribute words (Delta_b) and common words (C) by word-level sequence
    matching of p+ and p- with stopwords removed (:func:`token_sets`). For an image I with
    L2-normalised patch embeddings h_1..h_N and a token set U with L2-normalised text embeddings t_k:

        R_ik = max(0, <h_i, t_k>)                                  (Eq. 13)
        S_i^U = sum_{k in U} R_ik
        M_i^U = exp(S_i^U / T) / sum_j exp(S_j^U / T),  T = 0.7     (Eq. 14)
        f_U(I, p) = sum_i M_i^U h_i / || sum_i M_i^U h_i ||          (Eq. 15)

App. C.2, metrics (v_p: the L2-normalised CLIP text embedding of prompt p)
    d_b = (v+ - v-) / ||v+ - v-||                                                       (Eq. 16)
    a_match = <f_attr(I+, p+), d_b> + <f_attr(I-, p-), -d_b>
    a_cross = <f_attr(I+, p-), d_b> + <f_attr(I-, p+), -d_b>
    Attribute Reflection R_attr = a_match - a_cross          (Eq. 17; higher is better)
    v_C = (v+ + v-) / ||v+ + v-||                                                       (Eq. 18)
    U_img = 1 - <f_com(I+, p+), f_com(I-, p-)>
    U_cons = | <f_com(I+, p+), v_C> - <f_com(I-, p-), v_C> |
    Common Content Discrepancy R_common = beta U_img + (1 - beta) U_cons, beta = 0.6  (Eq. 19; lower is better)

Choices where App. C is not specific (docs/divergences.md, docs/cf-vqa.md "Pair quality"):

- f_attr(I, p) uses the attribute words *of p* (the words of Delta_b that occur in p), so a_cross
  really conditions each image on the other prompt's attribute words; f_com uses C, which both prompts
  share.
- Token embeddings t_k: each word of U is embedded on its own by CLIP's text tower (pooled and
  projected, like a one-word prompt), because the sets are defined on words and CLIP's per-position
  hidden states are not trained to lie in the joint image-text space. Hence f_com depends on the image
  and C only, and two identical images have discrepancy exactly 0.
- Patch embeddings h_i: the vision tower's last hidden states of the patch positions (class token
  excluded) through its final layer norm and visual projection, the same map CLIP applies to the
  class token.
- An empty token set (e.g. a presence/absence pair whose "absent" prompt has no attribute word left)
  gives S^U = 0 and uniform weights: f_U is the normalised mean patch embedding.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

#: App. C.1: "we set T = 0.7"
TEMPERATURE = 0.7
#: App. C.2: "beta = 0.6 in our experiments"
BETA = 0.6

_WORD = re.compile(r"[a-z0-9]+(?:['-][a-z0-9]+)*")


def words(text: str) -> list[str]:
    """Lower-cased words of ``text`` (letters/digits, inner hyphens and apostrophes kept)."""
    return _WORD.findall(text.lower())


def default_stopwords() -> frozenset[str]:
    """scikit-learn's English stopword list (installed with lm-eval)."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


@dataclass(frozen=True)
class TokenSets:
    """Word-level split of a prompt pair (App. C.1): ``attribute_plus`` / ``attribute_minus`` are the
    attribute words (Delta_b) occurring in p+ / p-, ``common`` the shared words (C); all stopword-free
    and in order of first occurrence. ``attribute`` is Delta_b (both sides)."""

    attribute_plus: tuple[str, ...]
    attribute_minus: tuple[str, ...]
    common: tuple[str, ...]

    @property
    def attribute(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.attribute_plus + self.attribute_minus))


def token_sets(prompt_plus: str, prompt_minus: str, stopwords: Iterable[str] | None = None) -> TokenSets:
    """Split the words of two prompts into attribute words and common words (App. C.1).

    ``difflib.SequenceMatcher`` aligns the two word sequences (autojunk off); words inside matching
    blocks are common, words inside replaced/inserted/deleted spans are attribute words. Stopwords are
    removed, and a word that is an attribute word anywhere is removed from C so that Delta_b and C are
    disjoint (the paper's "so that Delta_b intersect C is empty").
    """
    stop = default_stopwords() if stopwords is None else frozenset(stopwords)
    a, b = words(prompt_plus), words(prompt_minus)
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    common: list[str] = []
    plus: list[str] = []
    minus: list[str] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            common.extend(a[i1:i2])
        else:
            plus.extend(a[i1:i2])
            minus.extend(b[j1:j2])
    keep = lambda seq: tuple(dict.fromkeys(w for w in seq if w not in stop))  # noqa: E731
    plus_set, minus_set = keep(plus), keep(minus)
    attribute = set(plus_set) | set(minus_set)
    return TokenSets(plus_set, minus_set, tuple(w for w in keep(common) if w not in attribute))


def _unit(x: np.ndarray, axis: int = -1) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    norm = np.linalg.norm(x, axis=axis, keepdims=True)
    if np.any(norm == 0):
        raise ValueError("cannot normalise a zero vector")
    return x / norm


def saliency_weights(patches: np.ndarray, tokens: np.ndarray, temperature: float = TEMPERATURE) -> np.ndarray:
    """M^U (Eq. 13-14): softmax over patches of S_i = sum_k max(0, <h_i, t_k>) / T.

    ``patches``: (N, D) L2-normalised patch embeddings; ``tokens``: (K, D) L2-normalised token
    embeddings of the set U (K may be 0: uniform weights)."""
    patches = np.asarray(patches, dtype=float)
    tokens = np.asarray(tokens, dtype=float).reshape(-1, patches.shape[1])
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    relevance = np.maximum(0.0, patches @ tokens.T)            # R_ik, (N, K)
    scores = relevance.sum(axis=1) / temperature               # S_i^U / T
    scores -= scores.max()
    weights = np.exp(scores)
    return weights / weights.sum()


def focused_representation(patches: np.ndarray, tokens: np.ndarray, temperature: float = TEMPERATURE) -> np.ndarray:
    """f_U(I, p) (Eq. 15): the saliency-weighted mean of the patch embeddings, L2-normalised."""
    weights = saliency_weights(patches, tokens, temperature)
    return _unit(weights @ np.asarray(patches, dtype=float))


def attribute_reflection(patches_plus: np.ndarray, patches_minus: np.ndarray, attr_tokens_plus: np.ndarray,
                         attr_tokens_minus: np.ndarray, text_plus: np.ndarray, text_minus: np.ndarray,
                         temperature: float = TEMPERATURE) -> float:
    """R_attr = a_match - a_cross (App. C.2, Eq. 16-17); higher: the images carry the intended attribute
    states. ``attr_tokens_plus`` / ``_minus``: embeddings of the attribute words of p+ / p-;
    ``text_plus`` / ``text_minus``: CLIP text embeddings of the two prompts."""
    v_plus, v_minus = _unit(text_plus), _unit(text_minus)
    if np.linalg.norm(v_plus - v_minus) < 1e-9:
        raise ValueError("the two prompts have the same CLIP text embedding (do they differ only after CLIP's 77 "
                         "tokens?): the attribute direction d_b is undefined")
    direction = _unit(v_plus - v_minus)                                           # d_b
    f = lambda patches, tokens: focused_representation(patches, tokens, temperature)  # noqa: E731
    a_match = f(patches_plus, attr_tokens_plus) @ direction + f(patches_minus, attr_tokens_minus) @ -direction
    a_cross = f(patches_plus, attr_tokens_minus) @ direction + f(patches_minus, attr_tokens_plus) @ -direction
    return float(a_match - a_cross)


@dataclass(frozen=True)
class Discrepancy:
    """Common Content Discrepancy and its two terms (App. C.2, Eq. 18-19)."""

    value: float
    image_term: float        # U_img
    consistency_term: float  # U_cons


def common_content_discrepancy(patches_plus: np.ndarray, patches_minus: np.ndarray, common_tokens: np.ndarray,
                               text_plus: np.ndarray, text_minus: np.ndarray, beta: float = BETA,
                               temperature: float = TEMPERATURE) -> Discrepancy:
    """R_common = beta U_img + (1 - beta) U_cons (App. C.2); lower: shared content is preserved.
    ``common_tokens``: embeddings of the common words C."""
    if not 0.0 <= beta <= 1.0:
        raise ValueError(f"beta must be in [0, 1], got {beta}")
    v_common = _unit(_unit(text_plus) + _unit(text_minus))                        # v_C
    f_plus = focused_representation(patches_plus, common_tokens, temperature)
    f_minus = focused_representation(patches_minus, common_tokens, temperature)
    u_img = 1.0 - float(f_plus @ f_minus)
    u_cons = abs(float(f_plus @ v_common) - float(f_minus @ v_common))
    return Discrepancy(beta * u_img + (1.0 - beta) * u_cons, u_img, u_cons)


@dataclass(frozen=True)
class MetricSummary:
    """Mean of a per-pair metric over pairs with a 95 % percentile bootstrap interval over pairs."""

    mean: float
    ci_low: float
    ci_high: float
    n_pairs: int


def summarize_over_pairs(values: Sequence[float], n_boot: int = 2000, seed: int = 0,
                         level: float = 0.95) -> MetricSummary:
    """Mean over pairs and its percentile bootstrap interval (pairs resampled with replacement,
    ``scipy.stats.bootstrap``); NaN interval with fewer than 2 pairs or ``n_boot`` = 0."""
    from scipy import stats

    data = np.asarray([v for v in values if v is not None and np.isfinite(v)], dtype=float)
    if data.size == 0:
        return MetricSummary(float("nan"), float("nan"), float("nan"), 0)
    mean = float(data.mean())
    if data.size < 2 or n_boot == 0:
        return MetricSummary(mean, float("nan"), float("nan"), int(data.size))
    if np.all(data == data[0]):  # every resample has the same mean
        return MetricSummary(mean, mean, mean, int(data.size))
    result = stats.bootstrap((data,), np.mean, n_resamples=n_boot, confidence_level=level, method="percentile",
                             random_state=np.random.default_rng(seed), vectorized=True)
    return MetricSummary(mean, float(result.confidence_interval.low), float(result.confidence_interval.high),
                         int(data.size))


class ClipPairEmbedder:
    """CLIP (the paper: ViT-B/32) from a local folder: patch embeddings of images, text embeddings of
    prompts and of single words, all L2-normalised numpy arrays. The image preprocessing is the
    folder's ``preprocessor_config.json`` when present, else CLIP's standard one at the model's input
    size (resize shortest side, centre crop, CLIP mean/std)."""

    def __init__(self, path: str):
        from pathlib import Path

        import torch
        from transformers import AutoTokenizer, CLIPModel

        try:  # transformers 5: the PIL processor needs no torchvision
            from transformers import CLIPImageProcessorPil as ImageProcessor
        except ImportError:  # transformers 4
            from transformers import CLIPImageProcessor as ImageProcessor

        folder = Path(path)
        if not (folder / "config.json").is_file():
            raise FileNotFoundError(f"{path}: not a local CLIP folder (no config.json)")
        self.path = str(path)
        self.model = CLIPModel.from_pretrained(path).eval()
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.tokenizer.padding_side = "right"
        size = int(self.model.config.vision_config.image_size)
        if (folder / "preprocessor_config.json").is_file():
            self.processor = ImageProcessor.from_pretrained(path)
        else:
            self.processor = ImageProcessor(size={"shortest_edge": size}, crop_size={"height": size, "width": size})
        self.max_length = min(int(self.tokenizer.model_max_length),
                              int(self.model.config.text_config.max_position_embeddings))
        self._torch = torch
        self._word_cache: dict[str, np.ndarray] = {}

    @property
    def settings(self) -> dict:
        config = self.model.config.vision_config
        return {"clip": self.path, "image_size": int(config.image_size), "patch_size": int(config.patch_size)}

    def patch_embeddings(self, image) -> np.ndarray:
        """(N, D): the image's patch tokens through the final layer norm and visual projection."""
        torch = self._torch
        pixels = self.processor(images=[image.convert("RGB")], return_tensors="pt")["pixel_values"]
        with torch.no_grad():
            hidden = self.model.vision_model(pixel_values=pixels).last_hidden_state[0, 1:]
            projected = self.model.visual_projection(self.model.vision_model.post_layernorm(hidden))
        return _unit(projected.float().numpy())

    def text_embeddings(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), D): pooled, projected CLIP text embeddings (texts truncated to 77 tokens)."""
        torch = self._torch
        if not texts:
            return np.zeros((0, int(self.model.config.projection_dim)))
        batch = self.tokenizer(list(texts), padding=True, truncation=True, max_length=self.max_length,
                               return_tensors="pt")
        with torch.no_grad():
            features = self.model.get_text_features(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
        features = getattr(features, "pooler_output", features)
        return _unit(features.float().numpy())

    def word_embeddings(self, word_list: Sequence[str]) -> np.ndarray:
        """(len(word_list), D): each word embedded on its own (cached)."""
        missing = [w for w in dict.fromkeys(word_list) if w not in self._word_cache]
        if missing:
            for w, row in zip(missing, self.text_embeddings(missing)):
                self._word_cache[w] = row
        if not word_list:
            return np.zeros((0, int(self.model.config.projection_dim)))
        return np.stack([self._word_cache[w] for w in word_list])

    def pair_metrics(self, image_plus, image_minus, prompt_plus: str, prompt_minus: str, *,
                     temperature: float = TEMPERATURE, beta: float = BETA, stopwords=None) -> dict:
        """Both metrics of one pair, with the token sets used."""
        sets = token_sets(prompt_plus, prompt_minus, stopwords)
        h_plus, h_minus = self.patch_embeddings(image_plus), self.patch_embeddings(image_minus)
        v_plus, v_minus = self.text_embeddings([prompt_plus, prompt_minus])
        reflection = attribute_reflection(h_plus, h_minus, self.word_embeddings(list(sets.attribute_plus)),
                                          self.word_embeddings(list(sets.attribute_minus)), v_plus, v_minus, temperature)
        discrepancy = common_content_discrepancy(h_plus, h_minus, self.word_embeddings(list(sets.common)),
                                                 v_plus, v_minus, beta, temperature)
        return {"attribute_reflection": reflection, "common_content_discrepancy": discrepancy.value,
                "discrepancy_image_term": discrepancy.image_term,
                "discrepancy_consistency_term": discrepancy.consistency_term,
                "attribute_words_plus": list(sets.attribute_plus), "attribute_words_minus": list(sets.attribute_minus),
                "common_words": list(sets.common)}
