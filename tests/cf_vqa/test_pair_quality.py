"""Counterfactual VQA pair quality (paper Table 1, App. C): Attribute Reflection and Common Content
Discrepancy checked by hand on tiny embeddings, and on the tiny CLIP for identical images."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lm_eval_bias.cf_vqa import pair_quality as pq

T = 0.7
SIGMA = 1 / (1 + math.exp(-1 / T))  # softmax weight of the one relevant patch out of two (S = [1, 0])


def test_token_sets_word_level_without_stopwords():
    sets = pq.token_sets("A young lawyer in a suit sits at a desk.", "An elderly lawyer in a suit sits at a desk.")
    assert sets.attribute_plus == ("young",) and sets.attribute_minus == ("elderly",)
    assert sets.common == ("lawyer", "suit", "sits", "desk")
    presence = pq.token_sets("A man smoking while using his phone outdoors", "A man using his phone outdoors")
    assert presence.attribute_plus == ("smoking",) and presence.attribute_minus == ()  # "while" is a stopword
    assert set(presence.common) == {"man", "using", "phone", "outdoors"}
    # a word changed in one place and kept in another is an attribute word only (Delta_b and C disjoint)
    overlap = pq.token_sets("red car next to a red house", "blue car next to a red house")
    assert overlap.attribute == ("red", "blue") and "red" not in overlap.common


def test_saliency_and_focused_representation_by_hand():
    patches = np.array([[1.0, 0.0], [0.0, 1.0]])
    token = np.array([[1.0, 0.0]])
    assert pq.saliency_weights(patches, token, T) == pytest.approx([SIGMA, 1 - SIGMA])
    norm = math.hypot(SIGMA, 1 - SIGMA)
    assert pq.focused_representation(patches, token, T) == pytest.approx([SIGMA / norm, (1 - SIGMA) / norm])
    # negative relevance is clipped to 0 (Eq. 13): an anti-aligned token weighs the patches uniformly
    assert pq.saliency_weights(patches, np.array([[-1.0, 0.0]]), T) == pytest.approx([0.5, 0.5])
    # an empty token set: uniform weights, f = normalised mean patch
    assert pq.saliency_weights(patches, np.zeros((0, 2)), T) == pytest.approx([0.5, 0.5])
    # S sums over the tokens of U: two tokens on patch 1 -> S = [2, 0]
    assert pq.saliency_weights(patches, np.array([[1.0, 0.0], [1.0, 0.0]]), T)[0] == pytest.approx(1 / (1 + math.exp(-2 / T)))


def test_attribute_reflection_by_hand():
    """v+ = e1, v- = e2, so d_b = (1, -1)/sqrt2; I+ has patches (e1, e2), I- (e2, e1); the attribute word
    of p+ embeds as e1, that of p- as e2. Then f_attr(I+, p+) = f_attr(I-, p+) = (s, 1-s)/n and
    f_attr(I-, p-) = f_attr(I+, p-) = (1-s, s)/n, so a_match = 2(2s-1)/(n sqrt2) = -a_cross and
    R_attr = 2 sqrt2 (2s - 1)/n with s = sigmoid(1/T), n = |(s, 1-s)|."""
    e1, e2 = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    n = math.hypot(SIGMA, 1 - SIGMA)
    expected = 2 * math.sqrt(2) * (2 * SIGMA - 1) / n
    value = pq.attribute_reflection(np.stack([e1, e2]), np.stack([e2, e1]), e1[None], e2[None], e1, e2, T)
    assert value == pytest.approx(expected, rel=1e-12)
    assert value > 0
    # patches are a set: their order does not matter
    assert pq.attribute_reflection(np.stack([e2, e1]), np.stack([e1, e2]), e1[None], e2[None], e1, e2, T) == pytest.approx(expected)
    # prompts with one CLIP embedding (different only after 77 tokens): no direction, a clear error
    with pytest.raises(ValueError, match="77"):
        pq.attribute_reflection(np.stack([e1, e2]), np.stack([e2, e1]), e1[None], e2[None], e1, e1, T)
    # the text directions swapped (the images carry the other prompt's states): the sign flips
    assert pq.attribute_reflection(np.stack([e1, e2]), np.stack([e2, e1]), e1[None], e2[None], e2, e1, T) == pytest.approx(-expected)


def test_common_content_discrepancy_by_hand():
    """C embeds as (1, 1)/sqrt2; I+ patches e1, e2 are equally relevant (uniform weights, f+ = (1, 1)/sqrt2);
    I- patches e1, (0.6, 0.8) have relevance 1/sqrt2 and 1.4/sqrt2."""
    c = np.array([[1.0, 1.0]]) / math.sqrt(2)
    plus = np.array([[1.0, 0.0], [0.0, 1.0]])
    minus = np.array([[1.0, 0.0], [0.6, 0.8]])
    v_plus, v_minus = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    f_plus = np.array([1.0, 1.0]) / math.sqrt(2)
    w1 = 1 / (1 + math.exp((1.4 - 1.0) / math.sqrt(2) / T))
    raw = w1 * np.array([1.0, 0.0]) + (1 - w1) * np.array([0.6, 0.8])
    f_minus = raw / np.linalg.norm(raw)
    v_c = np.array([1.0, 1.0]) / math.sqrt(2)
    u_img = 1 - f_plus @ f_minus
    u_cons = abs(f_plus @ v_c - f_minus @ v_c)
    result = pq.common_content_discrepancy(plus, minus, c, v_plus, v_minus, beta=0.6, temperature=T)
    assert result.image_term == pytest.approx(u_img, rel=1e-12)
    assert result.consistency_term == pytest.approx(u_cons, rel=1e-12)
    assert result.value == pytest.approx(0.6 * u_img + 0.4 * u_cons, rel=1e-12)
    assert pq.common_content_discrepancy(plus, plus, c, v_plus, v_minus).value == pytest.approx(0.0, abs=1e-15)
    with pytest.raises(ValueError, match="beta"):
        pq.common_content_discrepancy(plus, minus, c, v_plus, v_minus, beta=1.5)


def test_metrics_are_symmetric_in_the_two_sides():
    rng = np.random.default_rng(0)
    unit = lambda x: x / np.linalg.norm(x, axis=-1, keepdims=True)  # noqa: E731
    hp, hm = unit(rng.normal(size=(9, 8))), unit(rng.normal(size=(9, 8)))
    tp, tm, tc = unit(rng.normal(size=(2, 8))), unit(rng.normal(size=(1, 8))), unit(rng.normal(size=(4, 8)))
    vp, vm = unit(rng.normal(size=8)), unit(rng.normal(size=8))
    assert pq.attribute_reflection(hp, hm, tp, tm, vp, vm) == pytest.approx(pq.attribute_reflection(hm, hp, tm, tp, vm, vp))
    assert pq.common_content_discrepancy(hp, hm, tc, vp, vm).value == pytest.approx(
        pq.common_content_discrepancy(hm, hp, tc, vm, vp).value)


def test_summary_over_pairs_interval():
    s = pq.summarize_over_pairs([0.1, 0.2, 0.3, 0.4, 0.5], n_boot=500, seed=1)
    assert s.mean == pytest.approx(0.3) and s.n_pairs == 5
    assert 0.1 <= s.ci_low < 0.3 < s.ci_high <= 0.5
    assert math.isnan(pq.summarize_over_pairs([0.2]).ci_low)
    assert pq.summarize_over_pairs([0.2, 0.2]).ci_low == 0.2


def test_tiny_clip_identical_images_have_zero_discrepancy(tmp_path):
    from PIL import Image

    from lm_eval_bias.testing.tiny_clip import build_tiny_clip

    embedder = pq.ClipPairEmbedder(str(build_tiny_clip(tmp_path / "clip")))
    rng = np.random.default_rng(3)
    image = Image.fromarray(rng.integers(0, 255, size=(40, 40, 3), dtype=np.uint8))
    other = Image.fromarray(rng.integers(0, 255, size=(40, 40, 3), dtype=np.uint8))
    p_plus, p_minus = "a happy person in a scene with a red hat", "a happy person in a scene with a blue hat"
    same = embedder.pair_metrics(image, image.copy(), p_plus, p_minus)
    assert same["common_content_discrepancy"] == pytest.approx(0.0, abs=1e-12)
    assert same["attribute_words_plus"] == ["red"] and same["common_words"] == ["happy", "person", "scene", "hat"]
    different = embedder.pair_metrics(image, other, p_plus, p_minus)
    assert different["common_content_discrepancy"] > 1e-6
    patches = embedder.patch_embeddings(image)
    assert patches.shape == (4, 16) and np.allclose(np.linalg.norm(patches, axis=1), 1.0)  # 32 px / 16 px patches
    # the embedder's numbers are the pure functions' numbers
    sets = pq.token_sets(p_plus, p_minus)
    h1, h2 = embedder.patch_embeddings(image), embedder.patch_embeddings(other)
    v1, v2 = embedder.text_embeddings([p_plus, p_minus])
    assert different["attribute_reflection"] == pytest.approx(pq.attribute_reflection(
        h1, h2, embedder.word_embeddings(list(sets.attribute_plus)), embedder.word_embeddings(list(sets.attribute_minus)),
        v1, v2))
