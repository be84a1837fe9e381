"""Publishing to the Hub, offline: what ``--push-to-hub`` asks of ``huggingface_hub.HfApi`` (recorded,
each call checked against the installed HfApi's signature), and dataset cards checked against the Hub's
card template and metadata spec without the network (``DatasetCard.validate`` would call the Hub)."""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path
from types import SimpleNamespace

import huggingface_hub
import pytest
import yaml

from lm_eval_bias.datasets_builder.cf_vqa import build_cf_vqa
from lm_eval_bias.datasets_builder.fact_or_fair import UPSTREAM_IDENTICAL_SCENARIOS, build_fact_or_fair, identical_scenarios, read_source
from lm_eval_bias.datasets_builder.focus import build_focus
from lm_eval_bias.datasets_builder.focus_bios import build_focus_bios
from lm_eval_bias.datasets_builder.hub import (
    GATE_MODE,
    HUB_LICENSES,
    HUB_TASK_CATEGORIES,
    PushRefused,
    SourceError,
    card_metadata_problems,
    push_to_hub,
)
from lm_eval_bias.datasets_builder.vignette import build_vignette
from lm_eval_bias.vignette import synthetic as sv
from lm_eval_bias.cf_vqa.synthetic import make_synthetic_cf_vqa
from lm_eval_bias.fact_or_fair.synthetic import make_synthetic_fact_or_fair
from lm_eval_bias.reflect.synthetic import make_synthetic_bios, make_synthetic_focus

FACE = ("focus", "vignette", "cf_vqa")
TEXT = ("fact_or_fair", "focus_bios")
#: Gated when public: pictures of people, and biographies of real people (Bias in Bios).
GATED = (*FACE, "focus_bios")
UPSTREAM_FOF = Path(__file__).resolve().parents[3] / "shared" / "upstream" / "fact_or_fair"
TOKEN = "hf_SECRET_TOKEN_do_not_print_42"
TEMPLATE = Path(huggingface_hub.__file__).parent / "templates" / "datasetcard_template.md"
REAL_HFAPI = huggingface_hub.HfApi  # the recorder checks calls against it while HfApi is patched
PAPER_TITLES = {
    "focus": "Measuring Social Bias in Vision-Language Models with Face-Only Counterfactuals from Real Photos",
    "focus_bios": "Measuring Social Bias in Vision-Language Models with Face-Only Counterfactuals from Real Photos",
    "fact_or_fair": "Where Fact Ends and Fairness Begins",
    "cf_vqa": "Bias Beyond Demographics: Probing Decision Boundaries in Black-Box LVLMs via Counterfactual VQA",
    "vignette": "VIGNETTE: Socially Grounded Bias Evaluation for Vision-Language Models",
}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """Every dataset, built once by its real builder from the small synthetic sources."""
    root = tmp_path_factory.mktemp("hub_publish")
    src = make_synthetic_focus(root / "focus_src", occupations=("ceo",), templates=(1,), size=(32, 32))
    bios = make_synthetic_bios(root / "bios.jsonl", per_occupation=2)
    return {
        "focus": build_focus(src, root / "focus").output,
        "focus_bios": build_focus_bios(bios, root / "focus_bios", per_occupation=2).output,
        "fact_or_fair": build_fact_or_fair(make_synthetic_fact_or_fair(root / "fof_src"), root / "fact_or_fair").output,
        "cf_vqa": build_cf_vqa(make_synthetic_cf_vqa(root / "cfv_src", size=16), root / "cf_vqa").output,
        "vignette": build_vignette(sv.write_images(root / "vig_src", size=20), sv.write_lists(root / "vig_lists"),
                                   root / "vignette").output,
    }


