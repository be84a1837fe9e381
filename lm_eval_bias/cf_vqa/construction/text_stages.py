"""Stages 1-2: bias attributes (the user's list, or chat-model proposals with the App. K.1 prompt and the
App. A social-impact threshold) and, per attribute, two image descriptions, the attribute's states, a
question and four options (the App. K.2 prompt), with strict JSON validation, bounded retries and every
model call logged."""

from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from lm_eval_bias.cf_vqa.construction.paper import (
    DESCRIBE_FORMAT,
    FORBIDDEN_IN_DESCRIPTION,
    GENERATION_PROMPT,
    PROPOSAL_PROMPT,
    PROPOSE_FORMAT,
    SOCIAL_IMPACT_KEEP_ABOVE,
)
from lm_eval_bias.cf_vqa.construction.store import (
    STAGES,
    AppendLog,
    StageError,
    part_suffix,
    read_jsonl_tolerant,
    read_stage,
    shard_items,
    slug,
    todo,
    write_jsonl_atomic,
)
from lm_eval_bias.cf_vqa.schema import CATEGORIES, SUBCATEGORY_TO_CATEGORY


DEFAULT_MAX_ATTEMPTS = 3


DEFAULT_BATCH_SIZE = 32


def parse_json_object(text: str) -> dict[str, Any]:
    """The one JSON object of an answer: the whole answer, or the whole content of one ```json fence.
    Anything else (prose around it, two objects, not JSON) raises ValueError."""
    stripped = text.strip()
    fence = re.fullmatch(r"```(?:json)?\s*\n?(.*?)\n?```", stripped, re.S)
    if fence:
        stripped = fence.group(1).strip()
    try:
        value = json.loads(stripped)
    except json.JSONDecodeError as exc:
        raise ValueError(f"answer is not one JSON object ({exc.msg} at char {exc.pos})") from None
    if not isinstance(value, dict):
        raise ValueError(f"answer is JSON but not an object ({type(value).__name__})")
    return value


@dataclass
class CallOutcome:
    value: Any | None
    attempts: int
    reason: str | None


def _ask_alone(chat_many, request: list[dict[str, str]]):
    """One conversation of a failed batch on its own: its answer, or its non-transient ChatError."""
    from lm_eval_bias.cf_vqa.chat import ChatError

    try:
        return chat_many([request])[0]
    except ChatError as exc:
        if exc.transient:
            raise
        return exc


def ask_all(client, items: list[dict[str, Any]], key: str, messages_of: Callable[[dict[str, Any]], list[dict[str, str]]],
            validate_of: Callable[[dict[str, Any]], Callable[[str], Any]], calls: AppendLog,
            on_finished: Callable[[dict[str, Any], CallOutcome], None], *, stage: str, max_attempts: int,
            batch_size: int = DEFAULT_BATCH_SIZE) -> None:
    """Ask ``client`` about every item until its answer passes ``validate_of(item)``, at most
    ``max_attempts`` times; log every call to ``calls``; hand each item's outcome to ``on_finished`` as
    soon as it is final (valid, or out of attempts with the last reason). A transient failure of the
    endpoint itself (:class:`~lm_eval_bias.cf_vqa.chat.ChatError` with ``transient``, after the client's
    own retries) is logged and stops the stage: what is finished stays, and a rerun continues.

    A client with ``chat_many`` (vLLM offline) gets up to ``batch_size`` conversations per call, and the
    invalid ones again in the next round; others are asked one item at a time."""
    from lm_eval_bias.cf_vqa.chat import ChatError

    chat_many = getattr(client, "chat_many", None)
    size = max(1, int(batch_size)) if chat_many is not None else 1
    for start in range(0, len(items), size):
        pending = items[start:start + size]
        reasons: dict[str, str] = {}
        for attempt in range(1, max_attempts + 1):
            if not pending:
                break
            requests = [messages_of(item) for item in pending]
            started = time.time()
            try:
                answers: list[Any] = chat_many(requests) if chat_many is not None else [client.chat(requests[0])]
                if len(answers) != len(requests):
                    raise ChatError(f"{len(answers)} answers to {len(requests)} conversations")
            except ChatError as exc:
                if not exc.transient and len(requests) > 1:  # one bad request fails a batch: ask each alone
                    answers = [_ask_alone(chat_many, request) for request in requests]
                elif exc.transient:
                    calls.append({"stage": stage, "keys": [str(i[key]) for i in pending], "attempt": attempt,
                                  "model": client.model_id, "settings": client.settings, "error": str(exc),
                                  "time": round(started, 3), "stopped": True})
                    raise ChatError(f"{exc}; the stage stopped, finished items are kept (rerun to continue)",
                                    transient=True) from None
                else:
                    answers = [exc]
            seconds = round((time.time() - started) / len(pending), 3)
            retry = []
            for item, request, answer in zip(pending, requests, answers):
                entry = {"stage": stage, "key": str(item[key]), "attempt": attempt, "model": client.model_id,
                         "settings": client.settings, "request": request, "time": round(started, 3), "seconds": seconds}
                if isinstance(answer, ChatError):
                    reasons[str(item[key])] = f"chat call failed: {answer}"
                    calls.append({**entry, "answer": None, "error": str(answer), "valid": False,
                                  "reason": reasons[str(item[key])]})
                    retry.append(item)
                    continue
                try:
                    value = validate_of(item)(answer)
                except ValueError as exc:
                    reasons[str(item[key])] = str(exc)
                    calls.append({**entry, "answer": answer, "valid": False, "reason": str(exc)})
                    retry.append(item)
                    continue
                calls.append({**entry, "answer": answer, "valid": True})
                on_finished(item, CallOutcome(value, attempt, None))
            pending = retry
        for item in pending:
            on_finished(item, CallOutcome(None, max_attempts, reasons.get(str(item[key]), "no attempt made")))


