"""Counterfactual VQA: decision boundaries on image pairs (paper: ``counterfactual_vqa_decision_boundaries.txt``).

Map of this folder, from source to headline:

- ``schema.py``: the taxonomy (Fig. 2; 5 categories, 17 subcategories).
- Building the pairs as the paper did (Sec. 3, App. A-D, K): ``generate.py`` (``lm-eval-bias generate
  cf-vqa``) runs the stages of ``construction/`` (attributes, descriptions and questions from a chat
  model, the Likert validation round trip, b+/b- image pairs, Table 1 pair quality, the manifest) with
  the chat clients of ``chat.py`` and the App. C metrics of ``pair_quality.py`` (Attribute Reflection,
  Common Content Discrepancy).
- Source -> dataset: ``datasets_builder/cf_vqa.py`` (image pairs + ``manifest.jsonl``) ->
  ``lm-eval-bias build cf-vqa``; the authors released no data.
- Dataset -> docs -> answers: ``tasks.py`` (one doc per image of a pair and option order (three orders),
  the Base / BAEP / HNER prompts of Sec. 4; answer + self-reported confidence parsed through
  :mod:`lm_eval_bias.core.parsing`, refusals as c = 0), ``retrieval.py`` (HNER exemplar retrieval),
  YAMLs in ``task_yamls/cf_vqa/``.
- Answers -> statistics (pure numpy): ``stats.py`` (Sec. 3.4: Cons, the consistency-coverage and
  symmetric-refusal curves and their areas CC-AUC and SR-AUC; per category / subcategory / source,
  Tables 2, 3, 6-12; pair-bootstrap intervals).
- Logged samples -> full analysis: ``analysis.py`` (per category, subcategory and source, beyond the
  headline in lm-eval's results; read through :mod:`lm_eval_bias.analysis`); ``reference_values.csv``
  (every number the paper prints, for ``lm-eval-bias replicate``).
- Runs -> tables: ``report.py`` (the CF-VQA section of the bias card), ``synthetic.py`` (pairs whose
  attribute state is visible in the pixels, for the planted-bias model), ``planted_chat.py`` (a planted
  chat model that drives ``generate cf-vqa`` in tests).

Where every table and figure of the paper comes from: ``docs/paper-map.md`` (Counterfactual VQA
section); every result key and divergence: ``docs/cf-vqa.md``.
"""
