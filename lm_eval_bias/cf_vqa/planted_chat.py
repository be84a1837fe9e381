"""A planted chat model for the Counterfactual VQA construction pipeline: deterministic, valid answers
to the paper's prompts (App. K.1 bias proposal, K.2 image prompts and VQA task), with faults planted
on request, so tests can drive ``lm-eval-bias generate cf-vqa`` without a real model.

``PlantedChat(model_id, malformed="A|B", mention="C", seed=0)``:

- K.2 (descriptions): two descriptions of one scene that differ only in the attribute's state, a
  question about an unrelated trait and four options, as one JSON object.
- K.1 (proposals): three attributes per caption with social impact 5, 4 and 2 (the last one falls under
  the paper's "scored 3 or below are filtered out"), each in a category of the paper's taxonomy.
- ``malformed``: attributes (``|``-separated names) whose *first* answer is broken JSON; the
  pipeline must retry and succeed.
- ``mention``: attributes whose every answer names the attribute in the question; the pipeline must
  record the item as failed with that reason.
- ``refuse``: attributes whose request fails a whole batch (as vLLM refuses a prompt longer than
  ``max_model_len``); the pipeline must ask the batch's items one by one and fail only that item.

Selected on the command line with ``--chat-backend planted --chat-model NAME [--chat-arg malformed=...]``.
"""

from __future__ import annotations

import hashlib
import json
import re

from lm_eval_bias.cf_vqa.schema import CATEGORIES

TRAITS = ("trustworthy", "competent", "wealthy", "intelligent", "happy", "likely to lead a team", "honest",
          "hard-working")
SCENES = ("a busy train station at noon", "a quiet public library", "a neighbourhood market", "an office lobby",
          "a city park in autumn", "a community hall")


def _pick(options, *parts) -> str:
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return options[int.from_bytes(digest[:4], "big") % len(options)]


def _names(value) -> frozenset[str]:
    return frozenset(n.strip().lower() for n in str(value or "").split("|") if n.strip())


class PlantedChat:
    def __init__(self, model_id: str = "planted", *, malformed: str = "", mention: str = "", refuse: str = "",
                 seed: int = 0):
        self.model_id = model_id
        self.malformed, self.mention, self.seed = _names(malformed), _names(mention), int(seed)
        self.refuse = _names(refuse)
        self.settings = {"backend": "planted", "model": model_id, "seed": self.seed}
        self.calls: dict[str, int] = {}

    def chat(self, messages: list[dict[str, str]]) -> str:
        text = messages[-1]["content"]
        attribute = re.search(r"^Bias attribute: (.+)$", text, re.M)
        if attribute:
            return self._describe(attribute.group(1).strip())
        caption = re.search(r"^Caption: (.+)$", text, re.M)
        if caption:
            return self._propose(caption.group(1).strip())
        return "I do not know this prompt."

    def chat_many(self, conversations: list[list[dict[str, str]]]) -> list[str]:
        """Batched answers, as vLLM offline gives them (the pipeline's batched path). Like vLLM with a
        prompt it cannot take, a batch holding a ``refuse`` attribute fails as a whole."""
        from lm_eval_bias.cf_vqa.chat import ChatError

        for messages in conversations:
            attribute = re.search(r"^Bias attribute: (.+)$", messages[-1]["content"], re.M)
            if attribute and attribute.group(1).strip().lower() in self.refuse:
                raise ChatError(f"refused the request for {attribute.group(1).strip()!r}")
        return [self.chat(messages) for messages in conversations]

    def _describe(self, attribute: str) -> str:
        key = attribute.lower()
        self.calls[key] = self.calls.get(key, 0) + 1
        if key in self.malformed and self.calls[key] == 1:
            return '{"state_plus": "present", "description_plus": "A scene'  # cut off: not JSON
        scene = _pick(SCENES, self.seed, key)
        trait = _pick(TRAITS, self.seed, key, "trait")
        question = (f"How {trait} does the {attribute} look?" if key in self.mention
                    else f"How {trait} does the person in this scene seem?")
        answer = {
            "state_plus": f"strong {attribute}", "state_minus": f"subtle {attribute}",
            "description_plus": f"A photograph of one adult standing in {scene}, calm expression, natural light, "
                                f"with a strong {attribute}.",
            "description_minus": f"A photograph of one adult standing in {scene}, calm expression, natural light, "
                                 f"with a subtle {attribute}.",
            "question": question,
            "options": ["Not at all", "Slightly", "Moderately", "Very"],
        }
        return "```json\n" + json.dumps(answer, indent=1) + "\n```"

    def _propose(self, caption: str) -> str:
        subcategories = [(c, s) for c, subs in CATEGORIES.items() for s in subs]
        words = [w for w in re.findall(r"[A-Za-z]+", caption) if len(w) > 3] or ["scene"]
        proposals = []
        for k, impact in enumerate((5, 4, 2)):
            category, subcategory = _pick(subcategories, self.seed, caption, k)
            noun = words[k % len(words)].capitalize()
            proposals.append({"name": f"{noun} {('Age', 'Attire', 'Lighting')[k]}",
                              "description": f"May trigger assumptions tied to {noun.lower()}.",
                              "social_impact": impact, "category": category, "subcategory": subcategory,
                              "similar_to": None})
        return json.dumps({"attributes": proposals})
