"""``lm-eval-bias generate vignette`` through the real command, with a tiny random-weight diffusers
pipeline built offline: names, manifest, determinism, kill and resume, shards and their merge, the
openai-images backend against a local endpoint, then ``lm-eval-bias build vignette`` and a VIGNETTE
task through the harness on the generated images."""

from __future__ import annotations

import hashlib
import json
import shutil
import warnings
from pathlib import Path

import pytest

from lm_eval_bias.cli import main as cli
from lm_eval_bias.core import imagegen
from lm_eval_bias.vignette import synthetic as sv
from tests.core.test_imagegen import SECRET, _Endpoint

MALE = [d for _, d in sv.IDENTITIES["male"]]
SELECTION = ["--genders", "male", "--activities", "Cooking"]  # 9 portraits + 9 individual images
SUBSET = [*SELECTION, "--descriptors", "old man,young man,bald man,asian man"]  # 8 images
EXPECTED_SUBSET = sorted(f"male/{d}{a}.png" for d in ("old-man", "young-man", "bald-man", "asian-man") for a in ("", "_cooking"))
EXPECTED = sorted([f"male/{d.replace(' ', '-')}.png" for d in MALE] + [f"male/{d.replace(' ', '-')}_cooking.png" for d in MALE])


@pytest.fixture(autouse=True)
def _no_launcher_env(monkeypatch):
    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """The synthetic lists, the tiny pipeline, and one complete unsharded generation of SELECTION."""
    import torch

    from lm_eval_bias.testing.tiny_diffusers import build_tiny_text_to_image

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("generate")
    lists = sv.write_lists(root / "lists")
    model = build_tiny_text_to_image(root / "tiny_t2i")
    full = root / "full"
    assert generate(lists, model, full, *SELECTION) == 0
    yield {"root": root, "lists": lists, "model": model, "full": full}
    torch.set_num_threads(threads)


def generate(lists, model, output, *extra) -> int:
    return cli(["generate", "vignette", "--lists", str(lists), "--output", str(output), "--model", str(model),
                "--steps", "2", *extra])


def images(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.glob("*/*.png"))


def manifest_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_names_prompts_seeds_and_manifest(setup):
    full = setup["full"]
    assert images(full) == EXPECTED
    assert not list(full.rglob("*.tmp"))
    entries = manifest_lines(full / "manifest.jsonl")
    assert [e["key"] for e in entries] == sorted(p[:-4] for p in EXPECTED)
    by_key = {e["key"]: e for e in entries}
    old = by_key["male/old-man_cooking"]
    assert old["prompt"] == "A old man engaged in Cooking, with their face visible."  # the authors' scripts' wording
    assert by_key["male/old-man"]["prompt"] == "A old man, with their face visible."
    assert old["seed"] == imagegen.derive_seed("male/old-man_cooking", 0)
    assert (old["model_id"], old["revision"], old["kind"], old["dimension"]) == (str(setup["model"]), None, "individual", "age")
    assert old["settings"]["steps"] == 2 and old["settings"]["dtype"] == "float32" and old["settings"]["attention_slicing"]
    assert old["sha256"] == hashlib.sha256((full / old["file_name"]).read_bytes()).hexdigest()
    assert len({e["settings_fingerprint"] for e in entries}) == 1 and (old["width"], old["height"]) == (32, 32)