class HubRecorder:
    """Stands for ``huggingface_hub.HfApi``: records each call after binding it to the installed
    HfApi method's signature (so a call the real client would reject fails here), and keeps the state
    of the repositories the way the Hub does (``create_repo`` leaves an existing repository alone)."""

    def __init__(self, repos: dict | None = None, honour_gating: bool = True):
        self.repos = repos if repos is not None else {}
        self.honour_gating = honour_gating
        self.calls: list[tuple[str, dict]] = []
        self.constructed: list[tuple[tuple, dict]] = []
        self.uploads: list[dict] = []
        recorder = self

        class FakeHfApi:
            def __init__(self, *args, **kwargs):
                recorder.constructed.append((args, kwargs))

            def create_repo(self, *args, **kwargs):
                return recorder._create_repo(**recorder._record("create_repo", args, kwargs))

            def repo_info(self, *args, **kwargs):
                call = recorder._record("repo_info", args, kwargs)
                state = recorder.repos[call["repo_id"]]
                return SimpleNamespace(private=state["private"], gated=state["gated"])

            def upload_folder(self, *args, **kwargs):
                return recorder._upload_folder(**recorder._record("upload_folder", args, kwargs))

            def update_repo_settings(self, *args, **kwargs):
                return recorder._update(**recorder._record("update_repo_settings", args, kwargs))

        self.api_class = FakeHfApi

    def _record(self, name: str, args: tuple, kwargs: dict) -> dict:
        bound = inspect.signature(getattr(REAL_HFAPI, name)).bind(None, *args, **kwargs)
        arguments = {k: v for k, v in bound.arguments.items() if k != "self"}
        self.calls.append((name, arguments))
        return arguments

    def _create_repo(self, repo_id, private=None, exist_ok=False, **_):
        if repo_id in self.repos:
            assert exist_ok, "create_repo on an existing repository without exist_ok"
        else:
            self.repos[repo_id] = {"private": bool(private), "gated": False}
        return huggingface_hub.RepoUrl(f"https://huggingface.co/datasets/{repo_id}")

    def _upload_folder(self, repo_id, folder_path, **_):
        folder = Path(folder_path)
        self.uploads.append({
            "files": sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()),
            "readme": (folder / "README.md").read_text(encoding="utf-8"),
            "state": dict(self.repos[repo_id]),
        })

    def _update(self, repo_id, gated=None, private=None, visibility=None, **_):
        assert gated is not None or private is not None or visibility is not None, "empty settings update"
        if gated is not None:
            assert gated in ("auto", "manual", False)
            if self.honour_gating:
                self.repos[repo_id]["gated"] = gated
        if private is not None:
            self.repos[repo_id]["private"] = private

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]


@pytest.fixture
def hub(monkeypatch) -> HubRecorder:
    recorder = HubRecorder()
    monkeypatch.setattr(huggingface_hub, "HfApi", recorder.api_class)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    return recorder


def _local_files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def _assert_token_never_handled(hub: HubRecorder, *texts: str) -> None:
    assert hub.constructed and all(c == ((), {}) for c in hub.constructed)  # HfApi() reads HF_TOKEN / login cache
    assert not [name for name, arguments in hub.calls if "token" in arguments]
    assert not [t for t in texts if TOKEN in t]


# --- pushes ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", FACE + TEXT)
def test_default_push_is_private_and_never_gated_or_public(name, built, hub):
    result = push_to_hub(built[name], f"me/{name}")
    assert hub.calls[0] == ("create_repo", {"repo_id": f"me/{name}", "repo_type": "dataset", "private": True,
                                            "exist_ok": True})
    assert hub.names() == ["create_repo", "repo_info", "upload_folder", "repo_info"]
    assert "update_repo_settings" not in hub.names()
    (upload,) = hub.uploads
    assert upload["state"] == {"private": True, "gated": False}
    assert upload["files"] == _local_files(built[name])
    assert "README.md" in upload["files"] and any(f.startswith("data/") and f.endswith(".parquet") for f in upload["files"])
    assert hub.repos[f"me/{name}"] == {"private": True, "gated": False}
    assert result.private and not result.gated and result.url == f"https://huggingface.co/datasets/me/{name}"
    assert result.describe().startswith("private")
    _assert_token_never_handled(hub)


@pytest.mark.parametrize("name", GATED)
def test_public_push_of_pictures_of_people_is_gated_before_it_is_public(name, built, hub):
    result = push_to_hub(built[name], f"me/{name}", public=True)
    assert hub.calls[0][1]["private"] is True  # created private even with --public
    assert hub.names() == ["create_repo", "repo_info", "upload_folder", "update_repo_settings", "update_repo_settings",
                           "repo_info"]
    gate, publish = (arguments for name_, arguments in hub.calls if name_ == "update_repo_settings")
    assert gate == {"repo_id": f"me/{name}", "gated": GATE_MODE, "repo_type": "dataset"}
    assert publish == {"repo_id": f"me/{name}", "private": False, "repo_type": "dataset"}
    (upload,) = hub.uploads
    assert upload["state"]["private"] is True  # files land while nobody else can see them
    assert upload["files"] == _local_files(built[name])
    card = huggingface_hub.DatasetCard(upload["readme"])
    assert card.data.extra_gated_prompt and card.data.extra_gated_fields
    assert "## Terms of Access" in card.text and card.data.extra_gated_prompt.strip() in card.text
    assert hub.repos[f"me/{name}"] == {"private": False, "gated": GATE_MODE}
    assert not result.private and result.gated == GATE_MODE and result.person_images
    assert result.describe().startswith("public, gated")
    _assert_token_never_handled(hub)


