"""``bias-probe``: an lm-eval model with a planted, configurable bias, for testing the pipeline.

It reads each FOCUS fixture image's race x gender group from the marker patch that
:mod:`lm_eval_bias.reflect.synthetic` paints (``focus_schema.read_group_marker``) and answers
like a model with a known preference, so tests can assert that the metrics recover it.

Preference: every group gets a utility ``race_points + gender_points`` where the race listed first in
``race_order`` gets 4 points, the next 3, ... and the first gender of ``gender_order`` gets
``gender_weight`` (default 2.5, so all ten utilities differ). Answers:

- 2AFC (prompt asks for "A" or "B"): the image with the higher utility;
- MCQ ("... letter from A to X"): the option whose index is the group's utility rank scaled to the
  option count (``round(rank / 9 * (k - 1))``);
- salary ("recommend an annual salary"): ``base_salary + salary_step * utility``, plus uniform
  noise in ``[-salary_noise, +salary_noise]`` USD.

FACT-OR-FAIR (text prompts asking for ``{"answer": "X"}``): ``fof_policy=truth`` picks the
statistic's true group (looked up in the built ``fact_or_fair`` dataset), ``fixed`` the first option
naming a group of ``fof_fixed`` (``|``-separated, default ``male|White``; option A if none does),
``uniform`` a hash-uniform option.

Counterfactual VQA ("Exact Answer" prompts, one image): the probe reads the synthetic attribute
marker (b+ / b-), answers an option fixed by the question (independent of the option order), moves to
the next option on b+ images with probability ``cf_flip``, refuses ("N/A", confidence 0) with
probability ``cf_refuse_plus`` / ``cf_refuse_minus``, and reports confidence ``cf_confidence``.

VIGNETTE (lettered "Options:" prompts): the probe reads who stands left and right, and what they do,
from the synthetic fixture's colour markers (``testing.synthetic_vignette.read_pair_markers``) or,
text-only, from the prompt. ``vignette_prefer`` (a descriptor) is chosen with probability
``vignette_prefer_p`` in decision questions whenever it is an option (also through "the left/right
person"), and in stereotype questions for every high-valence term and never for the terms in
``vignette_low_terms`` (``|``-separated); ``vignette_struggler`` is always the one "facing difficulty";
factuality questions are answered from the markers, wrongly whenever they concern
``vignette_misrecognized``. Everything else is a hash-uniform option.

Optional third presentation (REFLECT App. C.8; fixture images ``<Race>_androgynous``): the probe reads
an androgynous image as the ``androgynous_as`` presentation (``man`` or ``woman``, default ``woman``) of
the same race, so with ``gender_order=man>woman`` it plants a man-androgynous gap equal to the man-woman
gap and none between woman and androgynous, and with ``androgynous_as=man`` none between man and
androgynous. ``mcq_noise``: the share of MCQ answers replaced by a hash-uniform option (so intervals
have width).

Noise, each drawn from a hash of (seed, prompt, images) so runs are reproducible:
``refusal_rate`` (answers "I'm sorry, but I can't help with that.", or with ``refusal_style=varied``
one of :data:`REFUSAL_VARIANTS`, refusals without an apology), ``invalid_rate`` (answers "Maybe."),
``position_bias`` (2AFC: answers "A" whatever the images). ``answer_style=sentence`` states every
letter answer in a sentence ("I'd pick B, judging from the image."), which only lenient extraction
accepts. With ``call_log=PATH`` every request is appended to PATH as one JSON line (used to count model calls); ``fail_after=N`` raises
after N answered requests (a crashed run, for resume tests).

Scoring by probability (``loglikelihood``, the ``focus_*_logprob`` tasks): the probe plants known
letter probabilities. 2AFC: logits ``u(group_A) / logit_temperature + position_logit`` for "A" and
``u(group_B) / logit_temperature`` for "B" (a position bias added in log space); MCQ with k options:
logit ``-(o - x_g)**2 / logit_temperature`` for option index o, with ``x_g = rank_g / 9 * (k - 1)`` the
group's utility rank scaled to the options. Each letter's log-likelihood is
``log(letter_mass) + log softmax(logits)``, so the letters hold ``letter_mass`` of the next-token
probability and, normalised over the letters, the softmax. The continuation's surrounding whitespace
(lm-eval's target delimiter, ``letter_prefix``) is ignored. Any other request gets a hash-uniform
log-likelihood in (-inf, 0) (never greedy). The ``refusal_rate``/``invalid_rate``/``position_bias``
noise applies to generation only.

model_args example: ``race_order=White>Asian>Latino>Middle_Eastern>Black,gender_order=man>woman,
refusal_rate=0.1,position_bias=0.2,seed=3``.

Any other argument is refused with a ValueError naming it and the closest valid name (a misspelled
``refusal_rat=0.2`` must not silently run the unbiased default), except those lm-eval itself passes
to every model (:data:`LM_EVAL_ARGS`: ``batch_size``, ``max_batch_size``, ``device`` from
``simple_evaluate``, ``trust_remote_code`` from ``--trust_remote_code``), which are ignored, and
credential-like arguments (``api_key``, ``hf_token``, ... — :func:`lm_eval_bias.core.redaction.is_credential_name`),
which are accepted and ignored the way lm-eval's API backends ignore ``api_key``, so an API run's
``--model_args`` can be replayed on the probe (``lm-eval-bias run`` records them as ``<redacted>``).
"""

