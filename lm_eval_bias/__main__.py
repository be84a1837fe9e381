import sys

from lm_eval_bias.cli import main

sys.exit(main())