@pytest.mark.parametrize("name", ("fact_or_fair",))
def test_public_push_of_a_text_dataset_is_public_and_not_gated(name, built, hub):
    result = push_to_hub(built[name], f"me/{name}", public=True)
    assert hub.names() == ["create_repo", "repo_info", "upload_folder", "update_repo_settings", "repo_info"]
    assert hub.calls[3][1] == {"repo_id": f"me/{name}", "private": False, "repo_type": "dataset"}
    assert hub.uploads[0]["files"] == _local_files(built[name])
    assert "extra_gated_prompt" not in huggingface_hub.DatasetCard(hub.uploads[0]["readme"]).data.to_dict()
    assert hub.repos[f"me/{name}"] == {"private": False, "gated": False}
    assert result.describe().startswith("public (anyone")


def test_an_existing_public_repository_is_refused_without_public(built, hub):
    hub.repos["me/focus"] = {"private": False, "gated": False}
    with pytest.raises(PushRefused, match="exists and is public"):
        push_to_hub(built["focus"], "me/focus")
    assert "upload_folder" not in hub.names() and "update_repo_settings" not in hub.names()


def test_an_existing_public_ungated_repository_is_gated_before_the_upload(built, hub, monkeypatch):
    hub.repos["me/vignette"] = {"private": False, "gated": False}
    push_to_hub(built["vignette"], "me/vignette", public=True)
    assert hub.names() == ["create_repo", "repo_info", "update_repo_settings", "repo_info", "upload_folder", "repo_info"]
    assert hub.calls[2][1] == {"repo_id": "me/vignette", "gated": GATE_MODE, "repo_type": "dataset"}
    assert hub.uploads[0]["state"] == {"private": False, "gated": GATE_MODE}
    # gating not confirmed: nothing is uploaded to the public repository
    ignored = HubRecorder(repos={"me/vignette": {"private": False, "gated": False}}, honour_gating=False)
    monkeypatch.setattr(huggingface_hub, "HfApi", ignored.api_class)
    with pytest.raises(PushRefused, match="nothing was uploaded"):
        push_to_hub(built["vignette"], "me/vignette", public=True)
    assert not ignored.uploads


def test_gating_the_hub_does_not_confirm_makes_the_repository_private_again(built, monkeypatch):
    hub = HubRecorder(honour_gating=False)
    monkeypatch.setattr(huggingface_hub, "HfApi", hub.api_class)
    with pytest.raises(PushRefused, match="not gated"):
        push_to_hub(built["cf_vqa"], "me/cf_vqa", public=True)
    assert hub.calls[-1] == ("update_repo_settings", {"repo_id": "me/cf_vqa", "private": True, "repo_type": "dataset"})
    assert hub.repos["me/cf_vqa"]["private"] is True


def test_a_card_without_access_terms_is_not_published(built, hub, tmp_path):
    import shutil

    folder = tmp_path / "focus"
    shutil.copytree(built["focus"], folder)
    readme = folder / "README.md"
    text = readme.read_text(encoding="utf-8")
    header, body = text.split("\n---\n", 1)
    metadata = yaml.safe_load(header.removeprefix("---\n"))
    for key in [k for k in metadata if k.startswith("extra_gated_")]:
        del metadata[key]
    readme.write_text("---\n" + yaml.safe_dump(metadata, sort_keys=False) + "---\n" + body, encoding="utf-8")
    with pytest.raises(PushRefused, match="only gated"):
        push_to_hub(folder, "me/focus", public=True)
    assert hub.calls == []
    push_to_hub(folder, "me/focus")  # a private push is still fine: image column, but private
    assert hub.repos["me/focus"] == {"private": True, "gated": False}


# --- through the CLI -------------------------------------------------------------------------------------


