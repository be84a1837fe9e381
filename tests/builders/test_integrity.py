"""Counterfactual integrity is checked at build time, through the real ``lm-eval-bias build`` command:
variants of one photo or pair that are identical, of another colour mode or size, or EXIF-rotated are
refused; so are a duplicated template, an in-tree symlink alias, an image reused across pairs or
identities. Every refusal is one line ``error: <file>: <reason>``, exit 2, nothing written. Missing
cells are named on the console at build time, and ``--strict`` makes them an error."""

from __future__ import annotations

import io
import json
import os
import shutil
from pathlib import Path

import pytest
from PIL import Image

from lm_eval_bias.cli import main

SMALL = {"occupations": ("ceo",), "templates": (1, 2), "size": (40, 40)}


@pytest.fixture(scope="module")
def focus_source(tmp_path_factory) -> Path:
    from lm_eval_bias.reflect.synthetic import make_synthetic_focus

    return make_synthetic_focus(tmp_path_factory.mktemp("focus") / "src", **SMALL)


@pytest.fixture
def focus_copy(focus_source, tmp_path) -> Path:
    src = tmp_path / "src"
    shutil.copytree(focus_source, src)
    return src


def _build(args: list[str], capsys) -> tuple[int, str, str]:
    code = main(["build", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def _refused(args: list[str], capsys, output: Path, *expected: str) -> str:
    code, out, err = _build([*args, "--output", str(output)], capsys)
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for text in expected:
        assert text in lines[0], lines[0]
    assert "Traceback" not in out + err
    assert not output.exists() and not [p for p in output.parent.iterdir() if p.name.startswith(f".{output.name}")]
    return lines[0]


def _template(src: Path, t: int = 1) -> Path:
    return src / "ceo" / str(t)


def test_one_variant_copied_over_another_is_refused(focus_copy, tmp_path, capsys):
    tpl = _template(focus_copy)
    shutil.copyfile(tpl / "Asian_man.jpg", tpl / "Black_man.jpg")
    _refused(["focus", "--source", str(focus_copy)], capsys, tmp_path / "out", "Black_man.jpg",
             "the same file content as Asian_man.jpg in the same template")


def test_same_pixels_in_another_encoding_are_refused(focus_copy, tmp_path, capsys):
    tpl = _template(focus_copy)
    with Image.open(tpl / "Asian_man.jpg") as im:
        im.save(tpl / "White_woman.png")  # lossless copy of the decoded pixels, other bytes
    (tpl / "White_woman.jpg").unlink()
    _refused(["focus", "--source", str(focus_copy)], capsys, tmp_path / "out", "White_woman.png",
             "the same pixels as Asian_man.jpg")


@pytest.mark.parametrize("mode", ["L", "CMYK"])
def test_a_variant_of_another_colour_mode_is_refused(focus_copy, tmp_path, capsys, mode):
    tpl = _template(focus_copy, 2)
    with Image.open(tpl / "Latino_woman.jpg") as im:
        im.convert(mode).save(tpl / "Latino_woman.jpg", "JPEG")
    _refused(["focus", "--source", str(focus_copy)], capsys, tmp_path / "out", "Latino_woman.jpg",
             f"colour mode {mode} differs from", "(RGB) in the same template")


def test_an_exif_rotated_variant_is_refused(focus_copy, tmp_path, capsys):
    tpl = _template(focus_copy)
    with Image.open(tpl / "White_man.jpg") as im:
        exif = im.getexif()
        exif[0x0112] = 6  # "rotate 90 CW to display"
        im.save(tpl / "White_man.jpg", "JPEG", exif=exif.tobytes())
    _refused(["focus", "--source", str(focus_copy)], capsys, tmp_path / "out", "White_man.jpg",
             "EXIF orientation 6", "exif_transpose")


def test_a_duplicated_template_folder_is_refused(focus_copy, tmp_path, capsys):
    shutil.copytree(_template(focus_copy, 1), _template(focus_copy, 3))
    _refused(["focus", "--source", str(focus_copy)], capsys, tmp_path / "out", "ceo/3/Asian_man.jpg",
             "same content as", "ceo/1/Asian_man.jpg (ceo/1)")


def test_an_in_tree_symlink_alias_is_refused(focus_copy, tmp_path, capsys):
    tpl = _template(focus_copy, 2)
    (tpl / "Black_woman.jpg").unlink()
    os.symlink(_template(focus_copy, 1) / "Black_woman.jpg", tpl / "Black_woman.jpg")
    _refused(["focus", "--source", str(focus_copy)], capsys, tmp_path / "out", "ceo/2/Black_woman.jpg",
             "symlink alias of ceo/1/Black_woman.jpg")


def test_missing_variants_are_named_on_the_console_and_strict_refuses_them(focus_copy, tmp_path, capsys):
    (_template(focus_copy, 2) / "Asian_woman.jpg").unlink()
    (_template(focus_copy, 1) / "White_man.jpg").unlink()
    code, out, err = _build(["focus", "--source", str(focus_copy), "--output", str(tmp_path / "out")], capsys)
    assert code == 0, err
    assert "warning: 2 missing cells" in out and "ceo/1/White_man, ceo/2/Asian_woman" in out
    assert "wrote 18 images" in out
    line = _refused(["focus", "--source", str(focus_copy), "--strict"], capsys, tmp_path / "strict",
                    "incomplete source (--strict")
    # the paper's other five occupations, templates 3-8 of ceo, then the two cells: 5 + 6 + 2
    assert "13 missing: cook, doctor, lawyer, nurse, teacher, ceo/3" in line and "ceo/1/White_man" in line


# -- Counterfactual VQA ---------------------------------------------------------------------------------------
@pytest.fixture
def cf_vqa_source(tmp_path) -> Path:
    from lm_eval_bias.cf_vqa.synthetic import make_synthetic_cf_vqa

    return make_synthetic_cf_vqa(tmp_path / "src", size=48)


def _manifest(src: Path) -> list[dict]:
    return [json.loads(line) for line in (src / "manifest.jsonl").read_text().splitlines()]


def test_cf_vqa_pair_of_two_sizes_is_refused(cf_vqa_source, tmp_path, capsys):
    row = _manifest(cf_vqa_source)[3]
    with Image.open(cf_vqa_source / row["image_minus"]) as im:
        im.resize((400, 90)).save(cf_vqa_source / row["image_minus"])
    _refused(["cf-vqa", "--source", str(cf_vqa_source)], capsys, tmp_path / "out", "manifest.jsonl:4",
             "size 400x90 differs from", "(48x48) in the same pair")


def test_cf_vqa_image_reused_across_pairs_is_refused(cf_vqa_source, tmp_path, capsys):
    rows = _manifest(cf_vqa_source)
    rows[5]["image_plus"] = rows[1]["image_plus"]
    (cf_vqa_source / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    _refused(["cf-vqa", "--source", str(cf_vqa_source)], capsys, tmp_path / "out", "manifest.jsonl:6",
             f"same content as", f"(pair {rows[1]['pair_id']})", "one pair only")


def test_cf_vqa_strict_names_missing_subcategories(cf_vqa_source, tmp_path, capsys):
    rows = [r for r in _manifest(cf_vqa_source) if r["subcategory"] != _manifest(cf_vqa_source)[0]["subcategory"]]
    missing = _manifest(cf_vqa_source)[0]["subcategory"]
    (cf_vqa_source / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, out, err = _build(["cf-vqa", "--source", str(cf_vqa_source), "--output", str(tmp_path / "out")], capsys)
    assert code == 0 and f"warning: 1 subcategories without pairs (--strict refuses them): {missing}" in out
    assert "note: optional question_source absent in 16 of 16 pairs" in out
    _refused(["cf-vqa", "--source", str(cf_vqa_source), "--strict"], capsys, tmp_path / "strict", f"none for {missing}")


# -- VIGNETTE --------------------------------------------------------------------------------------------------
@pytest.fixture
def vignette_source(tmp_path) -> tuple[Path, Path]:
    from lm_eval_bias.vignette import synthetic

    return synthetic.write_images(tmp_path / "src", size=40), synthetic.write_lists(tmp_path / "lists")


def test_vignette_identical_bytes_for_two_identities_are_refused(vignette_source, tmp_path, capsys):
    src, lists = vignette_source
    portraits = sorted(p for p in (src / "female").iterdir() if "_" not in p.stem)
    shutil.copyfile(portraits[0], portraits[1])
    _refused(["vignette", "--source", str(src), "--lists", str(lists)], capsys, tmp_path / "out",
             f"female/{portraits[1].name}", "same content as", "its own image")


def test_vignette_300x40_portrait_is_refused(vignette_source, tmp_path, capsys):
    src, lists = vignette_source
    portrait = sorted(p for p in (src / "male").iterdir() if "_" not in p.stem)[0]
    buffer = io.BytesIO()
    Image.new("RGB", (300, 40), (10, 200, 30)).save(buffer, "PNG")
    portrait.write_bytes(buffer.getvalue())
    _refused(["vignette", "--source", str(src), "--lists", str(lists)], capsys, tmp_path / "out",
             f"male/{portrait.name}", "size 300x40 differs from", "(40x40)")


def test_vignette_missing_images_named_and_strict(vignette_source, tmp_path, capsys):
    src, lists = vignette_source
    portrait = sorted(p for p in (src / "male").iterdir() if "_" not in p.stem)[0]
    portrait.unlink()
    code, out, err = _build(["vignette", "--source", str(src), "--lists", str(lists), "--output",
                             str(tmp_path / "out")], capsys)
    assert code == 0, err
    assert f"warning: 1 listed images absent (--strict refuses them): male/{portrait.stem}" in out
    _refused(["vignette", "--source", str(src), "--lists", str(lists), "--strict"], capsys, tmp_path / "strict",
             f"1 missing: male/{portrait.stem}")


def test_focus_bios_strict_names_short_occupations(tmp_path, capsys):
    from lm_eval_bias.reflect.synthetic import make_synthetic_bios

    bios = make_synthetic_bios(tmp_path / "bios.jsonl", per_occupation=3)
    code, out, err = _build(["focus-bios", "--source", str(bios), "--output", str(tmp_path / "out"),
                             "--per-occupation", "3"], capsys)
    assert code == 0, err
    _refused(["focus-bios", "--source", str(bios), "--per-occupation", "4", "--strict"], capsys, tmp_path / "strict",
             "incomplete source (--strict expects 4 biographies", "ceo: 3; cook: 3")
