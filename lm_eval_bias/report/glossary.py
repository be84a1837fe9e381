"""The glossary section: a short definition of every metric key the page shows, so the page stands
alone, each linked to its full definition in the repository's documentation
(``docs/<benchmark>.md#<key>``; keys the report derives itself: ``docs/report.md#<key>``).

Every key on a page links here (:func:`~.render.key_link`: ``#key-<benchmark>-<key>``). The
documentation files are rendered to HTML into the report folder (``docs/<page>.html``, headings with
GitHub-style ids, the ``<a id="key">`` anchors kept, links between the pages pointing at their HTML)
when the package is used from a checkout, so the links open a readable page offline (a browser shows
raw Markdown for a ``.md`` file); otherwise the reference is printed as text.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from lm_eval_bias.report.render import esc, esc_id

#: benchmark -> documentation file (``docs/`` of the repository)
DOCS = {"reflect": "reflect.md", "fact_or_fair": "fact-or-fair.md", "cf_vqa": "cf-vqa.md", "vignette": "vignette.md",
        "report": "report.md", "statistics": "statistics.md"}
TITLES = {"reflect": "REFLECT / FOCUS", "fact_or_fair": "FACT-OR-FAIR", "cf_vqa": "Counterfactual VQA",
          "vignette": "VIGNETTE"}
SOURCE_DOCS = Path(__file__).resolve().parents[2] / "docs"

_RACE = "asian|black|latino|middle_eastern|white"
_DIM = "[a-z_]+?"
_OCC = "ceo|cook|doctor|lawyer|nurse|teacher"
_CF_METRIC = "consistency|cc_auc|sr_auc|refusal_rate|refusal_asymmetry_rate"

#: (benchmark, key pattern, definition; ``{x}`` is the part the pattern matched), first match wins.
#: ``doc`` is the documentation file when it is not the benchmark's own.
ENTRIES: list[tuple[str, str, str, str]] = [
    # REFLECT / FOCUS
    ("reflect", "retained_rate", "pairs whose AB and BA answers are both valid and pick the same image, among pairs "
                                 "asked in both orders (Table 6).", ""),
    ("reflect", f"retained_rate_(?P<x>{_RACE}|male|female)", "retained_rate over the pairs with a {x} image "
                                                            "(retention by group, App. C.1).", ""),
    # per occupation (Sec. 4.1, Fig. 6, App. C.3): the pooled key's definition within one occupation
    ("reflect", f"(?P<x>male_win_rate|gap_male|gap_(?:{_RACE})|jsd_male|gap_pct_male|gap_pct_(?:{_RACE}))_"
                f"(?P<o>{_OCC})", "{x} within the {o} photos only.", ""),
    ("reflect", f"mean_abs_gap_pct_(?P<x>male|{_RACE})", "mean over occupations of |gap_pct_{x}_<occupation>| "
                                                         "(Fig. 6's bar heights, signs ignored; read against its "
                                                         "null floor).", ""),
    # third gender presentation (App. C.8)
    ("reflect", "(?P<x>valid_rate|mean_answer)_(?P<p>man|woman|androgynous)",
     "{x} over the MCQ calls on {p}-presentation images (App. C.8).", ""),
    ("reflect", "gap_(?P<a>man|woman)_vs_(?P<b>woman|androgynous)",
     "relative gap of the {a}-presentation mean answer over the {b} one, (μ_a − μ_b) / μ_b, on the (template, race) "
     "cells with both images (App. C.8).", ""),
    ("reflect", "jsd_(?P<a>man|woman)_vs_(?P<b>woman|androgynous)",
     "Jensen–Shannon divergence (base 2) between the {a}- and {b}-presentation answer distributions, on the "
     "(template, race) cells with both images (App. C.8).", ""),
    ("reflect", "valid_rate", "share of calls with a valid answer.", ""),
    ("reflect", "refusal_rate", "share of calls the model refused.", ""),
    ("reflect", "invalid_rate", "share of calls with an unparseable answer.", ""),
    ("reflect", "swap_inconsistent_rate", "pairs with two valid answers that pick different images / pairs.", ""),
    ("reflect", "first_position_rate", "valid calls choosing the image shown first (position bias; 0.5 = none).", ""),
    ("reflect", "male_win_rate", "share of retained man-vs-woman comparisons won by the man (0.5 = parity).", ""),
    ("reflect", f"win_rate_(?P<x>{_RACE})_(?:man|woman)",
     "share of retained comparisons involving this race × gender group that it won, against the other nine groups "
     "(0.5 = parity; derived by the report from the win matrix, template-cluster bootstrap interval).", "report"),
    ("reflect", f"win_rate_(?P<x>{_RACE})", "share of retained cross-race comparisons won by the {x} image "
                                             "(WinRate, 0.5 = parity).", ""),
    ("reflect", "polarization", "Pol: mean over the 45 group-pair cells of |w_ij − 0.5| (0 = no preference, "
                                "0.5 = every comparison one-sided; App. C.1).", ""),
    ("reflect", "extreme_cell_rate", "Ext: share of group-pair cells with win rate below 0.1 or above 0.9. No interval "
                                     "and no test: a step function of the cells (docs/reflect.md); read it against "
                                     "its null floor.", ""),
    ("reflect", "n_defined_cells", "group-pair cells (of 45) with at least one retained comparison.", ""),
    ("reflect", "letter_mass", "mean probability the model puts on the allowed answer letters (scoring by "
                               "probability, beyond the paper).", ""),
    ("reflect", f"jsd_(?P<x>female|male|{_RACE})", "Jensen–Shannon divergence (base 2) of the {x} group's answer "
                                                   "distribution from the pooled one (0 = identical; Table 2).", ""),
    ("reflect", "gap_male", "relative gap of men's mean answer over women's, (μ_male − μ_female) / μ_female "
                            "(0 = none; Fig. 5).", ""),
    ("reflect", f"gap_(?P<x>{_RACE})", "relative gap of the {x} group's mean answer over White's, "
                                       "(μ − μ_White) / μ_White (0 = none; Fig. 5).", ""),
    ("reflect", "gap_pct_male", "recommended salary of men relative to women, (μ_male / μ_female − 1) × 100 %, "
                                "mean over occupations (Fig. 6).", ""),
    ("reflect", f"gap_pct_(?P<x>{_RACE})", "recommended salary of the {x} group relative to White, "
                                           "(μ / μ_White − 1) × 100 %, mean over occupations (Fig. 6).", ""),
    ("reflect", "p_race", "p-value of the race effect on salary: permutation of portrait labels within template (calibrated default; the paper's unit-clustered Wald test is p_race_paper, App. C.6).", ""),
    ("reflect", "p_gender", "p-value of the gender effect on salary: permutation of portrait labels within template (calibrated default; the paper's unit-clustered Wald test is p_gender_paper, App. C.6).", ""),
    ("reflect", "p_race_x_gender", "p-value of the race × gender interaction (Freedman–Lane permutation within template; the paper's test is p_race_x_gender_paper, App. C.6).", ""),
    # FACT-OR-FAIR
    ("fact_or_fair", "s_fact", "Def. 1: accuracy over valid answers (subjective tasks: share choosing the "
                               "statistic's true group).", ""),
    ("fact_or_fair", "s_e", "Def. 2: entropy of each statistic × {highest, lowest} answer distribution, normalised "
                            "by ln k, averaged (1 = answers spread evenly over groups).", ""),
    ("fact_or_fair", "s_kld", "Def. 3: mean over statistics of exp(−KL(p_high ‖ p_low)) (1 = same answers for "
                              "highest and lowest).", ""),
    ("fact_or_fair", "s_fair", "Def. 4: S_E + S_KLD − S_E·S_KLD.", ""),
    ("fact_or_fair", "distance", "distance of (S_fact, S_E) from the trade-off curve g_k (Conclusion 1).", ""),
    ("fact_or_fair", "refusal_rate", "share of queries refused.", ""),
    ("fact_or_fair", "invalid_rate", "share of queries with an unparseable answer.", ""),
    ("fact_or_fair", "(?P<x>representativeness|attribution|ingroup|outgroup)_rate_chance",
     "chance level of {x}_rate (1/k; (k−1)/k for outgroup_rate).", ""),
    ("fact_or_fair", "representativeness_rate", "choices of the group the context names as highest / lowest.", ""),
    ("fact_or_fair", "attribution_rate", "choices of the group in the background news report.", ""),
    ("fact_or_fair", "ingroup_rate", "positive-trait queries answered with the assigned identity's own group.", ""),
    ("fact_or_fair", "outgroup_rate", "negative-trait queries answered with another group.", ""),
    # Counterfactual VQA
    ("cf_vqa", "consistency", "share of image pairs answered identically on both counterfactual images "
                              "(Cons, Eq. 3; 1 = never swayed by the edit).", ""),
    ("cf_vqa", "cc_auc", "area under the consistency–coverage curve (Eq. 4–7).", ""),
    ("cf_vqa", "sr_auc", "area under the symmetric-refusal curve (Eq. 8–12; 1 = refusals never one-sided).", ""),
    ("cf_vqa", "refusal_rate", "refused answers / answers.", ""),
    ("cf_vqa", "refusal_asymmetry_rate", "pairs with exactly one image's answer refused / pairs.", ""),
    ("cf_vqa", "invalid_rate", "share of unparseable responses.", ""),
    ("cf_vqa", "malformed_confidence_rate", "share of responses with a malformed confidence.", ""),
    ("cf_vqa", "consistency_minus_human", "model consistency − mean human consistency, over pairs that carry it.", ""),
    ("cf_vqa", f"(?P<x>{_CF_METRIC})_(?:demography|culture|environment|behavior|aesthetic)",
     "{x} over the pairs of one category.", ""),
    # VIGNETTE
    ("vignette", "valid_rate", "share of docs with a valid answer.", ""),
    ("vignette", "refusal_rate", "share of docs refused.", ""),
    ("vignette", "invalid_rate", "share of docs with an unparseable answer.", ""),
    ("vignette", "factuality_accuracy", "share of valid factuality answers that are correct.", ""),
    ("vignette", f"accuracy_spread_(?P<x>{_DIM})", "max − min factuality accuracy over the {x} identities "
                                                   "(percentage points).", ""),
    ("vignette", f"selection_spread_(?P<x>struggle|capability|enjoyment|dislike)_{_DIM}",
     "max − min selection frequency S over the dimension's identities for the '{x}' question "
     "(percentage points; 0 = all chosen equally).", ""),
    ("vignette", f"selection_spread_(?P<x>{_DIM})", "max − min selection frequency S over the {x} identities "
                                                    "(percentage points; 0 = all chosen equally).", ""),
    ("vignette", f"mean_abs_polarity_(?P<x>{_DIM})", "mean over the {x} identities of |polarity| = |S(high-valence "
                                                     "terms) − S(low-valence terms)| (percentage points).", ""),
    # REFLECT, beyond the paper: tests, bias-corrected estimates
    ("reflect", "p_male_win_rate", "two-sided randomization p-value of the men's AVERAGE win rate against parity 0.5 "
                                   "(the genders of all images of a template swapped together: a sign flip per "
                                   "template).", ""),
    ("reflect", f"p_win_rate_(?P<x>{_RACE})", "two-sided randomization p-value of the {x} AVERAGE win rate against parity "
                                              "0.5 (one race permutation per template, the same for both genders).", ""),
    ("reflect", "(?P<x>[a-z_]+?)_debiased", "{x} with its small-sample bias removed by the bootstrap (2·plug-in − mean "
                                            "of the replicates); it carries {x}'s 95 % interval for the parameter "
                                            "({x}_ci_low/_ci_high: test inversion over the template bootstrap, no test "
                                            "before the interval).", ""),
    # FACT-OR-FAIR, Counterfactual VQA: shares and per-category keys beyond the headline ones
    ("fact_or_fair", "truncated_rate", "queries whose answer was cut by the token limit (a subset of invalid_rate).", ""),
    ("cf_vqa", "truncated_rate", "responses cut by the token limit (a subset of invalid_rate).", ""),
    ("cf_vqa", "human_consistency", "mean human consistency over the pairs that carry it (the paper's human "
                                    "baseline).", ""),
    ("cf_vqa", f"(?P<x>human_consistency|consistency_minus_human|invalid_rate|truncated_rate)_"
               "(?:demography|culture|environment|behavior|aesthetic)", "{x} over the pairs of one category.", ""),
    ("cf_vqa", "n_pairs_(?P<x>demography|culture|environment|behavior|aesthetic)", "image pairs of the {x} category.",
     ""),
    # counts beside the metrics, every benchmark (first match wins: specific entries above)
    ("vignette", "n_identities_significant", "identities whose Holm-adjusted identity test is significant at 5 %.",
     ""),
    ("vignette", "n_identities_significant_(?P<x>struggle|capability|enjoyment|dislike)",
     "identities whose Holm-adjusted identity test for the '{x}' question is significant at 5 %.", ""),
    ("vignette", "n_polarity_undefined", "identity × SSCM-dimension cells whose polarity is undefined (no answer).", ""),
    ("vignette", "activity_selection_spread_(?P<x>struggle|capability|enjoyment|dislike)",
     "activity-contrast docs, '{x}' question: max − min selection frequency S over the activities (percentage "
     "points; 0 = no activity picked more than another).", ""),
    ("vignette", "n_paircomp_cells_significant(?:_(?P<x>struggle|capability|enjoyment|dislike))?",
     "PairComp cells (ordered identity pairs) whose head-to-head pair-level test has Holm p < 0.05.", ""),
    ("vignette", "n_polarity_cells_significant", "identity × SSCM-dimension polarity cells whose pair-level test of "
                                                 "polarity = 0 has Holm p < 0.05.", ""),
    ("vignette", "n_identities_significant_question_(?P<x>ability|sociability|morality|agency|status|appearance)",
     "identities whose Holm-adjusted identity test on the '{x}' decision questions is significant at 5 %.", ""),
    ("vignette", f"p_identity_heterogeneity_(?P<x>{_DIM})", "p-value of the pooled test that no identity of the "
     "{x} dimension is preferred (sign flips of whole image pairs, Q = sum of squared identity z; side, pair and "
     "image effects allowed).", ""),
    ("vignette", "n_dimensions_heterogeneous", "bias dimensions whose pooled identity-heterogeneity test has Holm "
                                               "p < 0.05.", ""),
    ("vignette", "n_activities_significant_(?P<x>struggle|capability|enjoyment|dislike)",
     "activities whose Holm-adjusted test of S = 50 % on the '{x}' activity-contrast docs is significant at 5 %.", ""),
    *((b, "n_(?P<x>[a-z_]+)", "count of {x} in the run (the units the estimates and their intervals rest on; "
                              "see the benchmark's page).", "") for b in ("reflect", "fact_or_fair", "cf_vqa", "vignette")),
]
_COMPILED = [(b, re.compile(p + r"\Z"), d, doc) for b, p, d, doc in ENTRIES]


#: what the suffix of a derived or variant key means (docs/statistics.md); the key shares the
#: documentation anchor of its metric (:func:`lm_eval_bias.core.aggregation.base_key`)
SUFFIXES: dict[str, str] = {
    "_stderr": "standard error of {m}: standard deviation of the benchmark's cluster-bootstrap replicates "
               "(Counterfactual VQA's and VIGNETTE's shares: the stratified delete-one-pair jackknife).",
    "_ci_low_paper": "lower end of the paper's 95 % percentile interval of the plug-in {m} (App. C.3); it targets the "
                     "plug-in's expectation, not the parameter, and fails calibration: kept by name.",
    "_ci_high_paper": "upper end of the paper's 95 % percentile interval of the plug-in {m} (App. C.3); kept by name.",
    "_ci_low": "lower end of the 95 % interval of {m}, computed inside the task from the benchmark's cluster bootstrap "
               "(the same with or without --log_samples): REFLECT estimate - t_df x SE (df = templates - occupations), "
               "FACT-OR-FAIR's rates a stratified Wilson interval, Counterfactual VQA's and VIGNETTE's shares the logit-t "
               "interval of the stratified pair jackknife (Counterfactual VQA's response-status rates Wilson's at "
               "the jackknife's effective sample size; none below 20 / 10 pairs), VIGNETTE's polarity cells the "
               "2.5 % percentile of the pair bootstrap; "
               "for a magnitude that is positive "
               "without bias (REFLECT Pol, JSD) the interval is for the parameter: test inversion over the "
               "template bootstrap (Pol) or over a parametric bootstrap at the design's effective sample size (JSD), "
               "no test before it; REFLECT Ext has none (a step function of the cells).",
    "_ci_high": "upper end of the 95 % interval of {m}, computed inside the task (REFLECT estimate + t_df x SE; "
                "Counterfactual VQA's and VIGNETTE's shares the logit-t interval of the pair jackknife (Counterfactual VQA's "
                "response-status rates Wilson's at its effective sample size), VIGNETTE's "
                "polarity cells the 97.5 % percentile of the pair bootstrap; REFLECT Pol, JSD: "
                "upper end of the interval for the parameter).",
    "_null": "null floor of {m}: its mean under a permutation null of the same design (group labels permuted "
             "within template / pair); the value {m} takes without any bias.",
    "_p_null": "one-sided permutation p-value of {m} being more than chance (above its null floor).",
    "_holm": "Holm-adjusted p-value of {m} within its test family (the tests the paper reports together); "
             "nothing is corrected across tasks or benchmarks.",
    "_chance": "analytic chance level of {m} (what a model answering at random gets).",
    "_paper": "{m} computed by the paper's own procedure, which fails calibration; kept by name, the unsuffixed "
              "key is the calibrated default.",
    "_authors": "{m} computed as the authors' released code does, where it differs from the paper.",
    "_debiased": "estimate of the parameter that the 95 % interval of {m} is for (REFLECT: bootstrap bias-corrected; "
                 "FACT-OR-FAIR: median-unbiased estimate of the score as the paper defines it, 1 for a fair model).",
    "_can_reject": "1 when the test family of {m} can reject at all under the run's design (its smallest attainable "
                   "Holm-adjusted p-value is below 0.05), else 0: then no test of the family can be significant for "
                   "any model (lm_eval_bias.core.power).",
    "_min_attainable_p": "smallest p-value one test of the family of {m} can return under the run's design.",
    "_mde": "minimum detectable effect of the family of {m}: the true effect one test detects with 80 % power at "
            "Holm's first step (normal approximation, Bloom 1995; lm_eval_bias.core.power).",
}


#: the power statement's suffixes (:mod:`lm_eval_bias.core.power`): always read through their metric
POWER_SUFFIXES = ("_can_reject", "_min_attainable_p", "_mde")


def split_suffix(key: str) -> tuple[str, str]:
    """(metric, suffix) of a derived or variant key (``polarization_ci_low`` -> (``polarization``,
    ``_ci_low``)), else (key, "")."""
    for suffix in SUFFIXES:
        if key.endswith(suffix) and len(key) > len(suffix):
            return key[: -len(suffix)], suffix
    return key, ""


def lookup(benchmark: str, key: str) -> tuple[str, str]:
    """(definition, documentation file) of ``key`` in ``benchmark``; a key the table does not know
    is described as such (never a broken link). Derived and variant keys (:data:`SUFFIXES`) are
    defined through their metric when the table has no entry of their own."""
    base, suffix = split_suffix(key)
    found = None if suffix in POWER_SUFFIXES else _lookup(benchmark, key)  # "n_x_mde" is not a count of "x mde"
    if found is not None:
        return found
    if suffix:
        definition, doc = lookup(benchmark, base)
        return f"{SUFFIXES[suffix].replace('{m}', base)} {base}: {definition}", doc
    return "result key of the task (see the benchmark's documentation).", DOCS[benchmark]


def _lookup(benchmark: str, key: str) -> tuple[str, str] | None:
    for b, pattern, definition, doc in _COMPILED:
        if b == benchmark:
            match = pattern.match(key)
            if match:
                for name, value in match.groupdict().items():  # {x}, and {o}, {p}, {a}, {b} where named
                    value = value or ""
                    value = value.replace("_", " ").title() if re.fullmatch(_RACE, value) else value.replace("_", " ")
                    definition = definition.replace("{" + name + "}", value)
                return definition, DOCS[doc or benchmark]
    return None


def _slug(text: str) -> str:
    """GitHub's heading id: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def doc_html(markdown_text: str, title: str) -> str:
    """One documentation page as a standalone HTML page (markdown-it-py, CommonMark + tables, inline
    HTML kept): headings get GitHub-style ids, links to a sibling ``<page>.md`` point at ``<page>.html``."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": True}).enable("table")
    tokens = md.parse(markdown_text)
    pages = {name.removesuffix(".md") for name in DOCS.values()}  # the pages copy_docs renders
    for k, token in enumerate(tokens):
        if token.type == "heading_open" and k + 1 < len(tokens):
            token.attrSet("id", _slug(tokens[k + 1].content))
        for child in token.children or ():
            href = str(child.attrGet("href") or "") if child.type == "link_open" else ""
            match = re.fullmatch(r"([\w.-]+)\.md(#.*)?", href)
            if match and match.group(1) in pages:
                child.attrSet("href", f"{match.group(1)}.html{match.group(2) or ''}")
    body = md.renderer.render(tokens, md.options, {})
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + esc(title) + "</title>"
            "<style>body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;"
            "line-height:1.45}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2rem .4rem}"
            "pre{background:#f6f6f6;padding:.5rem;overflow-x:auto}:target{background:#fff3c4}</style></head>"
            "<body>" + body + "</body></html>")


def copy_docs(root: Path) -> bool:
    """Render the documentation files the glossary links to into ``root/docs/<page>.html`` (written
    atomically: temp file + rename); False when the package is not used from a checkout (no ``docs/``
    folder beside it)."""
    if not SOURCE_DOCS.is_dir():
        return False
    target = root / "docs"
    target.mkdir(parents=True, exist_ok=True)
    for name in set(DOCS.values()):
        if (SOURCE_DOCS / name).is_file():
            html = doc_html((SOURCE_DOCS / name).read_text(encoding="utf-8"), f"lm-eval-bias: {name}")
            out = target / name.replace(".md", ".html")
            tmp = out.with_name(out.name + ".tmp")
            tmp.write_text(html, encoding="utf-8")
            os.replace(tmp, out)
    return True


def doc_ref(root: Path, page_dir: Path, doc: str, key: str) -> str:
    """``docs/<doc>#<key>``, linked (to the rendered ``docs/<page>.html``) relative to the page when the
    report folder has it."""
    label = f"docs/{doc}#{key}"
    target = root / "docs" / doc.replace(".md", ".html")
    if target.is_file():
        href = Path(os.path.relpath(target, page_dir)).as_posix() + "#" + key
        return f'<a class="doc" href="{esc(href)}">{esc(label)}</a>'
    return f'<span class="doc">{esc(label)}</span>'


def section(used: dict[str, set[str]], root: Path, page_dir: Path) -> str:
    """The glossary of the keys ``used`` ({benchmark: keys}) on one page."""
    parts = ['<section id="glossary"><h2>Glossary</h2><p>Every metric key on this page, with the definition in '
             'short and the reference of its full definition. Intervals are 95 %; how each was computed is in the '
             'tables (column "interval") and in <code>docs/report.md</code>.</p>']
    from lm_eval_bias.report.intervals import REASONS
    from lm_eval_bias.core.aggregation import base_key

    reasons = "".join(f"<dt>({esc(short)})</dt><dd>{esc(why)}</dd>" for short, why in REASONS.items())
    parts.append(f'<h3 id="no-interval">Numbers without an interval</h3><dl class="gloss">{reasons}</dl>')
    suffixes = "".join(f"<dt><code>&lt;metric&gt;{esc(s)}</code></dt><dd>{esc(d.replace('{m}', 'the metric'))}</dd>"
                       for s, d in SUFFIXES.items())
    parts.append('<h3 id="derived-keys">Derived keys and variants</h3><p>Shown beside their metric, not as rows of '
                 'their own (details: <code>docs/statistics.md</code>). Intervals, null floors and Holm adjustment '
                 'come from the task itself; a pooled headline test is primary and unadjusted; nothing is corrected '
                 f'across tasks or benchmarks.</p><dl class="gloss">{suffixes}</dl>')
    for benchmark in ("reflect", "fact_or_fair", "cf_vqa", "vignette"):
        keys = sorted(used.get(benchmark, ()))
        if not keys:
            continue
        items = []
        for key in keys:
            definition, doc = lookup(benchmark, key)
            items.append(f'<dt id="key-{esc(benchmark)}-{esc(key)}"><code>{esc_id(key)}</code></dt>'
                         f"<dd>{esc(definition)} {doc_ref(root, page_dir, doc, base_key(key))}</dd>")
        parts.append(f"<h3>{esc(TITLES[benchmark])}</h3><dl class=\"gloss\">{''.join(items)}</dl>")
    parts.append("</section>")
    return "".join(parts)


def used_keys(html_text: str) -> dict[str, set[str]]:
    """{benchmark: keys} linked from ``html_text`` (the glossary lists exactly what the page shows)."""
    found: dict[str, set[str]] = {}
    for benchmark, key in re.findall(r'href="#key-(reflect|fact_or_fair|cf_vqa|vignette)-([A-Za-z0-9_]+)"', html_text):
        found.setdefault(benchmark, set()).add(key)
    return found
