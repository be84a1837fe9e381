"""REFLECT on FOCUS: face-only counterfactual photos (paper: ``reflect_focus_face_only_counterfactuals.txt``).

Map of this folder, from source to headline:

- ``schema.py``: the vocabulary (6 occupations, 8 templates, 5 races x 2 genders, file names
  ``<occupation>/<template>/<Race>_<gender>.jpg``, the third presentation of App. C.8).
- Source -> dataset: ``datasets_builder/focus.py`` (photos) and ``datasets_builder/focus_bios.py``
  (the 50 biographies per occupation) -> ``lm-eval-bias build focus|focus-bios``.
- Dataset -> docs -> answers: ``tasks.py`` (doc loaders: 45 pairs x AB/BA per photo set for 2AFC, one
  doc per photo for MCQ, portrait x biography for salary; the paper's prompts, Figs. 8-10; parsing
  through :mod:`lm_eval_bias.core.parsing`; ``process_results``), YAMLs in ``task_yamls/reflect/``.
- Answers -> statistics (pure numpy/scipy): ``twoafc.py`` (Sec. 4.1: swap-consistent win rates,
  Pol/Ext, App. C.1), ``mcq.py`` (Sec. 4.2: JSD, relative mean gaps), ``salary.py`` (Sec. 4.3, App. C.6:
  Gap%, cluster-robust tests), ``presentation.py`` (App. C.8), ``tables.py`` (App. C.1 retention,
  Table 9 LOTO, per-occupation tables); intervals from the template-cluster bootstrap in
  :mod:`lm_eval_bias.core.bootstrap` (App. C.3).
- Logged samples -> full analysis: ``analysis.py`` (every per-occupation, per-group and per-presentation
  quantity beyond the task's headline in lm-eval's results; ``lm-eval-bias analyze`` and the report read
  it through :mod:`lm_eval_bias.analysis`); ``reference_values.csv`` (every number the paper prints, for
  ``lm-eval-bias replicate``).
- Runs -> tables: ``report.py`` (the REFLECT section of the bias card: Fig. 4a-f, Fig. 5, Fig. 6,
  Tables 1, 2, 6, 9, 13), ``compare.py`` (``lm-eval-bias reflect-compare``: Tables 4, 7, 8, 10 and the
  App. B.2 mirroring check), ``synthetic.py`` (the FOCUS-layout fixture the tests and the demo use).

Where every table and figure of the paper comes from: ``docs/paper-map.md`` (REFLECT section); every
result key and divergence: ``docs/reflect.md``.
"""
