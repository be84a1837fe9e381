"""``lm-eval-bias generate cf-vqa``: the construction pipeline through the real command, offline.

A planted chat model and a loopback OpenAI-compatible server write descriptions and questions; the
validation sheets go out and come back; tiny random-weight diffusers pipelines make the pairs; the
tiny CLIP scores them; the manifest is built with ``lm-eval-bias build cf-vqa`` and run through the
harness with ``bias-probe``."""

from __future__ import annotations

import csv
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from lm_eval_bias.cli import main as cli
from lm_eval_bias.cf_vqa.planted_chat import PlantedChat
from tests.loopback import send_json

ATTRIBUTES = """category,subcategory,attribute
Demography,Age,Lawyer Age
Behavior,Individual Social Behaviors,Smoking Activity
Aesthetic,Object Design/Aesthetics,Laptop Sticker Presence
Environment,Ambient Environment,Street Lighting Adequacy
"""
PLANTED = ["--chat-backend", "planted", "--chat-model", "planted-1", "--chat-arg", "malformed=Lawyer Age",
           "--chat-arg", "mention=Smoking Activity"]


def generate(*args, expect: int = 0) -> None:
    assert cli(["generate", "cf-vqa", *map(str, args)]) == expect


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def described(tmp_path) -> Path:
    (tmp_path / "attributes.csv").write_text(ATTRIBUTES)
    work = tmp_path / "work"
    generate("attributes", "--workdir", work, "--attributes", tmp_path / "attributes.csv")
    generate("describe", "--workdir", work, *PLANTED)
    return work


def by_attribute(work: Path) -> dict[str, dict]:
    return {r["attribute"]: r for r in lines(work / "descriptions.jsonl")}


def test_describe_validates_retries_records_failures_and_logs_every_call(described, capsys):
    rows = by_attribute(described)
    assert rows["Lawyer Age"]["status"] == "ok" and rows["Lawyer Age"]["attempts"] == 2  # broken JSON, retried
    assert rows["Smoking Activity"]["status"] == "failed" and rows["Smoking Activity"]["attempts"] == 3
    assert "the question mentions the attribute" in rows["Smoking Activity"]["reason"]
    ok = rows["Laptop Sticker Presence"]
    assert ok["status"] == "ok" and len(ok["options"]) == 4 and ok["question_source"] == "planted-1"
    assert ok["category"] == "Aesthetic" and ok["state_plus"] != ok["state_minus"]
    calls = lines(described / "calls.jsonl")
    assert len(calls) == 2 + 3 + 1 + 1
    first = [c for c in calls if c["key"] == rows["Lawyer Age"]["pair_id"]]
    assert [c["valid"] for c in first] == [False, True] and "not one JSON object" in first[0]["reason"]
    assert "${category}" not in first[0]["request"][0]["content"]
    assert "related to the category: Demography, Age." in first[0]["request"][0]["content"]
    assert first[0]["answer"].startswith('{"state_plus"')  # the raw answer is logged
    # a rerun repeats nothing; --retry-failed retries only the failed item (and fails it again)
    generate("describe", "--workdir", described, *PLANTED)
    assert len(lines(described / "calls.jsonl")) == 7
    generate("describe", "--workdir", described, *PLANTED, "--retry-failed")
    assert len(lines(described / "calls.jsonl")) == 10
    assert by_attribute(described)["Smoking Activity"]["status"] == "failed"
    assert "describe: done_before 4, ok 0, failed 1" in capsys.readouterr().out


