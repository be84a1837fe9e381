"""The commands of docs/paper-map.md as steps the test runs: each step is one command of the map, exactly
as the map writes it, with its placeholders (``out``, ``W``, ``SRC``, ``DATA``, ``CLIP_B32``, …) bound to
folders of a synthetic workspace and, where the command needs a GPU, the Hub or a paid API, the local
substitute the map's row names appended ("test: …").

:func:`prepare` writes the synthetic sources (the benchmarks' ``synthetic`` modules, a PATA-style folder,
face labels, captions, a tiny random-weight CLIP) and starts a loopback OpenAI-compatible images endpoint;
:func:`steps` lists the map's commands in an order that makes each one's inputs first; :func:`argv` turns a
step into the ``lm-eval-bias`` arguments; :func:`execute` runs one in this process."""

from __future__ import annotations

import contextlib
import csv
import glob
import io
import json
import os
import re
import shlex
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from tests.loopback import send_json

ROOT = Path(__file__).resolve().parents[2]
#: the main model: refusals and invalid answers planted, FACT-OR-FAIR answers uniform, CF-VQA flips
MODEL_ARGS = "refusal_rate=0.2,invalid_rate=0.1,seed=3,fof_policy=uniform,cf_flip=0.5"
#: a second model for the cross-model figure (VIGNETTE Figs. 13-14): a planted preference
OTHER_MODEL_ARGS = "vignette_prefer=old man,vignette_prefer_p=0.9,seed=4"
LIMIT = "24"
#: the substitutes for a GPU / the Hub / a paid API, as the map's rows name them ("test: …")
PLANTED_CHAT = ("--chat-backend", "planted", "--chat-model", "planted-1")
SMALL_GENERATION = ("--genders", "male", "--activities", "Cooking", "--backoff", "0.01")


@dataclass
class Step:
    """One execution of a map command: ``command`` is the map's text; ``bind`` maps its placeholders to
    paths; ``extra`` is appended (substitutes and ``--limit``); ``data`` is LM_EVAL_BIAS_DATA_DIR."""

    command: str
    bind: dict[str, str] = field(default_factory=dict)
    extra: tuple[str, ...] = ()
    data: Path | None = None
    model_args: str = MODEL_ARGS


@dataclass
class Outcome:
    step: Step
    argv: list[str]
    code: int | None
    printed: str


def argv(step: Step) -> list[str]:
    """The ``lm-eval-bias`` arguments of ``step``: ``RUN`` expanded as the REFLECT section defines it,
    ``--model …`` -> ``bias-probe`` with ``step.model_args``, placeholders bound, ``[...]`` (an optional
    part) kept, ``...`` (more options) replaced by ``step.extra``, globs expanded."""
    words = shlex.split(step.command)
    if words[0] == "RUN":  # RUN = LM_EVAL_BIAS_DATA_DIR=data lm-eval-bias run --model … --model_args … --log_samples --output_path out
        words = ["lm-eval-bias", "run", "--model", "…", "--model_args", "…", "--log_samples", "--output_path", "out",
                 *words[1:]]
    assert words[0] == "lm-eval-bias", step.command
    path = 4 if words[1:4] == ["generate", "vignette", "human-check"] else 3 if words[1:3] == ["generate", "cf-vqa"] \
        else 2 if words[1] in ("build", "score", "generate") else 1  # the sub-command's words: never placeholders
    out: list[str] = words[1:1 + path]
    for previous, word in zip(words[path:], words[1 + path:]):
        word = word.strip("[]") if word.startswith("[") or word.endswith("]") else word
        if word == "…":
            out.append("bias-probe" if previous == "--model" else step.model_args)
            continue
        if word == "...":
            continue
        bound = _bind(word, step.bind)
        matches = sorted(glob.glob(bound)) if "*" in bound else [bound]
        assert matches, f"{step.command}: {bound} matches no file"
        out.extend(matches)
    if out[0] == "run" and "--model_args" not in out:
        out[out.index("--model") + 2:out.index("--model") + 2] = ["--model_args", step.model_args]
    return out + list(step.extra)