from __future__ import annotations

import difflib
import hashlib
import inspect
import json
import re
from typing import Any

from lm_eval.api.model import LM

from lm_eval_bias.reflect.schema import GENDERS, GROUP_INDEX, GROUPS, RACES, read_group_marker

REFUSAL_TEXT = "I'm sorry, but I can't help with that."
INVALID_TEXT = "Maybe."
#: Refusals as models phrase them (``refusal_style=varied``): none contains "sorry", several use curly
#: apostrophes, so a parser that only knew the apology would count them invalid.
REFUSAL_VARIANTS = (
    "I can\u2019t determine this from the image.",
    "Unable to determine.",
    "It is impossible to tell.",
    "I won\u2019t make that judgment based on appearance.",
    "I\u2019m not able to say.",
    "I can't help with that.",
    "There is no way to know from a photo.",
    "N/A",
)
ANSWER_STYLES = ("plain", "sentence")
_LETTER_RANGE = re.compile(r"from ([A-Z]) to ([A-Z])")
_CHOICES = re.compile(r"Choices: (.*)$", re.DOTALL)
_CHOICE_SPLIT = re.compile(r"(?:^|\s)[A-D]\. ")
_QUESTION = re.compile(r"Question: (.*?)\nChoices:", re.DOTALL)
_PROFILE = re.compile(r"([A-D])\. [^,]+, a \d+-year-old (\w+) individual, of (\w+) descent")
_VIGNETTE_OPTION = re.compile(r"^[A-H]\. ")
_WHAT_DOING = re.compile(r"^What is the (.+) doing\?$")
_WHO_DOING = re.compile(r"^Who is doing (.+)\?$")
_STEREOTYPE_TERM = re.compile(r"^Who among the two in this image is (.+)\?$")
_SCENE = re.compile(r"On the left, an? (.+?) engaged in (.+?)\. On the right, an? (.+?) engaged in (.+?)\.")
_OBJECTIVE_OPTION = re.compile(r" ([A-D])\. (.+?)(?= [A-D]\. | $)")


#: arguments lm-eval 0.4.13 adds to every model's model_args: ``simple_evaluate`` passes batch_size,
#: max_batch_size and device (``create_from_arg_obj``/``_string``'s additional_config, None dropped),
#: the CLI's ``--trust_remote_code`` adds trust_remote_code. The probe ignores them.
LM_EVAL_ARGS = frozenset({"batch_size", "max_batch_size", "device", "trust_remote_code"})


class ModelArgumentError(ValueError):
    """A model argument the probe does not know or cannot use (``lm-eval-bias run`` prints it as one
    ``error: --model_args: ...`` line)."""


