"""lm-eval task configurations of lm-eval-bias (this folder is what `lm-eval-bias tasks-dir` prints)."""