def _bind(word: str, bind: dict[str, str]) -> str:
    if word in bind:
        return bind[word]
    head, sep, rest = word.partition("/")
    if sep and head in bind:
        return bind[head] + "/" + _bind_inside(rest, bind)
    return _bind_inside(word, bind)


def _bind_inside(text: str, bind: dict[str, str]) -> str:
    """Upper-case placeholders inside a word (``fact_or_fair_t2i_NAME.json``, ``clip:CLIP_L14`` in JSON)."""
    for key, value in bind.items():
        if key.isupper() or key == "<task>":
            text = re.sub(rf"(?<![A-Za-z0-9]){re.escape(key)}(?![A-Za-z0-9])", lambda _m, v=value: v, text)
    return text


def execute(step: Step) -> Outcome:
    from lm_eval_bias import cli

    args = argv(step)
    saved = os.environ.get("LM_EVAL_BIAS_DATA_DIR")
    if step.data is not None:
        os.environ["LM_EVAL_BIAS_DATA_DIR"] = str(step.data)
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
            try:
                code = cli.main(args)
            except SystemExit as exc:  # argument errors end as argparse's exit
                code = exc.code
    finally:
        if saved is None:
            os.environ.pop("LM_EVAL_BIAS_DATA_DIR", None)
        else:
            os.environ["LM_EVAL_BIAS_DATA_DIR"] = saved
    return Outcome(step, args, code, printed.getvalue())


