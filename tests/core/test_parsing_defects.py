"""Parser additions of issue 28 stay linear in the response length (the pattern of
tests/core/test_parsing_properties.py: CPU seconds, best of three, on pathological inputs)."""

from __future__ import annotations


import pytest

from tests.core.test_parsing_properties import TIME_LIMIT_S, _timed
from lm_eval_bias.core.parsing import (explained_answer_truncated, parse_explained_answer, parse_salary_usd,
                                       spelled_numbers_to_digits)

OPTIONS = ["Men's shoes", "Women's shoes", "Children's shoes", "Sandals"]
PATHOLOGICAL = {
    "30k number words": "eighty " * 30_000,
    "15k 'and' between number words": "sixty and " * 15_000,
    "15k hyphenated number words": "twenty-" * 15_000,
    "15k 'a hundred'": "a hundred " * 15_000,
    "20k Conf labels": "Conf:" * 20_000,
    "6k abbreviated fields": "Expl: x\nExact Ans: B\nConf: high\n" * 2_000,
}



@pytest.mark.parametrize("label", list(PATHOLOGICAL))
def test_new_parsing_paths_are_fast_on_pathological_inputs(label):
    text = PATHOLOGICAL[label]
    calls = {"salary": parse_salary_usd, "spelled": spelled_numbers_to_digits,
             "explained": lambda t: parse_explained_answer(t, OPTIONS),
             "truncated": lambda t: explained_answer_truncated(t, parse_explained_answer(t, OPTIONS))}
    slow = {name: s for name, call in calls.items() if (s := _timed(call, text)) >= TIME_LIMIT_S}
    assert not slow, slow


@pytest.mark.parametrize("text,expected", [
    ("eighty thousand dollars", "80000 dollars"),
    ("one hundred and twenty-five thousand", "125000"),
    ("a hundred thousand", "100000"),
    ("eighty-five thousand five hundred", "85500"),
    ("one million two hundred thousand", "1200000"),
    ("between sixty and seventy thousand", "between 60 and 70000"),
    ("five six", "five six"),                # two numbers, not one: left as words
    ("thousand thousand", "thousand thousand"),
    ("a salary", "a salary"),                # "a" is a number only before a scale word
])
def test_spelled_numbers_by_hand(text, expected):
    assert spelled_numbers_to_digits(text) == expected