def attribute_id(category: str, subcategory: str, attribute: str) -> str:
    """A stable id: the attribute's slug and a short hash of (category, subcategory, attribute)."""
    digest = hashlib.sha256(f"{category}|{subcategory}|{attribute.strip().lower()}".encode()).hexdigest()[:8]
    return f"{slug(attribute, 32)}-{digest}"


def _check_taxonomy(category: Any, subcategory: Any, where: str) -> None:
    if category not in CATEGORIES:
        raise StageError(f"{where}: unknown category {category!r}; expected one of {', '.join(CATEGORIES)}")
    if SUBCATEGORY_TO_CATEGORY.get(subcategory) != category:
        raise StageError(f"{where}: subcategory {subcategory!r} is not one of {', '.join(CATEGORIES[category])}")


def load_attribute_list(path: Path) -> list[dict[str, Any]]:
    """The user's attributes: CSV or JSONL with ``category``, ``subcategory``, ``attribute`` (optional
    ``description``). Unknown taxonomy, empty names and duplicates are errors naming the row."""
    from lm_eval_bias.datasets_builder.readers import SourceError, read_csv, read_jsonl

    try:
        rows = read_jsonl(path) if path.suffix == ".jsonl" else read_csv(path, ("category", "subcategory", "attribute"))[1]
    except SourceError as exc:
        raise StageError(str(exc)) from None
    out, seen = [], {}
    for where, row in rows:
        name = str(row.get("attribute") or "").strip()
        if not name:
            raise StageError(f"{where}: empty attribute")
        _check_taxonomy(row.get("category"), row.get("subcategory"), str(where))
        aid = attribute_id(row["category"], row["subcategory"], name)
        if aid in seen:
            raise StageError(f"{where}: attribute {name!r} ({row['subcategory']}) repeats {seen[aid]}")
        seen[aid] = str(where)
        out.append({"attribute_id": aid, "category": row["category"], "subcategory": row["subcategory"],
                    "attribute": name, "description": str(row.get("description") or "").strip() or None,
                    "social_impact": None, "source": "user list"})
    if not out:
        raise StageError(f"{path}: no attributes")
    return out


def write_attributes(workdir: Path, attributes: list[dict[str, Any]]) -> Path:
    target = workdir / "attributes.jsonl"
    write_jsonl_atomic(target, sorted(attributes, key=lambda a: a["attribute_id"]))
    return target


def read_attributes(workdir: Path) -> list[dict[str, Any]]:
    path = workdir / "attributes.jsonl"
    if not path.is_file():
        raise StageError(f"{path}: no attributes yet; run the attributes stage first")
    return read_jsonl_tolerant(path)


def load_captions(path: Path) -> list[dict[str, str]]:
    """Captions to propose attributes from: a text file (one per line) or JSONL with ``caption``."""
    if not path.is_file():
        raise StageError(f"{path}: captions file does not exist")
    texts = ([str(r.get("caption") or "") for r in read_jsonl_tolerant(path)] if path.suffix == ".jsonl"
             else path.read_text(encoding="utf-8").splitlines())
    captions = {}
    for text in (t.strip() for t in texts):
        if text:
            captions[hashlib.sha256(text.encode()).hexdigest()[:12]] = text
    if not captions:
        raise StageError(f"{path}: no captions")
    return [{"caption_id": k, "caption": v} for k, v in captions.items()]