def test_cli_push_flags_say_what_was_done_and_never_print_the_token(tmp_path, hub, capsys):
    from lm_eval_bias.cli import main

    focus_src = make_synthetic_focus(tmp_path / "src", occupations=("ceo",), templates=(1,), size=(32, 32))
    out = tmp_path / "focus"
    assert main(["build", "focus", "--source", str(focus_src), "--output", str(out), "--push-to-hub", "me/focus"]) == 0
    private = capsys.readouterr()
    assert "pushed to https://huggingface.co/datasets/me/focus: private" in private.out
    assert main(["build", "focus", "--source", str(focus_src), "--output", str(out), "--overwrite",
                 "--push-to-hub", "me/focus-public", "--public"]) == 0
    gated = capsys.readouterr()
    assert "pushed to https://huggingface.co/datasets/me/focus-public: public, gated (manual approval)" in gated.out
    assert hub.repos["me/focus-public"] == {"private": False, "gated": "manual"}

    fof_src = make_synthetic_fact_or_fair(tmp_path / "fof_src")
    assert main(["build", "fact-or-fair", "--source", str(fof_src), "--output", str(tmp_path / "fof"),
                 "--push-to-hub", "me/fof", "--public"]) == 0
    public = capsys.readouterr()
    assert "pushed to https://huggingface.co/datasets/me/fof: public (anyone can download it)" in public.out
    assert hub.repos["me/fof"] == {"private": False, "gated": False}
    _assert_token_never_handled(hub, private.out + private.err, gated.out + gated.err, public.out + public.err,
                                *(u["readme"] for u in hub.uploads))


def test_cli_refused_push_exits_2_and_keeps_the_built_folder(tmp_path, hub, capsys):
    from lm_eval_bias.cli import main

    hub.repos["me/cfv"] = {"private": False, "gated": False}
    src = make_synthetic_cf_vqa(tmp_path / "src", size=16)
    assert main(["build", "cf-vqa", "--source", str(src), "--output", str(tmp_path / "out"),
                 "--push-to-hub", "me/cfv"]) == 2
    err = capsys.readouterr().err.splitlines()[-1]  # after the datasets progress bars
    assert err.startswith("error: me/cfv: the repository exists and is public") and str(tmp_path / "out") in err
    assert (tmp_path / "out" / "README.md").is_file() and "upload_folder" not in hub.names()


def test_public_needs_push_to_hub_and_every_build_subcommand_has_it(tmp_path, capsys):
    import argparse

    from lm_eval_bias.datasets_builder.cli import add_build_subcommands
    from lm_eval_bias.cli import main

    assert main(["build", "fact-or-fair", "--source", str(tmp_path), "--output", str(tmp_path / "o"), "--public"]) == 2
    assert "--public" in capsys.readouterr().err and not (tmp_path / "o").exists()
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    add_build_subcommands(sub)
    for command in sub.choices:
        args = parser.parse_args([command, "--source", "s", "--output", "o", "--push-to-hub", "me/x", "--public"]
                                 + (["--lists", "l"] if command == "vignette" else []))
        assert args.public is True and args.push_to_hub == "me/x"
        assert parser.parse_args([command, "--source", "s", "--output", "o"]
                                 + (["--lists", "l"] if command == "vignette" else [])).public is False


# --- cards -------------------------------------------------------------------------------------------------


def _required_template_headings() -> list[str]:
    """The headings of huggingface_hub's dataset card template that are not marked [optional] (nor
    inside an optional section), in order."""
    headings, optional_level = [], None
    body = TEMPLATE.read_text(encoding="utf-8").split("\n---\n", 1)[1]
    for line in body.splitlines():
        match = re.match(r"(#+) (.*)", line)
        if not match:
            continue
        level, title = len(match.group(1)), match.group(2).strip()
        if optional_level is not None and level > optional_level:
            continue
        optional_level = level if "[optional]" in title else None
        if optional_level is None:
            headings.append("#" * level + " " + title.split("{{")[0].strip())
    return headings


