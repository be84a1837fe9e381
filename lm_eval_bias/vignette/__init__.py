"""VIGNETTE: two people side by side, four paradigms (paper: ``vignette.txt``).

Map of this folder, from source to headline:

- ``schema.py``: the lists and naming (identity descriptors per gender and bias dimension, 75
  activities, 30 SSCM trait pairs, decision questions; the authors' file names).
- Generating the images as the paper did (the authors released none): ``generate.py`` (``lm-eval-bias
  generate vignette``: FLUX.1-dev through diffusers by default, resumable, sharded, a manifest of every
  prompt and seed), ``human_check.py`` (the 10 % human check of App. A.2 as a round trip, Table 9) and
  ``distinguishability.py`` (the paired-image check, Table 10).
- Real images: ``real_images.py`` (``lm-eval-bias build vignette-pata`` for a PATA-style photo folder and
  the matched synthetic subset; ``lm-eval-bias vignette-real-vs-synthetic``: Tables 12-19, Figs. 9-10).
- Source -> dataset: ``datasets_builder/vignette.py`` (individual images in the authors' naming + their
  lists) -> ``lm-eval-bias build vignette``; ``importer.py`` (``lm-eval-bias vignette-import``: the
  authors' released answers as logged samples).
- Dataset -> docs -> answers: ``pairs.py`` (which pairs are asked: a seeded stratified sampler, Table 8
  exhaustive option; the side-by-side pair image as the authors' ``merge.py``), ``tasks.py``
  (factuality, perception, stereotyping, decision making, text-only and positional controls, the
  authors' protocol; App. A.2-A.7), ``paraphrase.py`` (Table 11 prompt paraphrases), YAMLs in
  ``task_yamls/vignette/``.
- Answers -> statistics (pure numpy/scipy): ``stats.py`` (Sec. 5: selection frequency, log-odds,
  PairComp, polarity; Sec. 6 significance with pair-level tests and Fisher tests, Holm), ``paradigms.py``
  (Figs. 3-5 across paradigms, Table 11 match rates, the authors' Kruskal-Wallis).
- Logged samples -> full analysis: ``analysis.py`` (orchestrates the statistics for every quantity beyond
  the headline in lm-eval's results; read through :mod:`lm_eval_bias.analysis`); ``reference_values.csv``
  (every number the paper prints, for ``lm-eval-bias replicate``).
- Runs -> tables: ``report.py`` and ``agreement.py`` (the VIGNETTE sections of the bias card),
  ``synthetic.py`` (small lists and marked images in the upstream formats, for the tests).

Where every table and figure of the paper comes from: ``docs/paper-map.md`` (VIGNETTE section); every
result key and divergence: ``docs/vignette.md``.
"""