def test_shards_resume_after_a_torn_line_and_merge_to_the_unsharded_result(tmp_path, described):
    work = tmp_path / "sharded"
    generate("attributes", "--workdir", work, "--attributes", tmp_path / "attributes.csv")
    generate("describe", "--workdir", work, *PLANTED, "--shard", "0/2")
    generate("describe", "--workdir", work, *PLANTED, "--shard", "1/2")
    parts = [work / "descriptions.shard-0-of-2.jsonl", work / "descriptions.shard-1-of-2.jsonl"]
    keys = [{r["pair_id"] for r in lines(p)} for p in parts]
    assert len(keys[0]) == len(keys[1]) == 2 and not keys[0] & keys[1]
    # a process killed while writing: the last line is torn; the rerun redoes that item only
    text = parts[0].read_text()
    last = text.splitlines()[-1]
    parts[0].write_text(text[: len(text) - len(last) // 2 - 1])
    n_calls = len(lines(work / "calls.shard-0-of-2.jsonl"))
    generate("describe", "--workdir", work, *PLANTED, "--shard", "0/2")
    redone = json.loads(last)
    assert len(lines(work / "calls.shard-0-of-2.jsonl")) == n_calls + min(redone["attempts"], 3)
    assert {r["pair_id"] for r in lines(parts[0])} == keys[0]
    generate("merge", "--workdir", work, "--stage", "describe")
    assert not any(p.exists() for p in parts)
    merged = {r["pair_id"]: r for r in lines(work / "descriptions.jsonl")}
    single = {r["pair_id"]: r for r in lines(described / "descriptions.jsonl")}
    assert merged == single


class ChatServer(BaseHTTPRequestHandler):
    """/v1/chat/completions on 127.0.0.1: the first request gets HTTP 500, then PlantedChat answers
    (the first answer for each attribute is broken JSON)."""

    chat = PlantedChat("served-model", malformed="Lawyer Age|Laptop Sticker Presence|Street Lighting Adequacy|"
                                                 "Smoking Activity")
    seen: list[dict] = []

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        ChatServer.seen.append({"path": self.path, "auth": self.headers.get("Authorization"), "model": body["model"]})
        if len(ChatServer.seen) == 1:
            self.send_response(500)
            self.end_headers()
            return
        answer = self.chat.chat(body["messages"])
        send_json(self, {"choices": [{"message": {"role": "assistant", "content": answer}}]})

    def log_message(self, *args):
        pass


def test_openai_compatible_endpoint_with_retries_and_no_credential_written(tmp_path, monkeypatch):
    secret = "sk-test-0123456789-do-not-write"
    monkeypatch.setenv("CF_VQA_TEST_KEY", secret)
    server = ThreadingHTTPServer(("127.0.0.1", 0), ChatServer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        (tmp_path / "attributes.csv").write_text(ATTRIBUTES)
        work = tmp_path / "work"
        generate("attributes", "--workdir", work, "--attributes", tmp_path / "attributes.csv")
        generate("describe", "--workdir", work, "--chat-model", "served-model", "--chat-base-url",
                 f"http://127.0.0.1:{server.server_port}/v1", "--chat-api-key-env", "CF_VQA_TEST_KEY",
                 "--chat-arg", "backoff=0", "--chat-arg", "temperature=0.7")
    finally:
        server.shutdown()
    assert {s["path"] for s in ChatServer.seen} == {"/v1/chat/completions"}
    assert {s["auth"] for s in ChatServer.seen} == {f"Bearer {secret}"}
    rows = by_attribute(work)
    # 500 then broken JSON for the first attribute (sorted by pair id): the HTTP retry is inside one attempt
    assert all(r["status"] == "ok" and r["attempts"] == 2 for r in rows.values()) and len(rows) == 4
    assert rows["Laptop Sticker Presence"]["chat_settings"]["temperature"] == 0.7
    assert len(ChatServer.seen) == 1 + 2 * 4
    assert len(lines(work / "calls.jsonl")) == 2 * 4  # attempts are logged; HTTP retries happen inside one
    for path in work.rglob("*"):
        if path.is_file():
            assert secret not in path.read_text(errors="replace"), path


def _fill(sheet: Path, out: Path, values: dict[str, list], columns: tuple[str, ...]) -> None:
    with open(sheet, newline="") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        value = values.get(row["pair_id"])
        if value is not None:
            item = value[int(row["annotator_slot"]) - 1]
            for column, v in zip(columns, item if isinstance(item, tuple) else (item,)):
                row[column] = v
    with open(out, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


RATINGS = {"Lawyer Age": [1, 2, 2, 4, 1], "Laptop Sticker Presence": [3, 4, 2, 5, 3],
           "Street Lighting Adequacy": [1, 1, 2, 1, 3]}


def test_rating_sheets_round_trip_and_one_line_errors(described, capsys):
    generate("sheets", "--workdir", described)
    sheet = described / "validation" / "relevance_sheet.csv"
    with open(sheet, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 3 * 5 and {r["annotator_slot"] for r in rows} == {"1", "2", "3", "4", "5"}
    assert {"question", "option_a", "option_d", "attribute", "description_plus", "description_minus"} <= set(rows[0])
    ids = {r["attribute"]: r["pair_id"] for r in lines(described / "descriptions.jsonl")}
    done = described / "rated.csv"
    _fill(sheet, done, {ids[a]: v for a, v in RATINGS.items()}, ("relevance",))
    bad = described / "bad.csv"
    _fill(sheet, bad, {ids["Lawyer Age"]: [1, 2, 6, 1, 1]}, ("relevance",))
    capsys.readouterr()
    generate("import-ratings", "--workdir", described, bad, expect=2)
    err = capsys.readouterr().err
    line = 2 + next(i for i, r in enumerate(rows) if r["pair_id"] == ids["Lawyer Age"] and r["annotator_slot"] == "3")
    assert err.count("\n") == 1 and f"bad.csv:{line}: relevance must be an integer 1-5, got '6'" in err
    assert not (described / "ratings.jsonl").exists()
    generate("import-ratings", "--workdir", described, done, done, expect=2)
    assert "is already rated at" in capsys.readouterr().err
    generate("import-ratings", "--workdir", described, done)
    ratings = {r["pair_id"]: r for r in lines(described / "ratings.jsonl")}
    assert ratings[ids["Lawyer Age"]]["relevance_mean"] == 2.0 and ratings[ids["Lawyer Age"]]["kept"]
    assert ratings[ids["Laptop Sticker Presence"]]["relevance_mean"] == 3.4
    assert not ratings[ids["Laptop Sticker Presence"]]["kept"]
    summary = json.loads((described / "validation" / "summary.json").read_text())
    assert summary["share_dropped"] == pytest.approx(1 / 3)
    assert summary["majority_agreement_kept"] == pytest.approx(0.8)  # 4 of 5 ratings on each kept pair's side
    assert summary["pairs_kept"] == 2 and summary["ratings"] == 15
    # a changed sheet is not overwritten while annotators may hold it
    generate("sheets", "--workdir", described, "--annotators", 3, expect=2)
    assert "--overwrite" in capsys.readouterr().err


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory) -> dict[str, Path]:
    from lm_eval_bias.testing.tiny_clip import build_tiny_clip
    from lm_eval_bias.testing.tiny_diffusers import build_tiny_instruct_pix2pix, build_tiny_text_to_image

    root = tmp_path_factory.mktemp("tiny_models")
    return {"t2i": build_tiny_text_to_image(root / "t2i"), "edit": build_tiny_instruct_pix2pix(root / "edit"),
            "clip": build_tiny_clip(root / "clip")}


ANSWERS = {"Lawyer Age": [("A", "A"), ("A", "B"), ("B", "B"), ("N/A", "N/A"), ("C", "Moderately")],  # 4/5 alike
           "Street Lighting Adequacy": [("A", "B"), ("A", "B"), ("B", "B"), ("D", "D"), ("A", "A")]}  # 3/5


def test_end_to_end_pairs_quality_manifest_build_and_task_run(described, tiny_models, tmp_path, monkeypatch, capsys):
    ids = {r["attribute"]: r["pair_id"] for r in lines(described / "descriptions.jsonl")}
    generate("sheets", "--workdir", described)
    _fill(described / "validation" / "relevance_sheet.csv", tmp_path / "rated.csv",
          {ids[a]: v for a, v in RATINGS.items()}, ("relevance",))
    generate("import-ratings", "--workdir", described, tmp_path / "rated.csv")
    images = ["--workdir", described, "--image-backend", "diffusers", "--image-model", tiny_models["t2i"],
              "--edit-model", tiny_models["edit"], "--image-arg", "steps=2", "--edit-arg", "steps=2", "--seed", 7]
    generate("images", *images, "--shard", "0/2")
    capsys.readouterr()
    generate("images", *images[:-1], 8, "--shard", "1/2", expect=2)  # other settings in the same image set
    assert "other settings" in capsys.readouterr().err
    generate("images", *images, "--shard", "1/2")
    generate("merge", "--workdir", described, "--stage", "images")
    generated = {r["pair_id"]: r for r in lines(described / "images-default.jsonl")}
    assert set(generated) == {ids["Lawyer Age"], ids["Street Lighting Adequacy"]}  # the kept pairs only
    record = generated[ids["Lawyer Age"]]
    assert record["text_to_image"]["model"] == str(tiny_models["t2i"]) and record["editor"]["settings"]["steps"] == 2
    assert record["editor"]["settings"]["pipeline"] == "StableDiffusionInstructPix2PixPipeline"
    assert record["instruction_minus"].startswith("Change only the Lawyer Age from strong Lawyer Age")
    assert record["prompt_plus"] == by_attribute(described)["Lawyer Age"]["description_plus"]
    assert (described / record["image_plus"]).is_file() and record["sha256_plus"] != record["sha256_minus"]
    capsys.readouterr()
    generate("images", *images)  # resumed: nothing left to do, and no model is loaded
    assert "done_before 2, ok 0, failed 0" in capsys.readouterr().out

    generate("quality", "--workdir", described, "--clip", tiny_models["clip"], "--n-boot", 200)
    quality = lines(described / "quality.jsonl")
    assert len(quality) == 2 and all(q["status"] == "ok" and q["temperature"] == 0.7 and q["beta"] == 0.6 for q in quality)
    table = json.loads((described / "quality_summary.json").read_text())["by_image_set"]
    assert table[0]["n_pairs"] == 2 and table[0]["generator"].startswith("diffusers:")
    assert table[0]["attribute_reflection"] == pytest.approx(sum(q["attribute_reflection"] for q in quality) / 2)

    generate("sheets", "--workdir", described, "--answers")
    _fill(described / "validation" / "answer_sheet.csv", tmp_path / "answered.csv",
          {ids[a]: v for a, v in ANSWERS.items()}, ("answer_plus", "answer_minus"))
    generate("import-ratings", "--workdir", described, tmp_path / "rated.csv", tmp_path / "answered.csv")
    generate("manifest", "--workdir", described, "--max-discrepancy", 2.0)
    manifest = {r["pair_id"]: r for r in lines(described / "manifest.jsonl")}
    assert set(manifest) == set(generated)
    lawyer = manifest[ids["Lawyer Age"]]
    assert lawyer["human_consistency"] == pytest.approx(0.8) and lawyer["relevance_score"] == 2.0
    assert manifest[ids["Street Lighting Adequacy"]]["human_consistency"] == pytest.approx(0.6)
    assert lawyer["question_source"] == "planted-1" and lawyer["relevance_scale"] == "1-5"
    report = json.loads((described / "manifest_report.json").read_text())
    assert report["left_out"] == {"dropped by the human validation (mean rating >= 3)": 1}

    data = tmp_path / "data"
    assert cli(["build", "cf-vqa", "--source", str(described), "--output", str(data / "cf_vqa")]) == 0
    monkeypatch.setenv("LM_EVAL_BIAS_DATA_DIR", str(data))
    monkeypatch.setenv("LM_EVAL_BIAS_NULL_ITERS", "0")
    from tests.reflect.test_reflect_pipeline import metrics_of, run_probe

    results = run_probe(["cf_vqa"], bootstrap_iters=0)
    m = metrics_of(results, "cf_vqa")
    assert results["n-samples"]["cf_vqa"]["effective"] == 2 * 3 * 2  # pairs x option orders x images
    # bias-probe reads attribute markers; generated images carry none, so every answer is invalid and
    # counted (never an answer): both sides empty, hence trivially consistent
    assert m["invalid_rate"] == 1.0 and m["refusal_rate"] == 0.0
    assert m["n_pairs"] == 2 and m["n_pair_runs"] == 6 and m["consistency"] == 1.0
    assert m["human_consistency"] == pytest.approx(0.7)


def test_attribute_proposals_keep_social_impact_above_3_and_all_waits_for_validation(tmp_path, capsys):
    captions = tmp_path / "captions.txt"
    captions.write_text("A doctor talks with an elderly patient in a clinic\nTwo children play football near a river\n")
    (tmp_path / "existing.txt").write_text("Play Attire\n")
    work = tmp_path / "work"
    generate("all", "--workdir", work, "--propose-from", captions, "--existing-attributes", tmp_path / "existing.txt",
             "--chat-backend", "planted", "--chat-model", "planted-1")
    proposals = lines(work / "proposals.jsonl")
    assert len(proposals) == 2 and all(p["status"] == "ok" and len(p["proposals"]) == 3 for p in proposals)
    assert "Existing attributes: Play Attire" in lines(work / "calls.jsonl")[0]["request"][0]["content"]
    attributes = {a["attribute"]: a for a in lines(work / "attributes.jsonl")}
    # impacts 5, 4, 2 per caption: the 2s are dropped (App. A: 3 or below), "Play Attire" already exists
    assert set(attributes) == {"Doctor Age", "Talks Attire", "Children Age"}
    assert all(a["social_impact"] >= 4 and a["source"] == "proposal by planted-1" for a in attributes.values())
    out = capsys.readouterr().out
    assert "below_threshold 2, similar_to_existing 1, attributes 3" in out
    assert "waiting for the human validation" in out and (work / "validation" / "relevance_sheet.csv").is_file()
    assert len(lines(work / "descriptions.jsonl")) == 3 and not list(work.glob("images*"))


class ImagesServer(BaseHTTPRequestHandler):
    """/v1/images/generations and /v1/images/edits on 127.0.0.1: a 16-px PNG per call (the edit returns
    the uploaded image with its colours inverted), every request recorded."""

    seen: list[dict] = []

    def do_POST(self):  # noqa: N802
        import base64
        import io
        from email import policy
        from email.parser import BytesParser

        from PIL import Image, ImageOps

        body = self.rfile.read(int(self.headers["Content-Length"]))
        record = {"path": self.path, "auth": self.headers.get("Authorization")}
        if self.path.endswith("/generations"):
            fields = json.loads(body)
            image = Image.new("RGB", (16, 16), (200, 30, 30))
        else:
            message = BytesParser(policy=policy.default).parsebytes(b"Content-Type: " + self.headers["Content-Type"].encode() + b"\r\n\r\n" + body)
            fields, image = {}, None
            for part in message.iter_parts():
                name = part.get_param("name", header="content-disposition")
                if name == "image":
                    image = ImageOps.invert(Image.open(io.BytesIO(part.get_payload(decode=True))).convert("RGB"))
                    record["uploaded"] = Image.open(io.BytesIO(part.get_payload(decode=True))).getpixel((0, 0))
                else:
                    fields[name] = part.get_payload(decode=True).decode()
        record.update(prompt=fields["prompt"], model=fields["model"])
        ImagesServer.seen.append(record)
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
        send_json(self, {"data": [{"b64_json": base64.b64encode(buffer.getvalue()).decode()}]})

    def log_message(self, *args):
        pass


def test_openai_images_endpoint_generates_then_edits_each_pair(described, monkeypatch):
    secret = "sk-images-secret-42"
    monkeypatch.setenv("CF_VQA_IMAGES_KEY", secret)
    server = ThreadingHTTPServer(("127.0.0.1", 0), ImagesServer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        generate("images", "--workdir", described, "--image-model", "gpt-image-1", "--image-set", "gptimage",
                 "--image-base-url", f"http://127.0.0.1:{server.server_port}/v1", "--image-api-key-env",
                 "CF_VQA_IMAGES_KEY", "--image-arg", "size=16x16")
    finally:
        server.shutdown()
    pairs = by_attribute(described)
    ok = sorted((p for p in pairs.values() if p["status"] == "ok"), key=lambda p: p["pair_id"])
    assert [s["path"] for s in ImagesServer.seen] == ["/v1/images/generations", "/v1/images/edits"] * len(ok)
    assert {s["auth"] for s in ImagesServer.seen} == {f"Bearer {secret}"}
    first, edit = ImagesServer.seen[0], ImagesServer.seen[1]
    assert first["prompt"] == "Generate an image: " + ok[0]["description_plus"]  # App. K.3 step 1
    assert edit["prompt"].startswith("Based on the previous image, create a counterfactual image where ONLY")
    assert f"Bias attribute to change: {ok[0]['attribute']} Original description: {ok[0]['description_plus']}" in edit["prompt"]
    assert edit["uploaded"] == (200, 30, 30)  # the b+ image is what gets edited (one session per pair)
    records = {r["pair_id"]: r for r in lines(described / "images-gptimage.jsonl")}
    assert set(records) == {p["pair_id"] for p in ok}
    record = records[ok[0]["pair_id"]]
    assert record["generator"] == "openai:gpt-image-1" and record["editor"]["model"] == "gpt-image-1"
    assert record["text_to_image"]["settings"]["size"] == "16x16"
    from PIL import Image

    assert Image.open(described / record["image_minus"]).getpixel((0, 0)) == (55, 225, 225)
    for path in described.rglob("*"):
        if path.is_file() and path.suffix != ".png":
            assert secret not in path.read_text(errors="replace"), path


def test_quality_table_per_generator_and_paired_difference_by_hand(tmp_path):
    from lm_eval_bias.cf_vqa import construction

    values = {"gpt": {"p1": (0.02, 0.01), "p2": (0.03, 0.02), "p3": (0.01, 0.03)},
              "ip2p": {"p1": (0.01, 0.05), "p2": (0.02, 0.04), "p4": (0.00, 0.09)}}
    construction.write_jsonl_atomic(tmp_path / "quality.jsonl", [
        {"item_id": f"{name}/{pair}", "pair_id": pair, "image_set": name, "generator": name, "status": "ok",
         "attribute_reflection": ar, "common_content_discrepancy": ccd}
        for name, pairs in values.items() for pair, (ar, ccd) in pairs.items()])
    rows = {r["image_set"]: r for r in construction.quality_table(tmp_path, n_boot=300)}
    assert rows["gpt"]["attribute_reflection"] == pytest.approx(0.02) and rows["gpt"]["n_pairs"] == 3
    assert rows["ip2p"]["common_content_discrepancy"] == pytest.approx(0.06)
    assert rows["gpt"]["attribute_reflection_ci_low"] <= 0.02 <= rows["gpt"]["attribute_reflection_ci_high"]
    (comparison,) = json.loads((tmp_path / "quality_summary.json").read_text())["paired_differences"]
    # ip2p minus gpt on the common pairs p1, p2: AR (-0.01, -0.01), CCD (+0.04, +0.02)
    assert (comparison["image_set"], comparison["minus_image_set"], comparison["n_common_pairs"]) == ("ip2p", "gpt", 2)
    assert comparison["attribute_reflection_difference"] == pytest.approx(-0.01)
    assert comparison["attribute_reflection_difference_ci_low"] == pytest.approx(-0.01)  # both differences equal
    assert comparison["common_content_discrepancy_difference"] == pytest.approx(0.03)
    assert (tmp_path / "quality_comparison.csv").read_text().startswith("image_set,minus_image_set,n_common_pairs")


def test_an_unreachable_endpoint_stops_the_stage_in_one_line_and_keeps_finished_items(described, capsys):
    before = (described / "descriptions.jsonl").read_text()
    capsys.readouterr()
    generate("describe", "--workdir", described, "--chat-model", "planted-1", "--chat-base-url",
             "http://127.0.0.1:9/v1", "--chat-arg", "retries=1", "--chat-arg", "backoff=0", "--retry-failed", expect=2)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: generate cf-vqa describe: ConnectionError contacting")
    assert "the stage stopped, finished items are kept" in err
    assert (described / "descriptions.jsonl").read_text() == before  # nothing marked failed for the outage
    assert lines(described / "calls.jsonl")[-1]["stopped"] is True


def test_failed_pairs_are_recorded_and_a_run_of_failures_stops_the_images_stage(described, monkeypatch, capsys):
    from lm_eval_bias.cf_vqa.construction import images

    monkeypatch.setattr(images, "MAX_FAILURES_IN_A_ROW", 2)
    monkeypatch.setenv("CF_VQA_IMAGES_KEY", "sk-x")
    capsys.readouterr()
    generate("images", "--workdir", described, "--image-model", "gpt-image-1", "--image-set", "down",
             "--image-base-url", "http://127.0.0.1:9/v1", "--image-api-key-env", "CF_VQA_IMAGES_KEY",
             "--image-arg", "retries=0", expect=2)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "2 pairs failed in a row (last: ImageBackendError:" in err
    failed = lines(described / "images-down.jsonl")
    assert len(failed) == 2 and all(r["status"] == "failed" and "ConnectionError" in r["reason"] for r in failed)


def test_a_request_that_fails_its_batch_fails_only_its_own_item(tmp_path):
    (tmp_path / "attributes.csv").write_text(ATTRIBUTES)
    work = tmp_path / "work"
    generate("attributes", "--workdir", work, "--attributes", tmp_path / "attributes.csv")
    generate("describe", "--workdir", work, "--chat-backend", "planted", "--chat-model", "planted-1",
             "--chat-arg", "refuse=Street Lighting Adequacy", "--batch-size", 4)
    rows = by_attribute(work)
    assert rows["Street Lighting Adequacy"]["status"] == "failed" and rows["Street Lighting Adequacy"]["attempts"] == 3
    assert "refused the request" in rows["Street Lighting Adequacy"]["reason"]
    assert all(r["status"] == "ok" and r["attempts"] == 1 for a, r in rows.items() if a != "Street Lighting Adequacy")
    calls = lines(work / "calls.jsonl")
    assert len(calls) == 3 + 3  # the three others once; the refused one in each of the three rounds


def test_vllm_offline_describe_batches_and_counts_garbage_as_invalid(tmp_path):
    """The real vLLM engine on CPU (runs where vLLM is installed, e.g. `.venv-vllm`, see scripts/ci_vllm.sh)
    with a tiny random-weight LLaVA: one batched LLM.chat per round, every answer logged; the garbage
    answers are invalid, retried, and the items recorded as failed with the reason."""
    import subprocess
    import sys

    pytest.importorskip("vllm", reason="vLLM is not installed (see scripts/setup_vllm.sh)")
    from lm_eval_bias.testing.tiny_vlm import build_tiny_llava

    model = build_tiny_llava(tmp_path / "model")
    (tmp_path / "attributes.csv").write_text(ATTRIBUTES)
    work = tmp_path / "work"
    generate("attributes", "--workdir", work, "--attributes", tmp_path / "attributes.csv")
    env = {**os.environ, "VLLM_TARGET_DEVICE": "cpu", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    run = subprocess.run(
        [str(Path(sys.executable).parent / "lm-eval-bias"), "generate", "cf-vqa", "describe", "--workdir", str(work),
         "--chat-backend", "vllm", "--chat-model", str(model), "--chat-arg", "max_model_len=2048",
         "--chat-arg", "dtype=float32", "--chat-arg", "enforce_eager=true", "--chat-arg", "gpu_memory_utilization=0.1",
         "--chat-arg", "max_tokens=24"], env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "describe: done_before 0, ok 0, failed 4" in run.stdout
    calls = lines(work / "calls.jsonl")
    assert len(calls) == 4 * 3 and {c["settings"]["backend"] for c in calls} == {"vllm"}
    assert all(isinstance(c["answer"], str) and not c["valid"] for c in calls)
    assert [sorted(c["attempt"] for c in calls).count(k) for k in (1, 2, 3)] == [4, 4, 4]  # one batch per round
    assert all(r["status"] == "failed" and "not one JSON object" in r["reason"] for r in lines(work / "descriptions.jsonl"))


def test_merge_refuses_one_item_finished_differently_by_two_shards(described, capsys):
    row = by_attribute(described)["Lawyer Age"]
    for part, question in (("0-of-2", "How honest does the person seem?"), ("1-of-2", "How wealthy does the person seem?")):
        (described / f"descriptions.shard-{part}.jsonl").write_text(json.dumps({**row, "question": question}) + "\n")
    capsys.readouterr()
    generate("merge", "--workdir", described, "--stage", "describe", expect=2)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"pair_id {row['pair_id']!r} differs between" in err
    assert (described / "descriptions.shard-0-of-2.jsonl").exists()  # nothing deleted or rewritten
