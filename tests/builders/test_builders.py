"""Builders: valid sources load like a Hub dataset; every broken source fails with the file and the
reason and leaves nothing behind."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from types import SimpleNamespace

import datasets
import pytest
import yaml
from PIL import Image

from lm_eval_bias.datasets_builder.focus import build_focus
from lm_eval_bias.datasets_builder.focus_bios import BIAS_IN_BIOS_PROFESSIONS, build_focus_bios, normalize_biography
from lm_eval_bias.datasets_builder.hub import SourceError
from lm_eval_bias.reflect.schema import GROUPS, Group, read_group_marker
from lm_eval_bias.reflect.synthetic import make_synthetic_bios, make_synthetic_focus


@pytest.fixture
def source(tmp_path) -> Path:
    return make_synthetic_focus(tmp_path / "src", occupations=("ceo", "nurse"), templates=(1, 2), size=(48, 48))


def _load(out: Path, tmp_path: Path):
    return datasets.load_dataset(str(out), split="test", cache_dir=str(tmp_path / "hf_cache"))


def _nothing_left(out: Path) -> None:
    assert not out.exists()
    assert not [p for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.")]


def test_focus_build_loads_like_a_hub_dataset(source, tmp_path):
    out = tmp_path / "focus"
    summary = build_focus(source, out)
    assert summary.n_images == 40 and summary.templates == {"ceo": (1, 2), "nurse": (1, 2)}
    ds = _load(out, tmp_path)
    assert ds.column_names == ["image", "image_id", "occupation", "template_id", "race", "gender", "width",
                               "height", "file_name", "sha256"]
    assert isinstance(ds.features["image"], datasets.Image)
    assert ds["image_id"][:2] == ["ceo/1/Asian_man", "ceo/1/Asian_woman"]
    assert ds["image_id"][10] == "ceo/2/Asian_man" and ds["template_id"][20] == 1
    for row in ds:
        assert read_group_marker(row["image"]) == Group(row["race"], row["gender"])
        assert (row["width"], row["height"]) == (48, 48)
    # original bytes are stored unchanged
    first = (source / "ceo" / "1" / "Asian_man.jpg").read_bytes()
    raw = ds.cast_column("image", datasets.Image(decode=False))[0]["image"]["bytes"]
    assert raw == first
    card = (out / "README.md").read_text()
    header = yaml.safe_load(card.split("---")[1])
    assert header["configs"][0]["data_files"][0] == {"split": "test", "path": "data/test-*"}
    assert header["license"] == "other" and "manifest sha256" in card


def test_full_480_image_release(tmp_path):
    src = make_synthetic_focus(tmp_path / "src", size=(32, 32))
    summary = build_focus(src, tmp_path / "focus")
    assert summary.n_images == 480 and len(summary.occupations) == 6


def _corrupt(src: Path) -> str:
    path = src / "ceo" / "1" / "Black_woman.jpg"
    path.write_bytes(path.read_bytes()[:200])
    return "ceo/1/Black_woman.jpg"


def _missing(src: Path) -> str:  # a template may lack variants (user subsets), not every one of them
    for path in (src / "nurse" / "2").iterdir():
        path.unlink()
    return "nurse/2"


def _wrong_size(src: Path) -> str:
    Image.new("RGB", (40, 48)).save(src / "ceo" / "2" / "Latino_man.jpg")
    return "Latino_man.jpg"


def _bad_name(src: Path) -> str:
    shutil.copy(src / "ceo" / "1" / "Asian_man.jpg", src / "ceo" / "1" / "Hispanic_man.jpg")
    return "Hispanic_man.jpg"


def _unknown_occupation(src: Path) -> str:  # any lower-case slug is an occupation (App. C.7); this is none
    shutil.copytree(src / "ceo", src / "Pilot crew")
    return "Pilot crew"


def _template_nine(src: Path) -> str:  # any positive number is a template; a word is not
    shutil.copytree(src / "ceo" / "1", src / "ceo" / "nine")
    return "ceo/nine"


def _duplicate(src: Path) -> str:
    Image.open(src / "ceo" / "1" / "Asian_man.jpg").save(src / "ceo" / "1" / "Asian_man.png")
    return "Asian_man"


def _symlink_out(src: Path) -> str:
    outside = src.parent / "outside.jpg"
    shutil.copy(src / "ceo" / "1" / "White_man.jpg", outside)
    (src / "ceo" / "1" / "White_man.jpg").unlink()
    os.symlink(outside, src / "ceo" / "1" / "White_man.jpg")
    return "White_man.jpg"


def _stray_dir(src: Path) -> str:
    (src / "ceo" / "1" / "thumbnails").mkdir()
    return "thumbnails"


@pytest.mark.parametrize("breaker,reason", [
    (_corrupt, "does not decode"), (_missing, "template folder has no image"), (_wrong_size, "differs from"),
    (_bad_name, "unknown file name"), (_unknown_occupation, "expected an occupation folder"),
    (_template_nine, "expected a template folder"), (_duplicate, "duplicate variant"),
    (_symlink_out, "outside the source tree"), (_stray_dir, "unknown file name"),
])
def test_broken_sources_fail_with_file_and_reason_and_write_nothing(source, tmp_path, breaker, reason):
    where = breaker(source)
    out = tmp_path / "focus"
    with pytest.raises(SourceError) as err:
        build_focus(source, out)
    assert where in err.value.path and reason in err.value.reason
    _nothing_left(out)


def test_decompression_bomb_is_rejected(source, tmp_path):
    out = tmp_path / "focus"
    with pytest.raises(SourceError, match="decompression bomb"):
        build_focus(source, out, max_image_pixels=1000)
    _nothing_left(out)


def test_dotfiles_are_ignored_and_overwrite_is_explicit(source, tmp_path):
    (source / ".DS_Store").write_text("x")
    (source / "ceo" / "1" / "._Asian_man.jpg").write_text("x")
    out = tmp_path / "focus"
    build_focus(source, out)
    with pytest.raises(SourceError, match="already exists"):
        build_focus(source, out)
    shutil.rmtree(source / "nurse")
    build_focus(source, out, overwrite=True)
    assert len(_load(out, tmp_path)) == 20
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".focus.")]


def test_cli_reports_error_and_exit_code(source, tmp_path, capsys):
    from lm_eval_bias.cli import main

    _missing(source)
    assert main(["build", "focus", "--source", str(source), "--output", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "nurse/2" in err and "template folder has no image" in err


def test_push_to_hub_uses_huggingface_hub_and_never_prints_the_token(source, tmp_path, monkeypatch, capsys):
    import huggingface_hub

    from lm_eval_bias.cli import main

    calls = []

    class FakeApi:
        def create_repo(self, repo_id, **kwargs):
            calls.append(("create_repo", repo_id, kwargs["repo_type"], kwargs["private"]))
            return f"https://hub.invalid/datasets/{repo_id}"

        def repo_info(self, repo_id, **kwargs):
            return SimpleNamespace(private=True, gated=False)

        def upload_folder(self, folder_path, repo_id, **kwargs):
            calls.append(("upload_folder", Path(folder_path).name, repo_id, kwargs["repo_type"]))

    monkeypatch.setattr(huggingface_hub, "HfApi", FakeApi)
    monkeypatch.setenv("HF_TOKEN", "hf_SECRET_TOKEN_123")
    assert main(["build", "focus", "--source", str(source), "--output", str(tmp_path / "focus"),
                 "--push-to-hub", "me/focus"]) == 0
    # private by default (tests/builders/test_hub_publish.py covers --public and gating)
    assert calls == [("create_repo", "me/focus", "dataset", True), ("upload_folder", "focus", "me/focus", "dataset")]
    captured = capsys.readouterr()
    assert "hf_SECRET" not in captured.out + captured.err
    assert "hf_SECRET" not in (tmp_path / "focus" / "README.md").read_text()


@pytest.mark.parametrize("text,expected,kinds", [
    ("Dr. Jane Smith is a doctor. She works with her patients.",
     "The candidate is a doctor. They work with their patients.", {"name", "pronoun"}),
    ("John Lee has worked as a cook for 5 years. He leads a team and his staff trust him.",
     "The candidate has worked as a cook for 5 years. They lead a team and their staff trust them.", {"name", "pronoun"}),
    ("Her husband is a nurse; she was proud of herself.", "Their spouse is a nurse; they were proud of themselves.",
     {"pronoun", "gendered_word"}),
    ("Visit https://example.com/bio or e-mail me@example.org, or ping @teach99.", "Visit or e-mail, or ping.",
     {"url", "email", "handle"}),
])
def test_normalize_biography(text, expected, kinds):
    normalized, changes = normalize_biography(text)
    assert normalized == expected
    assert {c["kind"] for c in changes} == kinds


def test_bios_build_caps_per_occupation_and_records_changes(tmp_path):
    src = make_synthetic_bios(tmp_path / "bios.jsonl", per_occupation=4)
    summary = build_focus_bios(src, tmp_path / "bios", per_occupation=3)
    assert summary.per_occupation == {o: 3 for o in ("ceo", "cook", "doctor", "lawyer", "nurse", "teacher")}
    ds = _load(tmp_path / "bios", tmp_path)
    assert len(ds) == 18
    for row in ds:
        assert "http" not in row["biography"] and "@" not in row["biography"]
        assert not {" he ", " she ", " his ", " her "} & set(f" {w} " for w in row["biography"].lower().split())
        assert row["n_changes"] == len(json.loads(row["normalization_changes"])) > 0
    # fewer than asked: kept, and said in the card
    build_focus_bios(src, tmp_path / "bios50", per_occupation=50)
    assert "fewer than the paper's 50" in (tmp_path / "bios50" / "README.md").read_text()


def test_bias_in_bios_reader_maps_profession_codes(tmp_path):
    rows = [
        {"profession": BIAS_IN_BIOS_PROFESSIONS.index("attorney"), "hard_text": "She argues cases in court."},
        {"profession": BIAS_IN_BIOS_PROFESSIONS.index("physician"), "hard_text": "He treats patients."},
        {"profession": BIAS_IN_BIOS_PROFESSIONS.index("rapper"), "hard_text": "He raps."},
        {"profession": "nurse", "hard_text": "She cares for patients."},
    ]
    src = tmp_path / "bib.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    summary = build_focus_bios(src, tmp_path / "bios")
    assert summary.per_occupation == {"doctor": 1, "lawyer": 1, "nurse": 1}
    assert summary.dropped == {"rapper": 1}
    ds = _load(tmp_path / "bios", tmp_path)
    assert sorted(ds["biography"]) == ["They argue cases in court.", "They care for patients.", "They treat patients."]


def test_bios_errors_name_file_and_line(tmp_path):
    src = tmp_path / "bad.csv"
    src.write_text("occupation,biography\nceo,Runs a company.\nairline pilot!,Flies planes.\n")  # not a slug
    with pytest.raises(SourceError) as err:
        build_focus_bios(src, tmp_path / "out")
    assert err.value.path.endswith("bad.csv:3") and "unknown occupation" in err.value.reason
    _nothing_left(tmp_path / "out")
    src.write_text("occupation,biography\nceo,\n")
    with pytest.raises(SourceError, match="empty biography"):
        build_focus_bios(src, tmp_path / "out")
