"""VIGNETTE real vs synthetic on PATA (App. A.6, Tables 12-19, Figs. 9-10): a PATA-style folder and the
matched VIGNETTE subset built into the VIGNETTE layout, the unchanged vignette_decision task run on both
through the harness with the planted bias-probe model, and `lm-eval-bias vignette-real-vs-synthetic`
checked against counts taken by hand from the logged samples."""

from __future__ import annotations

import csv
import io
import json
import math
from collections import Counter
from pathlib import Path

import pytest

from lm_eval_bias.vignette import real_images as ri
from lm_eval_bias.vignette import synthetic as sv

ACTIVITIES = ("Cooking", "Programming")
FEMALES = [ri.descriptor(i, "female") for i in ri.PATA_IDENTITIES]
MALES = [ri.descriptor(i, "male") for i in ri.PATA_IDENTITIES]


def _image(descriptor: str, activity: str, size=(32, 32)) -> bytes:
    from PIL import Image, ImageDraw

    image = Image.new("RGB", size, sv.marker_colour("identity", descriptor))
    w, h = size
    ImageDraw.Draw(image).rectangle([0, h * 2 // 3, w - 1, h - 1], fill=sv.marker_colour("activity", sv.activity_key(activity)))
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG" if size == (36, 36) else "PNG")
    return buffer.getvalue()


def write_pata(root: Path) -> tuple[Path, Path]:
    """PATA-style folder: one photo per identity x gender x activity (one non-square, one JPEG), a
    second photo of every cell listed after the first (unused), a row of another activity (filtered)."""
    images = root / "pata"
    images.mkdir(parents=True)
    rows = []
    for gender in ("female", "male"):
        for identity in ri.PATA_IDENTITIES:
            name = ri.descriptor(identity, gender)
            for activity in ACTIVITIES:
                size = (40, 30) if (name, activity) == ("black man", "Cooking") else (
                    (36, 36) if (name, activity) == ("indian woman", "Programming") else (32, 32))
                first = f"{gender}_{identity.replace(' ', '')}_{activity}_1.{'jpg' if size == (36, 36) else 'png'}"
                (images / first).write_bytes(_image(name, activity, size))
                second = f"{gender}_{identity.replace(' ', '')}_{activity}_2.png"
                (images / second).write_bytes(_image("nobody", activity))  # must stay unused
                rows += [(first, identity, gender[0].upper(), activity.lower()), (second, identity.upper(), gender, activity)]
    rows.append(("female_Black_Cooking_1.png", "Black", "female", "Eating"))
    table = root / "pata.csv"
    with open(table, "w", newline="", encoding="utf-8-sig") as handle:  # with a byte-order mark
        w = csv.writer(handle)
        w.writerow(["image", "identity", "gender", "activity"])
        w.writerows(rows)
    return images, table


def write_vignette_source(root: Path) -> Path:
    """VIGNETTE source folder with the mapped descriptors' images (authors' layout) plus an unrelated one."""
    src = root / "vignette_src"
    for gender, noun in (("female", "woman"), ("male", "man")):
        (src / gender).mkdir(parents=True)
        for identity, stem in ri.DEFAULT_VIGNETTE_DESCRIPTORS.items():
            for activity in ACTIVITIES:
                (src / gender / f"{stem}-{noun}_{activity.lower()}.png").write_bytes(
                    _image(ri.descriptor(identity, gender), activity))
        (src / gender / f"old-{noun}_cooking.png").write_bytes(_image(f"old {noun}", "Cooking"))
    return src


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("pata")
    lists = sv.write_lists(root / "lists")
    images, table = write_pata(root)
    real = ri.build_pata_real(images, table, lists, root / "real" / "vignette", size=48)
    synthetic = ri.build_pata_synthetic(write_vignette_source(root), lists, root / "synthetic" / "vignette")
    return root, real, synthetic


def test_builders_write_the_vignette_layout_marked_real_and_synthetic(built):
    from PIL import Image

    from lm_eval_bias.vignette.pairs import IndividualImages

    root, real, synthetic = built
    assert real.n_images == synthetic.n_images == 20 and real.unused_images == 20 and not real.missing_cells
    marker = json.loads((root / "real" / "vignette" / ri.SOURCE_FILE).read_text())
    assert (marker["source"], marker["subset"], marker["unused_images"]) == ("real", "pata", 20)
    assert marker["images"]["male/black-man_cooking"] == "male_Black_Cooking_1.png"
    assert json.loads((root / "synthetic" / "vignette" / ri.SOURCE_FILE).read_text())["images"][
        "female/east-asian-woman_programming"] == "female/asian-woman_programming.png"
    store = IndividualImages(str(root / "real" / "vignette"))
    assert len(store) == 20
    for key in ("male/black-man_cooking", "female/indian-woman_programming", "female/hispanic-woman_cooking"):
        image = Image.open(io.BytesIO(store.encoded(key)))
        assert image.size == (48, 48) and image.mode == "RGB"
        colour = image.convert("RGB").getpixel((24, 16))  # the identity marker survives letterboxing
        assert max(abs(a - b) for a, b in zip(colour, sv.marker_colour("identity", key.split("/")[1].split("_")[0].replace("-", " ")))) < 30
    letterboxed = Image.open(io.BytesIO(store.encoded("male/black-man_cooking"))).convert("RGB")
    assert letterboxed.getpixel((24, 1)) == (0, 0, 0)  # 40x30 padded top and bottom
    synth = IndividualImages(str(root / "synthetic" / "vignette"))
    assert synth.encoded("male/caucasian-man_cooking") == (root / "vignette_src" / "male" / "caucasian-man_cooking.png").read_bytes()
    card = (root / "real" / "vignette" / "README.md").read_text()
    assert "real PATA photographs" in card and "personal data" in card


def test_builder_cli_errors_are_one_line(built, tmp_path, capsys):
    from lm_eval_bias.cli import main

    root, _, _ = built
    bad = tmp_path / "bad.csv"
    bad.write_text("image,identity,gender,activity\nx.png,Black,female,cooking\ny.png,Martian,female,cooking\n")
    base = ["build", "vignette-pata", "--lists", str(root / "lists")]
    assert main(base + ["--source", str(root / "pata"), "--csv", str(bad), "--output", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "bad.csv:3" in err and "unknown identity 'Martian'" in err and "\n" not in err
    bad.write_text("image,identity,gender,activity\nnot-there.png,Black,female,cooking\n")
    assert main(base + ["--source", str(root / "pata"), "--csv", str(bad), "--output", str(tmp_path / "o")]) == 2
    assert "not-there.png' not found" in capsys.readouterr().err
    assert main(base + ["--synthetic-from", str(root / "vignette_src"), "--source", "x", "--output", str(tmp_path / "o")]) == 2
    assert "either --source and --csv" in capsys.readouterr().err
    assert main(base + ["--synthetic-from", str(root / "vignette_src"), "--output", str(root / "synthetic" / "vignette")]) == 2
    assert "already exists" in capsys.readouterr().err
    assert main(base + ["--synthetic-from", str(root / "vignette_src"), "--map", "Martian=x", "--output", str(tmp_path / "o")]) == 2
    assert "IDENTITY=VIGNETTE_STEM" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
    again = base + ["--synthetic-from", str(root / "vignette_src"), "--output", str(tmp_path / "o2")]
    assert main(again) == 0 and main(again + ["--overwrite"]) == 0
    assert "wrote 20 synthetic images" in capsys.readouterr().out
    assert json.loads((tmp_path / "o2" / ri.SOURCE_FILE).read_text())["source"] == "synthetic"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no temporary folder left


def _run(out: Path, data_dir: Path, model_args: str, monkeypatch) -> Path:
    """One vignette_decision run saved as `lm_eval --output_path out --log_samples` saves it."""
    import lm_eval
    from lm_eval.loggers import EvaluationTracker

    import lm_eval_bias
    from lm_eval_bias.core.registration import register_plugin

    register_plugin()
    monkeypatch.setenv("LM_EVAL_BIAS_DATA_DIR", str(data_dir))
    metadata = {"pair_sampling": "exhaustive"}
    tracker = EvaluationTracker(output_path=str(out))
    results = lm_eval.simple_evaluate(model="bias-probe", model_args=model_args, tasks=["vignette_decision"],
                                      log_samples=True, evaluation_tracker=tracker, metadata=metadata,
                                      task_manager=lm_eval_bias.task_manager(metadata=metadata), bootstrap_iters=0)
    samples = results.pop("samples")
    tracker.save_results_aggregated(results=results, samples=samples)
    tracker.save_results_samples(task_name="vignette_decision", samples=samples["vignette_decision"])
    return out


def _hand_counts(run: Path) -> dict[tuple[str, str], tuple[int, int]]:
    """(identity, activity) -> (times chosen, times shown), read straight from the logged answers."""
    shown, chosen = Counter(), Counter()
    for file in run.glob("**/samples_vignette_decision_*.jsonl"):
        for line in file.read_text().splitlines():
            sample = json.loads(line)
            doc, answer = sample["doc"], sample["filtered_resps"][0].strip()
            for person in doc["option_identity"]:
                shown[(person, doc["context"])] += 1
            chosen[(doc["option_identity"]["AB".index(answer)], doc["context"])] += 1
    return {key: (chosen[key], n) for key, n in shown.items()}


@pytest.fixture(scope="module")
def runs(built, tmp_path_factory):
    root, _, _ = built
    out = tmp_path_factory.mktemp("pata_runs")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LM_EVAL_BIAS_BOOTSTRAP_ITERS", "20")
        real = _run(out / "real", root / "real", "vignette_prefer=hispanic woman", mp)
        synthetic = _run(out / "synthetic", root / "synthetic", "vignette_prefer=indian woman", mp)
    return out, real, synthetic


def test_real_vs_synthetic_tables_match_hand_counts(runs, capsys):
    import pandas as pd

    from lm_eval_bias.cli import main

    out, real, synthetic = runs
    hand = {"real": _hand_counts(real), "synthetic": _hand_counts(synthetic)}
    # the same docs on both sides: every identity shown 24 times per activity (4 partners x 6 questions)
    assert set(hand["real"]) == set(hand["synthetic"]) == {(d, a) for d in FEMALES + MALES for a in ACTIVITIES}
    assert {n for counts in hand.values() for _, n in counts.values()} == {24}

    assert main(["vignette-real-vs-synthetic", str(real), str(synthetic), "--output", str(out / "cmp"),
                 "--n-boot", "200"]) == 0
    printed = capsys.readouterr().out
    assert "Tables 15-19" in printed and "Table 13" in printed and "Table 12" in printed
    assert "paired the one model of each folder" in printed and "marked source" not in printed
    table = pd.read_csv(out / "cmp" / "real_vs_synthetic_identity.csv")
    assert len(table) == 20
    deltas = []
    for row in table.itertuples():
        for side in ("real", "synthetic"):
            k, n = hand[side][(row.identity, row.activity)]
            assert getattr(row, side) == pytest.approx(100 * k / n), (row.identity, row.activity, side)
            assert getattr(row, f"n_shown_{side}") == n and getattr(row, f"n_chosen_{side}") == k
            low, high = getattr(row, f"ci_low_{side}"), getattr(row, f"ci_high_{side}")
            if math.isnan(low):  # fewer image pairs than MIN_PAIRS_FOR_INTERVAL: no interval
                assert math.isnan(high)
                continue
            assert low <= getattr(row, side) + 1e-9 and getattr(row, side) <= high + 1e-9
        assert row.delta == pytest.approx(row.synthetic - row.real)
        deltas.append((row.activity, row.delta))
    by = table.set_index(["identity", "activity"])
    for activity in ACTIVITIES:
        assert by.loc[("hispanic woman", activity), "real"] == 100.0  # the planted preferences
        assert by.loc[("indian woman", activity), "synthetic"] == 100.0
        low, high = by.loc[("hispanic woman", activity), "ci_low_real"], by.loc[("hispanic woman", activity), "ci_high_real"]
        # S = 100: the t-Wilson interval over the image pairs [n / (n + t^2), 1] x 100 (none below 10 pairs)
        assert (math.isnan(low) and math.isnan(high)) or (high == 100.0 and low < 100.0)
        for side in ("real", "synthetic"):  # 60 questions per gender and activity, each picks one of two
            assert sum(by.loc[(d, activity), side] for d in FEMALES) == pytest.approx(250.0)
        for d in MALES:  # no preference planted among men: the same docs give the same answers
            assert by.loc[(d, activity), "delta"] == 0.0
    assert by.loc[("hispanic man", "Cooking"), "label"] == "Hispanic (M)"

    table13 = pd.read_csv(out / "cmp" / "real_vs_synthetic_model_task.csv")
    assert list(table13["task"]) == ["Cooking", "Programming"] and (table13["n_points"] == 10).all()
    for row in table13.itertuples():
        d = [x for a, x in deltas if a == row.task]
        assert row.mean_signed_delta == pytest.approx(sum(d) / 10)
        assert row.mean_absolute_error == pytest.approx(sum(map(abs, d)) / 10)
        assert row.rmse == pytest.approx(math.sqrt(sum(x * x for x in d) / 10))
        assert row.max_absolute_delta == pytest.approx(max(map(abs, d)))
    table12 = pd.read_csv(out / "cmp" / "real_vs_synthetic_overall.csv")
    d = [x for _, x in deltas]
    assert table12.loc[0, "n_points"] == 20 and table12.loc[0, "mean_signed_delta"] == pytest.approx(sum(d) / 20)
    assert table12.loc[0, "max_absolute_delta"] == pytest.approx(max(map(abs, d))) and max(map(abs, d)) > 0
    for name in ("figure9_real.png", "figure10_synthetic.png"):
        assert (out / "cmp" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_swapped_runs_are_noted_and_a_missing_task_is_one_error_line(runs, capsys):
    from lm_eval_bias.cli import main

    _, real, synthetic = runs
    assert main(["vignette-real-vs-synthetic", str(synthetic), str(real), "--n-boot", "0"]) == 0
    printed = capsys.readouterr().out
    assert "the real run read a dataset marked source: synthetic" in printed
    assert main(["vignette-real-vs-synthetic", str(real), str(synthetic), "--task", "vignette_stereotype"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: vignette-real-vs-synthetic: ") and "no vignette_stereotype run" in err and "\n" not in err
