"""Leaderboards of lm-eval-bias runs: submitting a run (submit.py), building a leaderboard from submissions (build.py), and the checks both apply (verify.py). docs/leaderboard.md."""