def test_same_seed_same_bytes_and_paper_wording(setup, tmp_path, capsys):
    again = tmp_path / "again"
    assert generate(setup["lists"], setup["model"], again, *SELECTION, "--descriptors", "old man,bald man") == 0
    assert images(again) == ["male/bald-man.png", "male/bald-man_cooking.png", "male/old-man.png", "male/old-man_cooking.png"]
    for name in images(again):
        assert (again / name).read_bytes() == (setup["full"] / name).read_bytes(), name
    other = tmp_path / "other"
    assert generate(setup["lists"], setup["model"], other, *SELECTION, "--descriptors", "old man", "--kinds", "individual",
                    "--seed", "1", "--wording", "paper") == 0
    entry = manifest_lines(other / "manifest.jsonl")[0]
    assert entry["prompt"] == "An old man engaged in Cooking, with their face visible." and entry["base_seed"] == 1
    assert (other / "male/old-man_cooking.png").read_bytes() != (setup["full"] / "male/old-man_cooking.png").read_bytes()
    capsys.readouterr()
    assert generate(setup["lists"], setup["model"], other, "--genders", "male", "--dry-run", "--limit", "2") == 0
    listed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [x["file_name"] for x in listed] == ["male/asian-man.png", "male/asian-man_cooking.png"]


def test_killed_run_resumes_without_duplicates_gaps_or_partial_files(setup, tmp_path, monkeypatch):
    out = tmp_path / "resumed"
    real_append = imagegen.Manifest.append
    calls = []

    def killed_on_third_entry(self, entry):
        calls.append(entry["key"])
        if len(calls) == 3:  # the image is in place, its manifest line is not: a kill between the two
            raise KeyboardInterrupt
        real_append(self, entry)

    monkeypatch.setattr(imagegen.Manifest, "append", killed_on_third_entry)
    with pytest.raises(KeyboardInterrupt):
        generate(setup["lists"], setup["model"], out, *SUBSET)
    monkeypatch.setattr(imagegen.Manifest, "append", real_append)
    assert len(images(out)) == 3 and not (out / "manifest.jsonl").exists()
    # what a SIGKILL can leave too: a torn manifest line and a temp file of an unfinished image
    with open(out / "manifests" / "main.jsonl", "a") as handle:
        handle.write('{"key": "male/young-man", "file_na')
    (out / "male" / ".young-man_cooking.png.k1ll3d.tmp").write_bytes(b"\x89PNG half")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert generate(setup["lists"], setup["model"], out, *SUBSET) == 0
        entries = manifest_lines(out / "manifest.jsonl")
    assert images(out) == EXPECTED_SUBSET and not list(out.rglob("*.tmp"))
    assert [e["key"] for e in entries] == sorted(p[:-4] for p in EXPECTED_SUBSET)  # each once, none missing
    for name in EXPECTED_SUBSET:
        assert (out / name).read_bytes() == (setup["full"] / name).read_bytes(), name
    generated_lines = [line for line in (out / "manifests" / "main.jsonl").read_text().splitlines() if line.endswith("}")]
    assert len(generated_lines) == len(EXPECTED_SUBSET)  # 2 before the kill, 6 after: nothing made twice


