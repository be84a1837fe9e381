"""FACT-OR-FAIR: objective and subjective queries on 19 U.S. statistics (paper: ``fact_or_fair.txt``).

Map of this folder, from source to headline:

- Source -> dataset: ``datasets_builder/fact_or_fair.py`` (+ ``fact_or_fair_repo.py`` for the authors'
  repository layout) -> ``lm-eval-bias build fact-or-fair``: the objective queries and the subjective
  queries under four contexts (baseline, representativeness, attribution, in/out-group).
- Dataset -> docs -> answers: ``tasks.py`` (text-only doc loaders and the authors' query templates; JSON
  answers parsed through :mod:`lm_eval_bias.core.parsing`), YAMLs in ``task_yamls/fact_or_fair/``.
- Answers -> statistics (pure numpy/scipy): ``stats.py`` (Sec. 4 and App. A: S_fact, S_E, S_KLD,
  S_fair, the distance d to the trade-off curve, the authors' S_KLD variant, cognitive-error rates of
  Table 3 with chance levels).
- Text-to-image columns: ``t2i.py`` (``lm-eval-bias score fact-or-fair-t2i``: the same scores from
  face-attribute labels of generated images).
- Logged samples -> full analysis: ``analysis.py`` (every score beyond the task's headline in lm-eval's
  results, read through :mod:`lm_eval_bias.analysis`); ``reference_values.csv`` (every number the paper
  prints, for ``lm-eval-bias replicate``).
- Runs -> tables: ``report.py`` (the FACT-OR-FAIR section of the bias card: Tables 2-8, Figs. 2a, 4, 5),
  ``synthetic.py`` (a three-statistic source in the authors' formats for the tests).

Where every table and figure of the paper comes from: ``docs/paper-map.md`` (FACT-OR-FAIR section);
every result key and divergence: ``docs/fact-or-fair.md``.
"""
