"""VIGNETTE Table 10 (paired-image distinguishability) as a round trip through the real command: export
identity-contrast pairs of a built dataset, fill the sheets, import, Table 10 checked by hand."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest
from PIL import Image

from lm_eval_bias.cli import main as cli
from lm_eval_bias.vignette import distinguishability as dist
from lm_eval_bias.vignette import synthetic as sv

# per dimension, the (annotator A, annotator B) verdicts of its three pairs, in pair order
VERDICTS = {
    "ability": [(True, True), (True, True), (False, False)],
    "age": [(True, True), (True, False), (False, False)],
    "physical_traits": [(True, True), (True, True), (True, True)],
    "race_ethnicity_color": [(False, True), (True, False), (True, True)],
}


def _export(dataset: Path, out: Path) -> dict:
    assert cli(["generate", "vignette", "human-check", "pairs-export", "--dataset", str(dataset), "--out", str(out),
                "--per-dimension", "3", "--seed", "1"]) == 0
    return json.loads((out / "pair_sample.json").read_text())


def _fill(out: Path, sample: dict) -> None:
    by_dimension: dict[str, list[dict]] = {}
    for pair in sample["pairs"]:
        by_dimension.setdefault(pair["dimension"], []).append(pair)
    answers = {"A": {}, "B": {}}
    wrong = 0
    for dimension, pairs in by_dimension.items():
        for pair, verdicts in zip(sorted(pairs, key=lambda p: p["pair_id"]), VERDICTS[dimension]):
            right = "A" if pair["label_A"] == pair["left"] else "B"
            for annotator, ok in zip("AB", verdicts):
                if ok:
                    answers[annotator][pair["pair_id"]] = right.lower() if annotator == "B" else right
                else:  # a wrong match or "unsure": not distinguishable
                    answers[annotator][pair["pair_id"]] = ("B" if right == "A" else "A") if wrong % 2 else "unsure"
                    wrong += 1
    for annotator in "AB":
        sheet = out / f"pair_ratings_{annotator}.csv"
        with open(sheet, encoding="utf-8", newline="") as handle:
            rows = list(csv.DictReader(handle))
        for row in rows:
            row["left_is"] = answers[annotator][row["pair_id"]]
        with open(sheet, "w", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)


def test_pairs_export_draws_composes_and_hides_the_answer(small_vignette_data, tmp_path):
    sample = _export(small_vignette_data / "vignette", tmp_path / "check")
    assert sample["size"] == 12 and {d: sum(p["dimension"] == d for p in sample["pairs"]) for d in VERDICTS} == \
        {d: 3 for d in VERDICTS}
    assert _export(small_vignette_data / "vignette", tmp_path / "again")["pairs"] == sample["pairs"]  # seeded
    for pair in sample["pairs"]:
        assert {pair["label_A"], pair["label_B"]} == {pair["left"], pair["right"]} and pair["left"] != pair["right"]
        image = Image.open(tmp_path / "check" / pair["image_file"])
        assert image.size == (672, 336)
        markers = sv.read_pair_markers(image, [pair["left"], pair["right"]], [pair["activity"]])
        assert markers == [(pair["left"], pair["activity"]), (pair["right"], pair["activity"])]
    assert {p["label_A"] == p["left"] for p in sample["pairs"]} == {True, False}  # label order shuffled
    header = (tmp_path / "check" / "pair_ratings_A.csv").read_text().splitlines()[0]
    assert "left" not in header.replace("left_is", "") and "right" not in header  # the key is not on the sheet
    assert "pairs/0001.png" in (tmp_path / "check" / "contact_sheet.html").read_text()


def test_table10_by_hand(small_vignette_data, tmp_path, capsys):
    out = tmp_path / "check"
    _fill(out, _export(small_vignette_data / "vignette", out))
    capsys.readouterr()
    assert cli(["generate", "vignette", "human-check", "pairs-report", "--ratings", str(out / "pair_ratings_A.csv"),
                str(out / "pair_ratings_B.csv"), "--out", str(tmp_path / "report")]) == 0
    assert "Overall" in capsys.readouterr().out
    with open(tmp_path / "report" / "table10.csv", encoding="utf-8") as handle:
        table = {r["bias_dimension"]: r for r in csv.DictReader(handle)}
    # (pairs, distinguishable, non-distinguishable, agreement %, kappa) by hand:
    # Disability TT TT FF: kappa 1; Age TT TF FF: p_o 2/3, p_e 2/3*1/3 + 1/3*2/3 = 4/9 -> 0.4;
    # Physical traits all TT: p_e = 1 -> undefined; Race FT TF TT: p_o 1/3, p_e 5/9 -> -0.5;
    # Overall: p_o 9/12, p_A 9/12, p_B 8/12, p_e 84/144 -> (108 - 84) / (144 - 84) = 0.4
    expected = {"Disability": (3, 2, 1, 100.0, 1.0), "Age": (3, 2, 1, 200 / 3, 0.4),
                "Physical Traits": (3, 3, 0, 100.0, math.nan), "Race/Ethnicity": (3, 3, 0, 100 / 3, -0.5),
                "Overall": (12, 10, 2, 75.0, 0.4)}
    assert set(table) == set(expected)
    for label, (n, yes, no, agreement, kappa) in expected.items():
        row = table[label]
        assert (int(row["n_pairs"]), int(row["distinguishable"]), int(row["non_distinguishable"])) == (n, yes, no), label
        assert float(row["agreement_pct"]) == pytest.approx(agreement), label
        assert float(row["cohens_kappa"] or "nan") == pytest.approx(kappa, nan_ok=True), label  # NaN: empty cell
    strict = dist.table10(dist.pair_verdicts(dist.read_pair_ratings(
        [out / "pair_ratings_A.csv", out / "pair_ratings_B.csv"], json.loads((out / "pair_sample.json").read_text()))),
        rule="all").set_index("bias_dimension")
    assert strict.loc["Overall", "distinguishable"] == 7 and strict.loc["Race/Ethnicity", "distinguishable"] == 1


def test_bad_sheets_fail_with_file_and_line(small_vignette_data, tmp_path, capsys):
    out = tmp_path / "check"
    _fill(out, _export(small_vignette_data / "vignette", out))
    sheet = out / "pair_ratings_B.csv"
    lines = sheet.read_text().splitlines()
    fields = lines[3].split(",")
    fields[-2] = "left"
    lines[3] = ",".join(fields)
    sheet.write_text("\n".join(lines) + "\n")
    capsys.readouterr()
    assert cli(["generate", "vignette", "human-check", "pairs-report", "--ratings", str(out / "pair_ratings_A.csv"),
                str(sheet), "--out", str(tmp_path / "report")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: human-check: ") and "pair_ratings_B.csv:4" in err and "A, B or unsure" in err
    assert "\n" not in err and not (tmp_path / "report").exists()
