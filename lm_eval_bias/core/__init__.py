"""Shared machinery that knows no benchmark.

- ``parsing.py``: every task's text -> answer (valid / refusal / invalid); ``extraction.py``: the
  run's answer-extraction mode.
- ``bootstrap.py``, ``intervals.py``, ``multiplicity.py``, ``paired.py``: cluster bootstrap,
  permutation nulls, interval primitives, Holm and friends, paired model comparison.
- ``data.py``: where task data comes from (``LM_EVAL_BIAS_DATA_DIR``, Hub ids) and the decode-on-demand
  image store; ``sharding.py``: ``--metadata '{"shard": "i/n"}'``.
- ``harness.py``, ``registration.py``, ``aggregation.py``: how the plugin meets lm-eval (what the
  installed harness does by itself, model registration, corpus-level aggregation glue);
  ``lazy_imports.py``: the scipy names the statistics modules use, imported on first use (not at task load).

The benchmarks (``lm_eval_bias/<benchmark>/``) build on this; nothing here imports them.
"""
