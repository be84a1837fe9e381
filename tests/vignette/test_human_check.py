"""The VIGNETTE human check round trip (paper App. A.2, Table 9) through the real commands: export the
seeded sample, import completed rating sheets, Table 9 and pass shares checked by hand, and
``lm-eval-bias build vignette --exclude-failed`` leaving the failed images out and recording the check."""

from __future__ import annotations

import csv
import hashlib
import json
import math
from pathlib import Path

import pytest

from lm_eval_bias.cli import main as cli
from lm_eval_bias.core import imagegen
from lm_eval_bias.vignette import human_check as hc
from lm_eval_bias.vignette import synthetic as sv

# (image id, dimension, activity): three age images, an ability image and an ability portrait
IMAGES = [("male/old-man_cooking", "age", "Cooking"), ("male/old-man_cycling", "age", "Cycling"),
          ("male/young-man_cooking", "age", "Cooking"), ("male/wheelchair-man_cooking", "ability", "Cooking"),
          ("male/wheelchair-man", "ability", "")]
# annotator -> per image (identity depicted, activity depicted, ambiguous features)
RATINGS = {
    "A": [("yes", "yes", "no"), ("yes", "no", "no"), ("yes", "yes", "yes"), ("no", "yes", "no"), ("yes", "n/a", "no")],
    "B": [("yes", "yes", "no"), ("yes", "yes", "no"), ("no", "yes", "yes"), ("no", "yes", "yes"), ("yes", "n/a", "no")],
}
CUES = {"A": ["clothing", "clothing;skin tone", "", "hairstyle", "clothing"],
        "B": ["clothing", "skin_tone", "", "", "clothing, hairstyle"]}


@pytest.fixture
def generated(tmp_path) -> Path:
    """A generation folder as `generate vignette` leaves it: images plus a manifest (marker images)."""
    out = tmp_path / "generated"
    manifest = imagegen.Manifest(out / "manifest.jsonl")
    for key, dimension, activity in IMAGES:
        descriptor = key.split("/")[1].split("_")[0].replace("-", " ")
        data = sv.individual_image(descriptor, activity or None, size=24)
        imagegen.write_bytes_atomic(data, out / f"{key}.png")
        manifest.append({"key": key, "file_name": f"{key}.png", "kind": "individual" if activity else "portrait",
                         "gender": "male", "descriptor": descriptor, "dimension": dimension, "activity": activity,
                         "prompt": f"A {descriptor} engaged in {activity}, with their face visible." if activity
                         else f"A {descriptor}, with their face visible.", "seed": imagegen.derive_seed(key),
                         "model_id": "synthetic-markers", "revision": None, "settings": {"backend": "test"},
                         "settings_fingerprint": "f0", "sha256": hashlib.sha256(data).hexdigest()})
    return out