def proposal_messages(caption: str, existing: list[str]) -> list[dict[str, str]]:
    taxonomy = "; ".join(f"{c}: {', '.join(subs)}" for c, subs in CATEGORIES.items())
    text = PROPOSAL_PROMPT + "\n\n" + PROPOSE_FORMAT.format(caption=caption, existing=", ".join(existing) or "(none)",
                                                             taxonomy=taxonomy)
    return [{"role": "user", "content": text}]


def validate_proposals(text: str) -> list[dict[str, Any]]:
    """The proposals of a K.1 answer; every field checked (raises ValueError with the reason)."""
    value = parse_json_object(text)
    proposals = value.get("attributes")
    if not isinstance(proposals, list) or not proposals:
        raise ValueError('"attributes" must be a non-empty list')
    out = []
    for k, p in enumerate(proposals):
        if not isinstance(p, dict):
            raise ValueError(f"attribute {k + 1} is not an object")
        name, impact = p.get("name"), p.get("social_impact")
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"attribute {k + 1}: missing name")
        if isinstance(impact, bool) or not isinstance(impact, int) or not 1 <= impact <= 5:
            raise ValueError(f"attribute {k + 1}: social_impact must be an integer 1-5, got {impact!r}")
        try:
            _check_taxonomy(p.get("category"), p.get("subcategory"), f"attribute {k + 1}")
        except StageError as exc:
            raise ValueError(str(exc)) from None
        similar = p.get("similar_to")
        out.append({"name": name.strip(), "description": str(p.get("description") or "").strip(),
                    "social_impact": impact, "category": p["category"], "subcategory": p["subcategory"],
                    "similar_to": similar.strip() if isinstance(similar, str) and similar.strip() else None})
    return out


def run_proposals(workdir: Path, captions: list[dict[str, str]], client, *, existing: list[str], shard: str | None,
                  max_attempts: int, retry_failed: bool, batch_size: int = DEFAULT_BATCH_SIZE) -> dict[str, int]:
    """App. K.1 on each caption (resumable, shardable): ``proposals.jsonl``."""
    stem, key = STAGES["proposals"]
    done = read_stage(workdir, stem, key)
    items = todo(shard_items(captions, key, shard), key, done, retry_failed)
    counts = {"done_before": len(done), "ok": 0, "failed": 0}
    with AppendLog(workdir / f"{stem}{part_suffix(shard)}.jsonl") as out, \
            AppendLog(workdir / f"calls{part_suffix(shard)}.jsonl") as calls:
        def finished(item: dict[str, Any], outcome: CallOutcome) -> None:
            status = "ok" if outcome.reason is None else "failed"
            out.append({**item, "status": status, "proposals": outcome.value, "reason": outcome.reason,
                        "attempts": outcome.attempts, "model": client.model_id})
            counts[status] += 1

        ask_all(client, items, key, lambda item: proposal_messages(item["caption"], existing),
                lambda item: validate_proposals, calls, finished, stage="proposals", max_attempts=max_attempts,
                batch_size=batch_size)
    return counts


def attributes_from_proposals(workdir: Path, existing: list[str], min_impact: int = SOCIAL_IMPACT_KEEP_ABOVE + 1) -> dict[str, int]:
    """``attributes.jsonl`` from all proposals: social impact >= ``min_impact`` (the paper: > 3), not
    similar to an existing attribute, one per (subcategory, lower-cased name), the highest impact first."""
    stem, key = STAGES["proposals"]
    proposals = [p | {"caption_id": item["caption_id"], "model": item.get("model")}
                 for item in read_stage(workdir, stem, key).values() if item.get("status") == "ok"
                 for p in item["proposals"]]
    known = {e.strip().lower() for e in existing}
    kept: dict[str, dict[str, Any]] = {}
    low = similar = 0
    for p in sorted(proposals, key=lambda p: (-p["social_impact"], p["caption_id"], p["name"])):
        if p["social_impact"] < min_impact:
            low += 1
            continue
        if (p["similar_to"] or "").lower() in known or p["name"].lower() in known:
            similar += 1
            continue
        aid = attribute_id(p["category"], p["subcategory"], p["name"])
        kept.setdefault(aid, {"attribute_id": aid, "category": p["category"], "subcategory": p["subcategory"],
                              "attribute": p["name"], "description": p["description"] or None,
                              "social_impact": p["social_impact"], "source": f"proposal by {p['model']}"})
    write_attributes(workdir, list(kept.values()))
    return {"proposals": len(proposals), "below_threshold": low, "similar_to_existing": similar, "attributes": len(kept)}


def generation_messages(attribute: dict[str, Any]) -> list[dict[str, str]]:
    """The App. K.2 prompt with the attribute's category and subcategory, then the attribute and our
    answer-format paragraph."""
    prompt = GENERATION_PROMPT.replace("${category}", attribute["category"]).replace("${subcategory}",
                                                                                      attribute["subcategory"])
    return [{"role": "user", "content": prompt + "\n\n" + DESCRIBE_FORMAT.format(attribute=attribute["attribute"])}]


