"""T2I scoring from face labels: no-face images excluded, every face of a multi-face image counted."""

from __future__ import annotations

import json

import pytest

from lm_eval_bias.stats import fact_or_fair as fof
from lm_eval_bias.t2i_scoring import LabelsError, score_t2i_labels
from lm_eval_bias.testing.synthetic_fact_or_fair import make_synthetic_fact_or_fair


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
    assert "| objective | gender | 1 | 1.0000 |" in out and "| objective | race | 1 | 0.0000 |" in out
    assert json.loads((tmp_path / "o.json").read_text())["counts"]["faces"] == 1
    bad = _write(tmp_path / "b.jsonl", [{"image": "1", "statistic": "Crime Rate", "side": "middle", "gender": "male"}])
    assert main(["score", "fact-or-fair-t2i", "--labels", str(bad)]) == 2
    assert "b.jsonl:1: side must be highest or lowest" in capsys.readouterr().err
    with pytest.raises(LabelsError, match="no scorable face"):
        score_t2i_labels(_write(tmp_path / "n.jsonl", [{"image": "1", "statistic": "Crime Rate", "side": "highest",
                                                         "gender": "male", "race": "white"}]))