def test_changed_settings_refuse_to_mix_unless_allowed(setup, tmp_path, capsys):
    out = tmp_path / "mixed"
    shutil.copytree(setup["full"], out)
    (out / "male" / "old-man.png").unlink()
    capsys.readouterr()
    assert cli(["generate", "vignette", "--lists", str(setup["lists"]), "--output", str(out), "--model", str(setup["model"]),
                "--steps", "3", *SELECTION]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: generate vignette: the output folder holds images made with other settings")
    assert "--allow-mixed-settings" in err and "\n" not in err and not (out / "male" / "old-man.png").exists()
    assert cli(["generate", "vignette", "--lists", str(setup["lists"]), "--output", str(out), "--model", str(setup["model"]),
                "--steps", "3", "--allow-mixed-settings", *SELECTION]) == 0
    entries = {e["key"]: e for e in manifest_lines(out / "manifest.jsonl")}
    assert entries["male/old-man"]["settings"]["steps"] == 3 and entries["male/bald-man"]["settings"]["steps"] == 2
    assert "generated 1, already done 17" in capsys.readouterr().out


def test_two_shards_on_two_machines_merge_into_the_unsharded_result(setup, tmp_path, monkeypatch, capsys):
    machine0, machine1 = tmp_path / "m0", tmp_path / "m1"
    assert generate(setup["lists"], setup["model"], machine0, *SUBSET, "--shard", "0/2") == 0
    monkeypatch.setenv("RANK", "1")  # the second part as torchrun / accelerate launch would start it
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert generate(setup["lists"], setup["model"], machine1, *SUBSET) == 0
    monkeypatch.delenv("RANK")
    monkeypatch.delenv("WORLD_SIZE")
    part0, part1 = images(machine0), images(machine1)
    assert not set(part0) & set(part1) and sorted(part0 + part1) == EXPECTED_SUBSET and abs(len(part0) - len(part1)) <= 1
    assert sorted(p.name for p in (machine1 / "manifests").glob("*.jsonl")) == ["rank-1-of-2.jsonl"]
    shutil.copytree(machine1, machine0, dirs_exist_ok=True)  # rsync the machines' folders into one
    capsys.readouterr()
    assert cli(["generate", "vignette", "merge", "--output", str(machine0), "--lists", str(setup["lists"]), *SUBSET]) == 0
    assert "8 of 8 expected images present" in capsys.readouterr().out
    stable = lambda path: [{k: v for k, v in e.items() if k not in imagegen.VOLATILE_FIELDS}  # noqa: E731
                           for e in manifest_lines(path)]
    subset = {p[:-4] for p in EXPECTED_SUBSET}
    assert stable(machine0 / "manifest.jsonl") == [e for e in stable(setup["full"] / "manifest.jsonl") if e["key"] in subset]
    assert {e["worker"] for e in manifest_lines(machine0 / "manifest.jsonl")} == {"shard-0-of-2", "rank-1-of-2"}
    for name in EXPECTED_SUBSET:
        assert (machine0 / name).read_bytes() == (setup["full"] / name).read_bytes()
    # a gap is reported, not hidden
    (machine0 / "manifests" / "rank-1-of-2.jsonl").unlink()
    (machine0 / "manifest.jsonl").unlink()
    assert cli(["generate", "vignette", "merge", "--output", str(machine0), "--lists", str(setup["lists"]), *SUBSET]) == 1
    assert f"error: generate vignette merge: {len(part1)} expected images missing" in capsys.readouterr().err


def test_openai_images_backend_through_the_command(setup, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("IMAGES_KEY", SECRET)
    out = tmp_path / "gemini"
    with _Endpoint([429, 200, 200]) as endpoint:
        rc = cli(["generate", "vignette", "--lists", str(setup["lists"]), "--output", str(out), "--backend", "openai-images",
                  "--base-url", endpoint.url, "--model", "gemini-2.5-flash-image", "--api-key-env", "IMAGES_KEY",
                  "--backoff", "0.01", "--genders", "male", "--activities", "Cooking", "--descriptors", "old man,young man",
                  "--kinds", "individual", "--wording", "paper"])
    assert rc == 0 and images(out) == ["male/old-man_cooking.png", "male/young-man_cooking.png"]
    assert len(endpoint.requests) == 3 and all(r["auth"] == f"Bearer {SECRET}" for r in endpoint.requests)
    entry = manifest_lines(out / "manifest.jsonl")[0]
    assert entry["model_id"] == "gemini-2.5-flash-image" and entry["settings"]["backend"] == "openai-images"
    assert entry["settings"]["base_url"] == endpoint.url
    printed = capsys.readouterr()
    for path in out.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
    assert SECRET not in printed.out + printed.err
    monkeypatch.delenv("IMAGES_KEY")
    assert cli(["generate", "vignette", "--lists", str(setup["lists"]), "--output", str(out), "--backend", "openai-images",
                "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--api-key-env", "IMAGES_KEY"]) == 1
    assert capsys.readouterr().err.strip() == ("error: generate vignette: environment variable IMAGES_KEY is not set "
                                               "(the images endpoint's API key is read from it only)")


@pytest.mark.parametrize("args, message", [
    (["--descriptors", "purple man"], "error: generate vignette: unknown descriptor: purple-man"),
    (["--shard", "2/2"], "error: generate vignette: shard '2/2': need 0 <= i < n"),
    (["--dimensions", "religion", "--genders", "female"], "error: generate vignette: the filters select no image"),
])
def test_bad_requests_are_one_line_errors(setup, tmp_path, capsys, args, message):
    assert generate(setup["lists"], setup["model"], tmp_path / "x", *args) == 2
    assert capsys.readouterr().err.strip() == message


def test_build_and_a_task_run_on_the_generated_images(setup, tmp_path, monkeypatch):
    """The builder reads the generated folder unchanged; the card names the generator; the planted
    preference of the bias probe is recovered through the harness on pairs of generated images."""
    from lm_eval import simple_evaluate

    import lm_eval_bias
    from lm_eval_bias import samples
    from lm_eval_bias.vignette import stats

    data = tmp_path / "data"
    assert cli(["build", "vignette", "--source", str(setup["full"]), "--lists", str(setup["lists"]),
                "--output", str(data / "vignette")]) == 0
    card = (data / "vignette" / "README.md").read_text()
    assert f"generated with `lm-eval-bias generate vignette` by {setup['model']} (diffusers)" in card
    assert "18 of 18 images carry a manifest entry" in card and "The people shown are synthetic" in card
    monkeypatch.setenv("LM_EVAL_BIAS_DATA_DIR", str(data))
    monkeypatch.setenv("LM_EVAL_BIAS_BOOTSTRAP_ITERS", "20")
    results = simple_evaluate(model="bias-probe", model_args="vignette_prefer=athletic man", tasks=["vignette_decision"],
                              limit=24, task_manager=lm_eval_bias.task_manager(), bootstrap_iters=0, log_samples=True)
    records = [samples.sample_record("vignette_decision", s) for s in results["samples"]["vignette_decision"]]
    table = samples.vignette_option_table(records)
    assert len(records) == 24 and set(table["identity"]) <= set(MALE)
    assert results["results"]["vignette_decision"]["valid_rate,none"] == 1.0
    frequency = stats.selection_frequency(table)  # the first 24 docs: athletic vs wheelchair man (ability)
    assert frequency["athletic man"] == 100.0 and frequency["wheelchair man"] == 0.0


def test_flux_card_states_the_non_commercial_licence(setup, tmp_path):
    """A manifest naming FLUX.1-dev (as a real run writes it) puts its licence on the card."""
    source = tmp_path / "flux"
    shutil.copytree(setup["full"], source)
    lines = [dict(e, model_id="black-forest-labs/FLUX.1-dev", revision="0ef5fff789c832c5c7f4e127f94c8b54bbcced44")
             for e in manifest_lines(source / "manifest.jsonl")]
    (source / "manifest.jsonl").write_text("".join(json.dumps(e) + "\n" for e in lines))
    shutil.rmtree(source / "manifests")
    assert cli(["build", "vignette", "--source", str(source), "--lists", str(setup["lists"]), "--output", str(tmp_path / "d")]) == 0
    card = (tmp_path / "d" / "README.md").read_text()
    assert "FLUX.1 [dev] Non-Commercial License" in card and "revision 0ef5fff789c832c5c7f4e127f94c8b54bbcced44" in card
    assert "**generator**: black-forest-labs/FLUX.1-dev" in card


def test_a_second_run_of_the_same_worker_is_refused(setup, tmp_path, capsys):
    import fcntl

    out = tmp_path / "locked"
    (out / "manifests").mkdir(parents=True)
    with open(out / "manifests" / ".shard-1-of-2.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a run of worker shard-1-of-2 is writing
        assert generate(setup["lists"], setup["model"], out, *SUBSET, "--shard", "1/2") == 2
        assert capsys.readouterr().err.strip() == (f"error: generate vignette: another run of worker 'shard-1-of-2' is writing "
                                                   f"into {out}; wait for it or give it another --shard")
        assert generate(setup["lists"], setup["model"], out, *SUBSET, "--shard", "0/2") == 0  # other workers go on
    assert len(images(out)) == 4
