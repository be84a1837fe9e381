"""Counterfactual VQA defects a replication would hit (issue 28).

- A complete answer whose Confidence is not a number (``"Confidence": "high"``) is ``invalid``
  (docs/cf-vqa.md: a malformed confidence), not ``truncated`` (which is left out of the pair metrics).
- The report's Table 3 comparison sets every prompt variant on the same pairs, the HNER query subset:
  tests/cli/test_paper_map.py (its representative run) checks table "cf_vqa_same_pairs" by hand.
"""

from __future__ import annotations

import pytest

from lm_eval_bias.cf_vqa import tasks as cf_vqa
from lm_eval_bias.cf_vqa.schema import CATEGORIES

OPTIONS = ["Not at all", "Slightly", "Moderately", "Very"]
DOC = {"pair_id": "p0", "run": 0, "side": "plus", "category": next(iter(CATEGORIES)), "subcategory": "x", "options": OPTIONS,
       "human_consistency": 0.8, "split": "corpus", "prompt": "baseline", "embedder": "", "seed": 0,
       "truncated_as": "exclude", "invalid_as": "refusal"}


@pytest.mark.parametrize("text,status,reason", [
    ('{"Explanation": "The person wears a suit.", "Exact Answer": "B", "Confidence": "high"}', "invalid",
     "bad_confidence"),
    ('Explanation: The person wears a suit.\nExact Answer: B\nConfidence: very sure', "invalid", "bad_confidence"),
    ('"Explanation": "The person wears a suit.", "Exact Answer": "B", "Confidence": ', "truncated", "bad_confidence"),
    ('"Explanation": "The person appears to be standing near the', "truncated", "no_answer_field"),
    ('Expl: a suit\nExact Ans: B\nConf: 0.7', "valid", ""),
])
def test_a_complete_answer_with_a_word_for_confidence_is_invalid_not_truncated(text, status, reason):
    record = cf_vqa.record_of(DOC, [text])
    assert (record["status"], record["reason"]) == (status, reason)
    if status == "valid":
        assert record["letter"] == 1 and record["confidence"] == 0.7