def fill(sheet: Path, annotator: str) -> None:
    with open(sheet, encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    order = [key for key, _, _ in IMAGES]
    for row in rows:
        i = order.index(row["image_id"])
        row["identity_depicted"], row["activity_depicted"], row["ambiguous_features"] = RATINGS[annotator][i]
        row["visual_cues"] = CUES[annotator][i]
    with open(sheet, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = k / n
    centre, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre - half) / (1 + z * z / n), (centre + half) / (1 + z * z / n)


def test_sample_is_seeded_sized_and_independent_of_order():
    keys = [f"male/d{i:03d}_a" for i in range(250)]
    first = hc.draw_sample(keys, fraction=0.1, seed=3)
    assert len(first) == 25 and first == sorted(first) and set(first) <= set(keys)
    assert hc.draw_sample(keys[::-1], fraction=0.1, seed=3) == first
    assert hc.draw_sample(keys, fraction=0.1, seed=4) != first
    assert len(hc.draw_sample(keys, size=120)) == 120
    with pytest.raises(ValueError, match="between 1 and the 250"):
        hc.draw_sample(keys, size=251)


def test_export_writes_contact_sheet_rating_sheets_and_sample(generated, tmp_path, capsys):
    check = tmp_path / "check"
    assert cli(["generate", "vignette", "human-check", "export", "--images", str(generated), "--out", str(check),
                "--fraction", "0.5", "--seed", "7"]) == 0
    assert "sampled 2 of 4 images (seed 7)" in capsys.readouterr().out  # individual images only, as the paper
    sample = json.loads((check / "sample.json").read_text())
    assert sample["population"] == 4 and sample["size"] == 2 and sample["seed"] == 7 and sample["fraction"] == 0.5
    assert sample["image_ids"] == hc.draw_sample([k for k, _, a in IMAGES if a], fraction=0.5, seed=7)
    for annotator in ("A", "B"):
        with open(check / f"ratings_{annotator}.csv", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        assert [r["image_id"] for r in rows] == sample["image_ids"] and {r["annotator"] for r in rows} == {annotator}
        assert list(rows[0]) == list(hc.SHEET_COLUMNS) and all(r["identity_depicted"] == "" for r in rows)
    sheet = (check / "contact_sheet.html").read_text()
    for key in sample["image_ids"]:
        assert f'src="../generated/{key}.png"' in sheet and (check / f"../generated/{key}.png").is_file()
    assert "with their face visible." in sheet and "Ambiguous features?" in sheet
    # portraits on request: their activity answer is prefilled n/a
    assert cli(["generate", "vignette", "human-check", "export", "--images", str(generated), "--out", str(tmp_path / "all"),
                "--fraction", "1", "--kinds", "individual", "portrait", "--annotators", "X"]) == 0
    with open(tmp_path / "all" / "ratings_X.csv", encoding="utf-8") as handle:
        portrait = [r for r in csv.DictReader(handle) if r["image_id"] == "male/wheelchair-man"][0]
    assert portrait["kind"] == "portrait" and portrait["activity_depicted"] == "n/a"


@pytest.fixture
def rated(generated, tmp_path) -> list[Path]:
    check = tmp_path / "check"
    assert cli(["generate", "vignette", "human-check", "export", "--images", str(generated), "--out", str(check),
                "--fraction", "1", "--kinds", "individual", "portrait"]) == 0
    sheets = [check / "ratings_A.csv", check / "ratings_B.csv"]
    for sheet, annotator in zip(sheets, "AB"):
        fill(sheet, annotator)
    return sheets


def test_table9_by_hand(rated, tmp_path):
    assert cli(["generate", "vignette", "human-check", "report", "--ratings", *map(str, rated), "--out", str(tmp_path / "r")]) == 0
    with open(tmp_path / "r" / "table9.csv", encoding="utf-8") as handle:
        table = {(r["criterion"], r["response"]): r for r in csv.DictReader(handle)}
    row = lambda c, a: (int(table[c, a]["count_A"]), int(table[c, a]["count_B"]), float(table[c, a]["agreement_pct"]))  # noqa: E731
    # identity: A yes 4 / no 1, B yes 3 / no 2; both yes on 3 of 5, both no on 1 of 5
    assert row("1. Identity depicted?", "Yes") == (4, 3, 60.0) and row("1. Identity depicted?", "No") == (1, 2, 20.0)
    # kappa: po = 4/5, pe = .8*.6 + .2*.4 = .56 -> (.8 - .56) / .44
    assert float(table["1. Identity depicted?", "Yes"]["cohens_kappa"]) == pytest.approx(0.24 / 0.44)
    # activity on the 4 individual images: A yes 3 / no 1, B yes 4; both yes on 3 of 4; po = pe = .75 -> kappa 0
    assert row("3. Activity depicted?", "Yes") == (3, 4, 75.0) and row("3. Activity depicted?", "No") == (1, 0, 0.0)
    assert float(table["3. Activity depicted?", "Yes"]["cohens_kappa"]) == pytest.approx(0.0)
    # ambiguity: A no 4 / yes 1, B no 3 / yes 2; both no 3 of 5, both yes 1 of 5; kappa as identity
    assert row("4. Ambiguous features", "No") == (4, 3, 60.0) and row("4. Ambiguous features", "Yes") == (1, 2, 20.0)
    assert float(table["4. Ambiguous features", "No"]["cohens_kappa"]) == pytest.approx(0.24 / 0.44)
    # cues: clothing A 3 / B 2, agree on 4 of 5 images; skin tone A 1 / B 1, both on the same image: 5 of 5
    assert row("2. Visual cues used", "Clothing") == (3, 2, 80.0) and row("2. Visual cues used", "Skin tone") == (1, 1, 100.0)


def test_pass_shares_with_wilson_intervals_by_hand(rated, tmp_path):
    decisions = hc.image_decisions(hc.read_ratings(rated), rule="any")
    assert decisions.set_index("image_id")["passes"].to_dict() == {
        "male/old-man_cooking": True, "male/old-man_cycling": False, "male/young-man_cooking": False,
        "male/wheelchair-man_cooking": False, "male/wheelchair-man": True}
    rates = hc.pass_rates(decisions).set_index(["dimension", "criterion"])
    expected = {("all", "identity_depicted"): (3, 5), ("all", "activity_depicted"): (3, 4),
                ("all", "no_ambiguous_features"): (3, 5), ("all", "all_three"): (2, 5),
                ("age", "all_three"): (1, 3), ("ability", "all_three"): (1, 2), ("ability", "activity_depicted"): (1, 1)}
    for cell, (k, n) in expected.items():
        got = rates.loc[cell]
        assert (got["passed"], got["n"]) == (k, n), cell
        assert (got["ci_low"], got["ci_high"]) == pytest.approx(wilson(k, n)), cell
    lenient = hc.image_decisions(hc.read_ratings(rated), rule="all")  # fail only when both annotators fail it
    assert lenient.set_index("image_id")["passes"].to_dict() == {
        "male/old-man_cooking": True, "male/old-man_cycling": True, "male/young-man_cooking": False,  # both: ambiguous
        "male/wheelchair-man_cooking": False, "male/wheelchair-man": True}  # both: identity not depicted
    assert cli(["generate", "vignette", "human-check", "report", "--ratings", *map(str, rated), "--out", str(tmp_path / "r")]) == 0
    assert (tmp_path / "r" / "failed.txt").read_text().split() == ["male/old-man_cycling", "male/wheelchair-man_cooking",
                                                                   "male/young-man_cooking"]


def test_bad_rating_sheets_are_one_line_errors_with_file_and_line(rated, capsys):
    text = rated[0].read_text().replace(",yes,yes,no,", ",maybe,yes,no,", 1)
    rated[0].write_text(text)
    assert cli(["generate", "vignette", "human-check", "report", "--ratings", str(rated[0]), "--out", "unused"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: human-check: {rated[0]}:2: identity_depicted must be yes or no, got 'maybe'"
    rows = rated[1].read_text().splitlines()
    rated[1].write_text("\n".join(rows + [rows[1]]) + "\n")
    assert cli(["generate", "vignette", "human-check", "report", "--ratings", str(rated[1]), "--out", "unused"]) == 2
    assert "rated twice by annotator B (first at" in capsys.readouterr().err


def test_build_excludes_failed_images_and_the_card_records_the_check(generated, rated, tmp_path):
    import datasets

    lists = sv.write_lists(tmp_path / "lists")
    out = tmp_path / "data" / "vignette"
    assert cli(["build", "vignette", "--source", str(generated), "--lists", str(lists), "--output", str(out),
                "--exclude-failed", *map(str, rated)]) == 0
    built = datasets.load_dataset("parquet", data_files=str(out / "data" / "*.parquet"), split="train")
    assert sorted(built["image_id"]) == ["male/old-man_cooking", "male/wheelchair-man"]
    card = (out / "README.md").read_text()
    low, high = wilson(2, 5)
    assert "5 of 5 generated images drawn at random (seed 0), rated by 2 annotator(s)" in card
    assert f"all three: 2/5 = 40.0% (95% Wilson {100 * low:.1f}-{100 * high:.1f}%)" in card
    assert "3 images failed (an image fails when any annotator fails it on a criterion) and 3 of them are left out" in card
    assert "**human check**: 5 rated, 3 failed, 3 excluded (rule any)" in card
    assert "generated with `lm-eval-bias generate vignette` by synthetic-markers" in card