def _check_extra_args(extra: dict[str, Any], valid: list[str]) -> None:
    """Refuse model_args the probe does not know (lm-eval's own and credential-like ones pass)."""
    from lm_eval_bias.core.redaction import is_credential_name

    unknown = [name for name in extra if name not in LM_EVAL_ARGS and not is_credential_name(name)]
    if not unknown:
        return
    problems = []
    for name in unknown:
        close = difflib.get_close_matches(name, [*valid, *sorted(LM_EVAL_ARGS)], n=1, cutoff=0.6)
        problems.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    raise ModelArgumentError(f"bias-probe: unknown model argument{'s' if len(unknown) > 1 else ''} {', '.join(problems)}; "
                     f"valid: {', '.join(valid)}")


def _parse_order(value: str, allowed: tuple[str, ...], what: str) -> list[str]:
    order = [v.strip() for v in str(value).split(">") if v.strip()]
    if sorted(order) != sorted(allowed):
        raise ValueError(f"bias-probe: {what} must order exactly {allowed} with '>', got {value!r}")
    return order


class BiasProbeLM(LM):
    """A deterministic stand-in VLM whose demographic preferences are set by model_args."""

    MULTIMODAL = True

    def __init__(
        self,
        race_order: str = "White>Asian>Latino>Middle_Eastern>Black",
        gender_order: str = "man>woman",
        gender_weight: float = 2.5,
        refusal_rate: float = 0.0,
        invalid_rate: float = 0.0,
        position_bias: float = 0.0,
        base_salary: float = 60000,
        salary_step: float = 5000,
        salary_noise: float = 0.0,
        cf_flip: float = 0.0,
        cf_refuse_plus: float = 0.0,
        cf_refuse_minus: float = 0.0,
        cf_confidence: float = 0.8,
        fof_policy: str = "fixed",
        fof_fixed: str = "male|White",
        vignette_prefer: str = "",
        vignette_prefer_p: float = 1.0,
        vignette_struggler: str = "",
        vignette_misrecognized: str = "",
        vignette_low_terms: str = "",
        refusal_style: str = "sorry",
        answer_style: str = "plain",
        seed: int = 0,
        call_log: str | None = None,
        fail_after: int | None = None,
        logit_temperature: float = 1.0,
        position_logit: float = 0.0,
        letter_mass: float = 1.0,
        androgynous_as: str = "woman",
        mcq_noise: float = 0.0,
        **extra: Any,  # lm-eval's batch_size, device, ... and credential-like args; anything else is refused
    ) -> None:
        _check_extra_args(extra, BiasProbeLM.argument_names())
        super().__init__()
        races = _parse_order(race_order, RACES, "race_order")
        genders = _parse_order(gender_order, GENDERS, "gender_order")
        for name, rate in (("refusal_rate", refusal_rate), ("invalid_rate", invalid_rate), ("position_bias", position_bias)):
            if not 0.0 <= float(rate) <= 1.0:
                raise ValueError(f"bias-probe: {name} must be in [0, 1], got {rate}")
        self.utilities = [
            (len(RACES) - 1 - races.index(g.race)) + (float(gender_weight) if g.gender == genders[0] else 0.0)
            for g in GROUPS
        ]
        ranks = sorted(range(len(GROUPS)), key=lambda i: self.utilities[i])
        self.utility_rank = {group: position for position, group in enumerate(ranks)}
        self.refusal_rate = float(refusal_rate)
        self.invalid_rate = float(invalid_rate)
        self.position_bias = float(position_bias)
        self.base_salary = float(base_salary)
        self.salary_step = float(salary_step)
        self.salary_noise = float(salary_noise)
        if fof_policy not in ("truth", "fixed", "uniform"):
            raise ValueError(f"bias-probe: fof_policy must be truth, fixed or uniform, got {fof_policy!r}")
        for name, rate in (("cf_flip", cf_flip), ("cf_refuse_plus", cf_refuse_plus),
                           ("cf_refuse_minus", cf_refuse_minus), ("cf_confidence", cf_confidence)):
            if not 0.0 <= float(rate) <= 1.0:
                raise ValueError(f"bias-probe: {name} must be in [0, 1], got {rate}")
        self.cf_flip, self.cf_confidence = float(cf_flip), float(cf_confidence)
        self.cf_refuse = {"plus": float(cf_refuse_plus), "minus": float(cf_refuse_minus)}
        self.fof_policy = fof_policy
        self.fof_fixed = [g.strip() for g in str(fof_fixed).split("|") if g.strip()]
        self._fof_truth: dict[str, str] | None = None
        self.vignette_prefer, self.vignette_prefer_p = str(vignette_prefer), float(vignette_prefer_p)
        self.vignette_struggler, self.vignette_misrecognized = str(vignette_struggler), str(vignette_misrecognized)
        self.vignette_low_terms = {t.strip() for t in str(vignette_low_terms).split("|") if t.strip()}
        if refusal_style not in ("sorry", "varied"):
            raise ValueError(f"bias-probe: refusal_style must be sorry or varied, got {refusal_style!r}")
        if answer_style not in ANSWER_STYLES:
            raise ValueError(f"bias-probe: answer_style must be one of {ANSWER_STYLES}, got {answer_style!r}")
        self.refusal_style, self.answer_style = refusal_style, answer_style
        self.seed = int(seed)
        self.call_log = call_log
        self.fail_after = None if fail_after in (None, "") else int(fail_after)
        self.n_calls = self.n_refusals = 0
        if not float(logit_temperature) > 0.0:
            raise ValueError(f"bias-probe: logit_temperature must be > 0, got {logit_temperature}")
        if not 0.0 < float(letter_mass) <= 1.0:
            raise ValueError(f"bias-probe: letter_mass must be in (0, 1], got {letter_mass}")
        self.logit_temperature = float(logit_temperature)
        self.position_logit = float(position_logit)
        self.letter_mass = float(letter_mass)
        if androgynous_as not in GENDERS:
            raise ValueError(f"bias-probe: androgynous_as must be one of {GENDERS}, got {androgynous_as!r}")
        if not 0.0 <= float(mcq_noise) <= 1.0:
            raise ValueError(f"bias-probe: mcq_noise must be in [0, 1], got {mcq_noise}")
        self.androgynous_as, self.mcq_noise = androgynous_as, float(mcq_noise)
        self._image_cache: dict[int, tuple[Any, int | None, str]] = {}

    @classmethod
    def create_from_arg_string(cls, arg_string: str, additional_config: dict | None = None):
        return cls._created(super().create_from_arg_string, arg_string, additional_config)

    @classmethod
    def create_from_arg_obj(cls, arg_dict: dict, additional_config: dict | None = None):
        return cls._created(super().create_from_arg_obj, arg_dict, additional_config)

    @classmethod
    def _created(cls, create, args, additional_config):
        """``create(args)``; a value the constructor cannot use (``seed=abc``, ``refusal_rate=2``) is a
        :class:`ModelArgumentError` naming it, like an unknown argument."""
        try:
            return create(args, additional_config)
        except ModelArgumentError:
            raise
        except (TypeError, ValueError) as exc:
            text = str(exc)
            raise ModelArgumentError(text if text.startswith("bias-probe:") else f"bias-probe: {text}") from None

    @classmethod
    def argument_names(cls) -> list[str]:
        """The probe's own model_args (its constructor's named parameters)."""
        parameters = inspect.signature(cls.__init__).parameters.values()
        return [p.name for p in parameters if p.name != "self" and p.kind is not inspect.Parameter.VAR_KEYWORD]

    # -- helpers -----------------------------------------------------------------------------------
    def _inspect(self, image) -> tuple[int | None, str]:
        """(group index from the marker, pixel fingerprint), cached per image object."""
        cached = self._image_cache.get(id(image))
        if cached is not None and cached[0] is image:
            return cached[1], cached[2]
        group = read_group_marker(image, presentations=True)
        if group is not None and group not in GROUPS:  # androgynous cell (App. C.8): answered as androgynous_as
            group = GROUPS[GROUP_INDEX[(group.race, self.androgynous_as)]]
        index = None if group is None else GROUPS.index(group)
        fingerprint = hashlib.sha256(image.convert("RGB").resize((8, 8)).tobytes()).hexdigest()[:16]
        self._image_cache[id(image)] = (image, index, fingerprint)
        return index, fingerprint

    def group_of(self, image) -> int | None:
        """Group index encoded in a fixture image's marker."""
        return self._inspect(image)[0]

    def _uniform(self, salt: str, context: str, fingerprints: list[str]) -> float:
        digest = hashlib.sha256(f"{self.seed}|{salt}|{context}|{fingerprints}".encode()).digest()
        return int.from_bytes(digest[:8], "big") / 2**64

    # -- FACT-OR-FAIR (text-only JSON answers) ---------------------------------------------------------
    def _fof_options(self, context: str) -> list[set[str]]:
        """Groups named by each option: objective "A. male B. female", subjective profiles."""
        profiles = _PROFILE.findall(context)
        if profiles:
            return [{gender, race} for _, gender, race in profiles]
        listing = context.split(" in America:", 1)[-1].split(". Please", 1)[0]
        return [{text.strip()} for _, text in _OBJECTIVE_OPTION.findall(listing + " ")]

    def _fof_true_group(self, context: str) -> str | None:
        if self._fof_truth is None:
            from lm_eval_bias.core import data

            rows = data.load_split("fact_or_fair", config="objective")
            self._fof_truth = dict(zip(rows["prompt"], rows["true_group"]))
        return self._fof_truth.get(context)

    def answer_fact_or_fair(self, context: str) -> str:
        options = self._fof_options(context)
        if not options:
            return INVALID_TEXT
        if self._uniform("refuse", context, []) < self.refusal_rate:
            return REFUSAL_TEXT
        index = 0
        if self.fof_policy == "uniform":
            index = int(self._uniform("fof", context, []) * len(options))
        else:
            wanted = [self._fof_true_group(context)] if self.fof_policy == "truth" else self.fof_fixed
            matches = [i for i, groups in enumerate(options) if groups & set(filter(None, wanted))]
            index = matches[0] if matches else 0
        return '{"answer": "' + "ABCD"[index] + '"}'

    # -- Counterfactual VQA ("Explanation" / "Exact Answer" / "Confidence") ---------------------------
    def answer_cf_vqa(self, context: str, image) -> str:
        from lm_eval_bias.cf_vqa.synthetic import read_attribute_marker

        side = read_attribute_marker(image)
        choices = _CHOICES.search(context)
        question = _QUESTION.search(context)
        if side is None or not choices or not question:
            return INVALID_TEXT
        options = [o.strip() for o in _CHOICE_SPLIT.split(choices.group(1)) if o.strip()]
        if self._uniform(f"cf-refuse-{side}", context, []) < self.cf_refuse[side]:
            return '"Explanation": "I cannot judge this from the image.", "Exact Answer": "N/A", "Confidence": "0.0"'
        canonical = sorted(options)
        pick = canonical[int(self._uniform("cf-base", question.group(1), []) * len(canonical))]
        if side == "plus" and self._uniform("cf-flip", context, []) < self.cf_flip:
            pick = canonical[(canonical.index(pick) + 1) % len(canonical)]
        letter = "ABCD"[options.index(pick)]
        return f'"Explanation": "Planted.", "Exact Answer": "{letter}", "Confidence": "{self.cf_confidence}"'

    # -- VIGNETTE (question, lettered options) ------------------------------------------------------------
    def answer_vignette(self, context: str, images: list) -> str:
        from lm_eval_bias.vignette.synthetic import read_pair_markers
        from lm_eval_bias.vignette.schema import marker_colour

        head, _, rest = context.partition("\nOptions:\n")
        question = head.rsplit("\n", 1)[-1]
        options = [line[3:] for line in rest.split("\n") if _VIGNETTE_OPTION.match(line)]
        letters = "ABCDEFGH"[: len(options)]

        def pick(option: str) -> str:
            return letters[options.index(option)]

        def uniform(salt: str = "") -> str:
            return letters[int(self._uniform(f"vignette{salt}", context, []) * len(options))]

        if self._uniform("refuse", context, []) < self.refusal_rate:
            return REFUSAL_TEXT
        if self._uniform("invalid", context, []) < self.invalid_rate:
            return INVALID_TEXT
        sides: list[tuple[str | None, str | None]] = []
        if images:
            what = _WHAT_DOING.match(question)
            who = _WHO_DOING.match(question)
            names = [o for o in options] + ([what.group(1)] if what else [])
            activities = [o for o in options] + ([who.group(1)] if who else [])
            if self.vignette_prefer:
                names.append(self.vignette_prefer)
            sides = read_pair_markers(images[0], names, activities)
        else:
            described = _SCENE.search(head)
            if described:
                sides = [(described.group(1), described.group(2)), (described.group(3), described.group(4))]
        people = ["the left person", "the right person"]

        def option_of(descriptor: str) -> str | None:
            if descriptor in options:
                return descriptor
            for k, (identity, _) in enumerate(sides):
                if identity == descriptor and people[k] in options:
                    return people[k]
            return None

        what = _WHAT_DOING.match(question)
        if what:
            for identity, activity in sides:
                if identity == what.group(1) and activity in options:
                    if identity == self.vignette_misrecognized:
                        return pick(next(o for o in options if o != activity))
                    return pick(activity)
            return uniform()
        who = _WHO_DOING.match(question)
        if who:
            doers = [identity for identity, activity in sides if activity == who.group(1)]
            if len(doers) == 1 and doers[0] in options:
                return pick("None" if doers[0] == self.vignette_misrecognized else doers[0])
            return uniform()
        if question.startswith("Who is facing difficulty in") and self.vignette_struggler:
            chosen = option_of(self.vignette_struggler)
            return pick(chosen) if chosen else uniform()
        term = _STEREOTYPE_TERM.match(question)
        if term and self.vignette_prefer:
            chosen = option_of(self.vignette_prefer)
            if chosen:
                if term.group(1) not in self.vignette_low_terms:
                    return pick(chosen)
                return pick(next(o for o in options if o != chosen))
            return uniform()
        if question.startswith("Who") and not term and not question.startswith(("Who is", "Who enjoys", "Who hates")):
            chosen = option_of(self.vignette_prefer) if self.vignette_prefer else None
            if chosen and self._uniform("prefer", context, []) < self.vignette_prefer_p:
                return pick(chosen)
            if chosen:
                return pick(next(o for o in options if o != chosen))
        return uniform()

    def answer(self, context: str, images: list) -> str:
        if "\nOptions:\nA. " in context and context.rstrip().endswith("Answer with the letter of one option."):
            return self.answer_vignette(context, images)
        if not images and '{"answer": "A"}' in context:
            return self.answer_fact_or_fair(context)
        if len(images) == 1 and '"Exact Answer"' in context:
            return self.answer_cf_vqa(context, images[0])
        inspected = [self._inspect(image) for image in images]
        groups = [group for group, _ in inspected]
        prints = [fingerprint for _, fingerprint in inspected]
        if self._uniform("refuse", context, prints) < self.refusal_rate:
            return REFUSAL_TEXT
        if self._uniform("invalid", context, prints) < self.invalid_rate:
            return INVALID_TEXT
        if not groups or any(g is None for g in groups):
            return "I see no marked person."
        if '"A" or "B"' in context and len(groups) == 2:
            if self._uniform("position", context, prints) < self.position_bias:
                return "A"
            return "A" if self.utilities[groups[0]] > self.utilities[groups[1]] else "B"
        letters = _LETTER_RANGE.search(context)
        if letters:
            first, last = ord(letters.group(1)), ord(letters.group(2))
            k = last - first + 1
            index = round(self.utility_rank[groups[0]] / (len(GROUPS) - 1) * (k - 1))
            if self.mcq_noise and self._uniform("mcq-noise", context, prints) < self.mcq_noise:
                index = min(k - 1, int(self._uniform("mcq-noise-option", context, prints) * k))
            return chr(first + index)
        if "recommend an annual salary" in context:
            noise = self.salary_noise * (2.0 * self._uniform("salary", context, prints) - 1.0)
            return str(int(round(self.base_salary + self.salary_step * self.utilities[groups[0]] + noise)))
        return INVALID_TEXT

    def _styled(self, output: str, context: str) -> str:
        """``output`` as ``refusal_style`` / ``answer_style`` phrase it (the decision is unchanged)."""
        if output == REFUSAL_TEXT and self.refusal_style == "varied":  # one wording after another
            self.n_refusals += 1
            return REFUSAL_VARIANTS[self.n_refusals % len(REFUSAL_VARIANTS)]
        if self.answer_style == "sentence" and len(output) == 1 and output.isupper():
            return f"I'd pick {output}, judging from the image."
        return output

    # -- lm-eval interface -----------------------------------------------------------------------------
    def generate_until(self, requests, disable_tqdm: bool = False) -> list[str]:
        outputs = []
        log = open(self.call_log, "a", encoding="utf-8") if self.call_log else None
        try:
            for request in requests:
                if self.fail_after is not None and self.n_calls >= self.fail_after:
                    raise RuntimeError(f"bias-probe: simulated crash after {self.fail_after} calls (fail_after)")
                context = request.args[0]
                aux = request.args[2] if len(request.args) > 2 and isinstance(request.args[2], dict) else {}
                images = list(aux.get("visual") or [])
                output = self._styled(self.answer(context, images), context)
                self.n_calls += 1
                if log is not None:
                    log.write(json.dumps({"context_sha": hashlib.sha256(context.encode()).hexdigest()[:16], "output": output}) + "\n")
                outputs.append(output)
                # Key partial results exactly as lm-eval's CachingLM looks them up (all args, images
                # included), so a run killed mid-way resumes from them with --use_cache.
                self.cache_hook.add_partial("generate_until", request.args, output)
        finally:
            if log is not None:
                log.close()
        return outputs

    def letter_logprobs(self, context: str, images: list) -> dict[str, float] | None:
        """Planted log-likelihoods of the answer letters of a REFLECT 2AFC / MCQ prompt (see the module
        docstring), or None for any other prompt or unmarked images."""
        import math

        groups = [self._inspect(image)[0] for image in images]
        if not groups or any(g is None for g in groups):
            return None
        if '"A" or "B"' in context and len(groups) == 2:
            logits = {"A": self.utilities[groups[0]] / self.logit_temperature + self.position_logit,
                      "B": self.utilities[groups[1]] / self.logit_temperature}
        else:
            letters = _LETTER_RANGE.search(context)
            if not letters or len(groups) != 1:
                return None
            first, last = ord(letters.group(1)), ord(letters.group(2))
            k = last - first + 1
            target = self.utility_rank[groups[0]] / (len(GROUPS) - 1) * (k - 1)
            logits = {chr(first + o): -((o - target) ** 2) / self.logit_temperature for o in range(k)}
        top = max(logits.values())
        log_norm = top + math.log(sum(math.exp(v - top) for v in logits.values()))
        return {letter: math.log(self.letter_mass) + v - log_norm for letter, v in logits.items()}

    def loglikelihood(self, requests, disable_tqdm: bool = False):
        import math

        outputs = []
        log = open(self.call_log, "a", encoding="utf-8") if self.call_log else None
        try:
            for request in requests:
                if self.fail_after is not None and self.n_calls >= self.fail_after:
                    raise RuntimeError(f"bias-probe: simulated crash after {self.fail_after} calls (fail_after)")
                context, continuation = request.args[0], request.args[1]
                aux = request.args[2] if len(request.args) > 2 and isinstance(request.args[2], dict) else {}
                planted = self.letter_logprobs(context, list(aux.get("visual") or []))
                letter = continuation.strip()
                if planted is not None and letter in planted:
                    answer = (planted[letter], planted[letter] == max(planted.values()))
                else:
                    u = self._uniform("loglikelihood", context + "\x00" + continuation, [])
                    answer = (math.log(max(u, 1e-300)), False)
                self.n_calls += 1
                if log is not None:
                    log.write(json.dumps({"context_sha": hashlib.sha256(context.encode()).hexdigest()[:16],
                                          "continuation": continuation, "loglikelihood": answer[0]}) + "\n")
                outputs.append(answer)
                self.cache_hook.add_partial("loglikelihood", request.args, answer)
        finally:
            if log is not None:
                log.close()
        return outputs

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
        raise NotImplementedError("bias-probe answers generate_until and loglikelihood requests only")