# -- the synthetic workspace ------------------------------------------------------------------------------
@dataclass
class Workspace:
    root: Path
    images_url: str = ""
    server: ThreadingHTTPServer | None = None

    def __getattr__(self, name: str) -> Path:  # ws.runs, ws.focus_src, ... : folders under root
        if name.startswith("_"):
            raise AttributeError(name)
        return self.root / name

    def close(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


def prepare(root: Path) -> Workspace:
    """Synthetic sources of the four benchmarks and the local substitutes, under ``root``."""
    from PIL import Image

    from lm_eval_bias.cf_vqa.synthetic import make_synthetic_cf_vqa
    from lm_eval_bias.fact_or_fair.synthetic import make_synthetic_fact_or_fair
    from lm_eval_bias.reflect.synthetic import make_synthetic_bios, make_synthetic_focus
    from lm_eval_bias.testing.tiny_clip import build_tiny_clip
    from lm_eval_bias.vignette import synthetic as sv
    from lm_eval_bias.vignette.real_images import PATA_IDENTITIES

    ws = Workspace(root)
    # REFLECT: two paper occupations, one beyond them (App. C.7), androgynous variants (App. C.8); a second photo
    # set of the same layout for the second editor / the mirrored photos (bias-probe cannot read mirrored markers)
    for folder, seed in ((ws.focus_src, 0), (ws.focus_mirrored, 1)):
        make_synthetic_focus(folder, occupations=("ceo", "nurse", "software_developer"), templates=(1, 2),
                             size=(48, 48), androgynous=True, seed=seed)
    make_synthetic_bios(ws.root / "bios.jsonl", per_occupation=3)
    ws.root.joinpath("g0.json").write_text(json.dumps({f"{o}/{t}": g for o, t, g in (
        ("ceo", 1, "man"), ("ceo", 2, "woman"), ("nurse", 1, "woman"), ("nurse", 2, "man"),
        ("software_developer", 1, "man"), ("software_developer", 2, "woman"))}))
    # FACT-OR-FAIR: the synthetic release and face labels of a text-to-image model (two faces per statistic and side)
    make_synthetic_fact_or_fair(ws.fof_src)
    with open(ws.fof_src / "all_highest_lowest.csv", encoding="utf-8") as handle:
        statistics = [row["category"] for row in csv.DictReader(handle)]
    faces = [{"image": f"{s}_{side}_{k}.png", "statistic": s, "side": side, "gender": gender, "race": race}
             for s in statistics for side in ("highest", "lowest")
             for k, (gender, race) in enumerate((("male", "White"), ("female", "Black")))]
    ws.root.joinpath("faces.jsonl").write_text("".join(json.dumps(f) + "\n" for f in faces), encoding="utf-8")
    # Counterfactual VQA: 6 pairs per subcategory, two question sources (Table 11); captions for proposals
    make_synthetic_cf_vqa(ws.cf_vqa_src, pairs_per_subcategory=6, size=32, question_sources=("o3", "Sonnet 4"))
    ws.root.joinpath("captions.txt").write_text("A doctor talks with an elderly patient in a clinic\n"
                                                "Two children play football near a river\n")
    build_tiny_clip(ws.tiny_clip)
    # VIGNETTE: the synthetic lists and images; a PATA-style folder of small photographs
    sv.write_lists(ws.lists)
    sv.write_images(ws.vignette_src, size=40)
    ws.pata.mkdir()
    rows = []
    for k, (identity, gender, activity) in enumerate((i, g, a) for i in PATA_IDENTITIES for g in ("female", "male")
                                                     for a in ("Cooking", "Programming")):
        Image.new("RGB", (20, 16), (10 * k, 255 - 10 * k, 7 * k)).save(ws.pata / f"{k:02d}.png")
        rows.append(f"{k:02d}.png,{identity},{gender},{activity}\n")
    ws.root.joinpath("pata.csv").write_text("image,identity,gender,activity\n" + "".join(rows), encoding="utf-8")
    # the images endpoint (text-to-image and edits) the generators call instead of a paid API
    ws.server = ThreadingHTTPServer(("127.0.0.1", 0), _ImagesEndpoint)
    threading.Thread(target=ws.server.serve_forever, daemon=True).start()
    ws.images_url = f"http://127.0.0.1:{ws.server.server_port}/v1"
    return ws


class _ImagesEndpoint(BaseHTTPRequestHandler):
    """/v1/images/generations and /v1/images/edits on 127.0.0.1 (OpenAI-compatible): a 16-px PNG whose
    colour is derived from the prompt (each identity x activity gets its own image); an edit returns the
    uploaded image with that colour blended in."""

    def do_POST(self):  # noqa: N802
        import base64
        import hashlib
        from email import policy
        from email.parser import BytesParser

        from PIL import Image

        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.path.endswith("/generations"):
            prompt, uploaded = json.loads(body)["prompt"], None
        else:
            message = BytesParser(policy=policy.default).parsebytes(
                b"Content-Type: " + self.headers["Content-Type"].encode() + b"\r\n\r\n" + body)
            parts = {part.get_param("name", header="content-disposition"): part.get_payload(decode=True)
                     for part in message.iter_parts()}
            prompt, uploaded = parts["prompt"].decode(), Image.open(io.BytesIO(parts["image"])).convert("RGB")
        colour = tuple(hashlib.sha256(prompt.encode()).digest()[:3])
        image = Image.new("RGB", (16, 16), colour)
        if uploaded is not None:
            image = Image.blend(uploaded.resize((16, 16)), image, 0.5)
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
        send_json(self, {"data": [{"b64_json": base64.b64encode(buffer.getvalue()).decode()}]})

    def log_message(self, *args):
        pass


def fill_image_ratings(check: Path) -> None:
    """Both annotators pass every sampled image (Table 9 sheets)."""
    for sheet in check.glob("ratings_*.csv"):
        with open(sheet, encoding="utf-8", newline="") as handle:
            rows = list(csv.DictReader(handle))
        for row in rows:
            row["identity_depicted"], row["ambiguous_features"] = "yes", "no"
            row["activity_depicted"] = "yes" if row["activity"] else "n/a"
        _write_rows(sheet, rows)


def fill_pair_ratings(check: Path) -> None:
    """Both annotators name the left person of every pair A (Table 10 sheets)."""
    for sheet in check.glob("pair_ratings_*.csv"):
        lines = sheet.read_text(encoding="utf-8").splitlines()
        sheet.write_text("\n".join(lines[:1] + [line.replace(",,", ",A,", 1) if line.endswith(",,") else line
                                                for line in lines[1:]]) + "\n", encoding="utf-8")


def fill_relevance_sheet(workdir: Path, rated: Path) -> None:
    """Every annotator rates every pair relevant (1 on the 1-5 scale: kept)."""
    with open(workdir / "validation" / "relevance_sheet.csv", encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        row["relevance"] = "1"
    _write_rows(rated, rows)


def _write_rows(path: Path, rows: list[dict]) -> None:
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