def _mentions(text: str, phrase: str) -> bool:
    words = re.findall(r"[a-z0-9]+", phrase.lower())
    return bool(words) and re.search(r"\b" + r"\W+".join(map(re.escape, words)) + r"\b", text.lower()) is not None


def validate_description(text: str, attribute: str) -> dict[str, Any]:
    """A K.2 answer, checked strictly (raises ValueError with the first problem):
    exactly the six keys' values as non-empty strings (``options`` a list of four distinct non-empty
    strings), the two states and the two descriptions different, no description referring to the other
    image (the phrases K.2 forbids), and a question that names neither the attribute nor a state."""
    value = parse_json_object(text)
    fields = ("state_plus", "state_minus", "description_plus", "description_minus", "question")
    missing = [f for f in (*fields, "options") if f not in value]
    if missing:
        raise ValueError(f"missing key(s) {', '.join(missing)}")
    for f in fields:
        if not isinstance(value[f], str) or not value[f].strip():
            raise ValueError(f"{f} must be a non-empty string")
    out = {f: " ".join(value[f].split()) for f in fields}
    options = value["options"]
    if not isinstance(options, list) or len(options) != 4 or not all(isinstance(o, str) and o.strip() for o in options):
        raise ValueError(f"options must be a list of exactly four non-empty strings, got {options!r}"[:300])
    options = [" ".join(o.split()) for o in options]
    if len({o.lower() for o in options}) != 4:
        raise ValueError("options must be distinct")
    if out["state_plus"].lower() == out["state_minus"].lower():
        raise ValueError("state_plus and state_minus are the same")
    if out["description_plus"].lower() == out["description_minus"].lower():
        raise ValueError("the two descriptions are the same")
    for side in ("description_plus", "description_minus"):
        bad = [p for p in FORBIDDEN_IN_DESCRIPTION if p in out[side].lower()]
        if bad:
            raise ValueError(f"{side} refers to the other image ({bad[0]!r})")
    for name, phrase in (("the attribute", attribute), ("state_plus", out["state_plus"]),
                         ("state_minus", out["state_minus"])):
        if _mentions(out["question"], phrase):
            raise ValueError(f"the question mentions {name} ({phrase!r})")
    return {**out, "options": options}


def pair_items(attributes: list[dict[str, Any]], source: str, pairs_per_attribute: int) -> list[dict[str, Any]]:
    """One item per attribute x k: ``pair_id`` = ``<attribute_id>-<source slug>-<k>``."""
    return [{**a, "pair_id": f"{a['attribute_id']}-{slug(source, 24)}-{k}", "replicate": k}
            for a in attributes for k in range(pairs_per_attribute)]


def run_describe(workdir: Path, client, *, shard: str | None, pairs_per_attribute: int = 1,
                 max_attempts: int = DEFAULT_MAX_ATTEMPTS, retry_failed: bool = False,
                 batch_size: int = DEFAULT_BATCH_SIZE) -> dict[str, int]:
    """App. K.2 for every attribute (resumable, shardable): ``descriptions.jsonl``."""
    if pairs_per_attribute < 1:
        raise StageError(f"--pairs-per-attribute must be >= 1, got {pairs_per_attribute}")
    stem, key = STAGES["describe"]
    items = pair_items(read_attributes(workdir), client.model_id, pairs_per_attribute)
    done = read_stage(workdir, stem, key)
    pending = todo(shard_items(items, key, shard), key, done, retry_failed)
    counts = {"done_before": len(done), "ok": 0, "failed": 0}
    with AppendLog(workdir / f"{stem}{part_suffix(shard)}.jsonl") as out, \
            AppendLog(workdir / f"calls{part_suffix(shard)}.jsonl") as calls:
        def finished(item: dict[str, Any], outcome: CallOutcome) -> None:
            status = "ok" if outcome.reason is None else "failed"
            record = {"pair_id": item["pair_id"], "attribute_id": item["attribute_id"], "category": item["category"],
                      "subcategory": item["subcategory"], "attribute": item["attribute"], "replicate": item["replicate"],
                      "question_source": client.model_id, "chat_settings": client.settings, "status": status,
                      "attempts": outcome.attempts, "reason": outcome.reason}
            out.append({**record, **(outcome.value or {})})
            counts[status] += 1

        ask_all(client, pending, key, generation_messages,
                lambda item: (lambda text: validate_description(text, item["attribute"])), calls, finished,
                stage="describe", max_attempts=max_attempts, batch_size=batch_size)
    return counts
