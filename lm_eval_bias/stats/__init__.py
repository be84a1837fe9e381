"""Pure statistics of the four audits (numpy/scipy/statsmodels; no lm-eval imports)."""