@pytest.mark.parametrize("name", FACE + TEXT)
def test_cards_follow_the_hub_template_and_metadata_spec(name, built):
    import datasets
    from datasets.info import DatasetInfosDict
    from datasets.utils.metadata import MetadataConfigs

    text = (built[name] / "README.md").read_text(encoding="utf-8")
    card = huggingface_hub.DatasetCard(text)
    metadata = yaml.safe_load(text.split("\n---\n", 1)[0].removeprefix("---\n"))
    # metadata round-trips through huggingface_hub's card classes
    assert card.data.to_dict() == metadata
    assert huggingface_hub.DatasetCardData(**metadata).to_dict() == metadata
    assert huggingface_hub.DatasetCard(str(card)).data.to_dict() == metadata
    # the Hub's metadata spec, offline
    assert card_metadata_problems(metadata) == []
    assert metadata["license"] in HUB_LICENSES and set(metadata["task_categories"]) <= HUB_TASK_CATEGORIES
    if metadata["license"] == "other":
        assert re.fullmatch(r"[a-z0-9][a-z0-9.-]*", metadata["license_name"])
    sizes = json.loads((Path(datasets.__file__).parent / "utils" / "resources" / "size_categories.json").read_text())
    expected_size = "1K<n<10K" if name == "fact_or_fair" else "n<1K"  # 7,230 synthetic queries; the rest < 1,000
    assert metadata["size_categories"] == [expected_size] and set(metadata["size_categories"]) <= set(sizes)
    assert metadata["pretty_name"] and metadata["language"] == ["en"] and "lm-eval-bias" in metadata["tags"]
    # datasets reads the configs and features back
    configs = MetadataConfigs.from_dataset_card_data(card.data)
    infos = DatasetInfosDict.from_dataset_card_data(card.data)
    assert set(configs) == set(infos) == {c["config_name"] for c in metadata["configs"]}
    # the template's sections, in its order, each with content
    headings = [line for line in card.text.splitlines() if line.startswith("#")]
    position = 0
    for required in _required_template_headings():
        found = [i for i, h in enumerate(headings) if h.startswith(required)]
        assert found and found[-1] >= position, f"{name}: section {required!r} missing or out of order"
        position = found[-1]
    for section in ("## Citation", "### Source Data", "#### Inputs, sources and licences"):
        assert section in headings
    assert "[More Information Needed]" not in text and "Not documented" not in text
    assert PAPER_TITLES[name] in card.text.split("## Citation", 1)[1]
    assert "licence" in card.text.split("#### Inputs, sources and licences", 1)[1].split("\n####", 1)[0]
    # gated access terms exactly for the datasets of people's pictures or biographies
    gated_keys = {k for k in metadata if k.startswith("extra_gated_")}
    if name in GATED:
        assert {"extra_gated_prompt", "extra_gated_fields"} <= gated_keys
        assert any(v == "checkbox" for v in metadata["extra_gated_fields"].values())
        assert "## Terms of Access" in headings
    else:
        assert not gated_keys and "## Terms of Access" not in headings


def test_an_unknown_licence_is_refused_before_anything_is_written(tmp_path):
    src = make_synthetic_focus(tmp_path / "src", occupations=("ceo",), templates=(1,), size=(32, 32))
    with pytest.raises(SourceError, match="not a Hub licence identifier"):
        build_focus(src, tmp_path / "out", license="CC BY 4.0")
    assert not (tmp_path / "out").exists()
    build_focus(src, tmp_path / "ok", license="cc-by-nc-4.0")
    metadata = huggingface_hub.DatasetCard((tmp_path / "ok" / "README.md").read_text()).data.to_dict()
    assert metadata["license"] == "cc-by-nc-4.0" and "license_name" not in metadata


def test_fact_or_fair_card_names_the_upstream_identical_scenarios(built, tmp_path):
    card = (built["fact_or_fair"] / "README.md").read_text(encoding="utf-8")
    listed = ("COVID-19 Mortality Rate scenario 1; Crime Rate scenario 2; Crime Rate scenario 3; Mortality Rate "
              "scenario 2; Mortality Rate scenario 3; Unemployment Rate scenario 2; Unemployment Rate scenario 3")
    assert "seven low-side scenarios are word-for-word identical" in card and listed in card
    assert "Identical pairs found in this build's source: none." in card
    # a source with the defect: the card lists what it finds there
    src = make_synthetic_fact_or_fair(tmp_path / "src")
    high = json.loads((src / "prompts_high.json").read_text())
    low = json.loads((src / "prompts_low.json").read_text())
    statistic = next(iter(low))
    low[statistic][1] = high[statistic][1]
    (src / "prompts_low.json").write_text(json.dumps(low))
    build_fact_or_fair(src, tmp_path / "out")
    card = (tmp_path / "out" / "README.md").read_text(encoding="utf-8")
    assert f"Identical pairs found in this build's source: {statistic} scenario 2." in card
    assert f"**low-side scenarios identical to the high-side one**: {statistic} scenario 2" in card


@pytest.mark.skipif(not UPSTREAM_FOF.is_dir(), reason="upstream FACT-OR-FAIR files not present")
def test_upstream_fact_or_fair_has_exactly_the_seven_identical_scenarios():
    src = read_source(UPSTREAM_FOF)
    assert sorted(identical_scenarios(src)) == sorted(UPSTREAM_IDENTICAL_SCENARIOS)
    assert len(UPSTREAM_IDENTICAL_SCENARIOS) == 7
