"""``lm-eval-bias report RUN_DIR [RUN_DIR ...] --output REPORT_DIR``: bias cards and a leaderboard.

The modules mirror the pages (see ``docs/report.md``):

- :mod:`.build` — ``build_report``: reads the runs and writes the report folder;
- :mod:`.runs` — lm-eval output folders → per-model task results (run selection via
  :mod:`lm_eval_bias.samples`; groups skipped; ``--limit`` recorded);
- :mod:`.card` — one model's bias card (``cards/<model>.html``): warnings, then per benchmark the
  headline sentences, the papers' figures and the folded tables;
- :mod:`.reflect`, :mod:`.fact_or_fair`, :mod:`.cf_vqa`, :mod:`.vignette` — one benchmark's part of
  a card (headlines, figures, tables);
- :mod:`.comparison` — the models' headlines side by side and the cross-model Spearman table;
- :mod:`.leaderboard` — ``leaderboard.csv`` / ``.md`` / ``.json`` and its tables on the index page;
- :mod:`.glossary` — definitions of the metric keys a page shows, linked to ``docs/<benchmark>.md#<key>``;
- :mod:`.page` — the HTML document around a body, and the index page;
- :mod:`.intervals` — each number's 95 % interval or the reason it has none;
- :mod:`.render` — formatting, escaping, HTML pieces, figure/table files, plot primitives.

This module only hands names on.
"""

from lm_eval_bias.report.build import build_report
from lm_eval_bias.report.card import SECTIONS, model_slug
from lm_eval_bias.report.comparison import spearman_tables
from lm_eval_bias.report.leaderboard import leaderboard
from lm_eval_bias.report.render import Block
from lm_eval_bias.report.runs import ModelRun, TaskRun, load_runs

__all__ = ["Block", "ModelRun", "SECTIONS", "TaskRun", "build_report", "leaderboard", "load_runs", "model_slug",
           "spearman_tables"]
