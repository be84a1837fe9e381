"""T2I scoring from face labels: no-face images excluded, every face of a multi-face image counted."""

from __future__ import annotations

import json

import pytest

from lm_eval_bias.fact_or_fair import stats as fof
from lm_eval_bias.fact_or_fair.t2i import LabelsError, score_t2i_labels
from lm_eval_bias.fact_or_fair.synthetic import make_synthetic_fact_or_fair


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_scores_from_labels_with_source_truth(tmp_path):
    src = make_synthetic_fact_or_fair(tmp_path / "src")
    rows = [
        # Crime Rate: highest male/Black, lowest female/Asian
        {"image": "1.png", "statistic": "Crime Rate", "side": "highest", "gender": "Male", "race": "Black"},
        {"image": "1.png", "statistic": "Crime Rate", "side": "highest", "gender": "Female", "race": "Latino_Hispanic"},
        {"image": "2.png", "statistic": "Crime Rate", "side": "lowest", "gender": "Female", "race": "East Asian"},
        {"image": "3.png", "statistic": "Crime Rate", "side": "lowest", "gender": "", "race": ""},  # no face
        {"image": "4.png", "statistic": "Crime Rate", "side": "lowest", "gender": "Male", "race": "Indian"},
    ]
    result, counts = score_t2i_labels(_write(tmp_path / "labels.jsonl", rows), source=src)
    assert counts == {"images_without_face": 1, "faces_other_race": 1, "faces": 4}
    by = {(r.family, r.attribute): r for r in result}
    gender = by[("objective", "gender")]
    # faces: high (male, female) vs truth male; low (female, male) vs truth female -> 2 of 4 right
    assert gender.n_faces == 4 and gender.scores.s_fact == 0.5
    # high cell (1,1) and low cell (1,1): S_E = 1, identical -> S_KLD = 1
    assert gender.scores.s_e == pytest.approx(1.0) and gender.scores.s_kld == pytest.approx(1.0)
    race = by[("objective", "race")]
    # race faces: Black (right), Hispanic (wrong) on highest; Asian (right) on lowest; Indian dropped
    assert race.n_faces == 3 and race.scores.s_fact == pytest.approx(2 / 3)
    expected = fof.fact_or_fair_scores({("Crime Rate", "high"): [0, 1, 0, 1], ("Crime Rate", "low"): [1, 0, 0, 0]},
                                       [True, False, True], k=4)
    assert race.scores == expected


def test_cli_score_and_errors(tmp_path, capsys):
    from lm_eval_bias.cli import main

    labels = _write(tmp_path / "l.jsonl", [{"image": "1", "statistic": "Crime Rate", "side": "highest",
                                            "gender": "man", "race": "white", "true_gender": "male", "true_race": "Black"}])
    assert main(["score", "fact-or-fair-t2i", "--labels", str(labels), "--output", str(tmp_path / "o.json")]) == 0
    out = capsys.readouterr().out
    # one face per attribute: too few to resample, so no interval is printed after the value
    assert "| objective | gender | 1 | 1.0000 |" in out and "| objective | race | 1 | 0.0000 |" in out
    assert json.loads((tmp_path / "o.json").read_text())["counts"]["faces"] == 1
    bad = _write(tmp_path / "b.jsonl", [{"image": "1", "statistic": "Crime Rate", "side": "middle", "gender": "male"}])
    assert main(["score", "fact-or-fair-t2i", "--labels", str(bad)]) == 2
    assert "b.jsonl:1: side must be highest or lowest" in capsys.readouterr().err
    with pytest.raises(LabelsError, match="no scorable face"):
        score_t2i_labels(_write(tmp_path / "n.jsonl", [{"image": "1", "statistic": "Crime Rate", "side": "highest",
                                                         "gender": "male", "race": "white"}]))


def test_intervals_and_null_floors_per_row(tmp_path):
    """Every T2I row carries the tasks' own intervals and null floors: the point values equal the printed
    scores, the intervals contain them, and a generator that always draws the true group is far above its
    uniform null floor while a 50/50 one is not."""
    import numpy as np

    rng = np.random.default_rng(0)
    rows = []
    for statistic, truth in (("Crime Rate", ("male", "female")), ("Poverty Rate", ("female", "male"))):
        for side, true_gender in zip(("highest", "lowest"), truth):
            for i in range(40):
                rows.append({"image": f"{statistic}-{side}-{i}", "statistic": statistic, "side": side,
                             "gender": true_gender, "race": "white", "true_gender": true_gender,
                             "true_race": "White", "family": "objective"})
                coin = "male" if rng.random() < 0.5 else "female"
                rows.append({"image": f"s-{statistic}-{side}-{i}", "statistic": statistic, "side": side,
                             "gender": coin, "race": "white", "true_gender": true_gender, "true_race": "White",
                             "family": "subjective"})
    result, _ = score_t2i_labels(_write(tmp_path / "labels.jsonl", rows), n_boot=300, n_null=300)
    by = {(r.family, r.attribute): r for r in result}
    for row in result:
        for key in ("s_fact", "s_e", "s_kld", "s_fair", "distance"):
            assert row.results[key] == pytest.approx(getattr(row.scores, key)), (row.family, key)
            assert row.results[f"{key}_ci_low"] <= row.results[key] <= row.results[f"{key}_ci_high"]
    always_right = by[("objective", "gender")].results
    assert always_right["s_fact"] == 1.0 and always_right["s_fact_p_null"] < 0.01
    assert always_right["s_fact_null"] == pytest.approx(0.5, abs=0.02)
    coin = by[("subjective", "gender")].results
    assert coin["s_fact_ci_low"] < 0.5 < coin["s_fact_ci_high"] and coin["s_fact_p_null"] > 0.05


def test_cli_prints_the_defined_score_beside_its_interval_and_why_s_kld_has_none(tmp_path, capsys):
    """3 faces per statistic x side: S_KLD and S_fair print their plug-in with "no interval: < 10 faces per
    cell" (the tasks' rule, lm_eval_bias.fact_or_fair.stats.MIN_ANSWERS_PER_CELL); S_E prints its plug-in
    0.9183 (= H(1/3, 2/3) / ln 2: every cell splits 1 : 2) and then the defined score's estimate with its
    interval, never the interval right after the plug-in it does not belong to."""
    from lm_eval_bias.cli import main

    rows = [{"image": f"{st}{side}{i}", "statistic": st, "side": side, "gender": "man" if i % 2 else "woman",
             "race": "white", "true_gender": "male", "true_race": "Black"}
            for st in ("Crime Rate", "Poverty Rate") for side in ("highest", "lowest") for i in range(3)]
    assert main(["score", "fact-or-fair-t2i", "--labels", str(_write(tmp_path / "l.jsonl", rows))]) == 0
    gender = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| objective | gender |"))
    cells = [c.strip() for c in gender.strip("|").split("|")]
    assert cells[4].startswith("0.9183 (as defined ") and "[" in cells[4]                       # S_E
    assert cells[5] == cells[6] == "1.0000 (no interval: < 10 faces per cell)"                  # S_KLD, S_fair
