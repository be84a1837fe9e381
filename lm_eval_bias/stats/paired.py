"""Deprecated alias of :mod:`lm_eval_bias.core.paired` (moved in 0.2; removed in 0.3)."""

from lm_eval_bias._moved import alias

alias(__name__, "lm_eval_bias.core.paired")
