"""The image-budget guard stops runs whose backend would drop images, naming the argument to set."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lm_eval_bias.guard import ImageBudgetError, check_image_budget, images_per_task

BIN = Path(sys.executable).parent


def test_images_per_task_and_group():
    counts = images_per_task()
    assert counts["focus_2afc_income"] == 2 and counts["focus_mcq_salary"] == 1 and counts["cf_vqa"] == 1
    assert counts["fact_or_fair_objective_race"] == 0
    assert counts["reflect"] == 2 and counts["focus_mcq"] == 1 and counts["fact_or_fair"] == 0


@pytest.mark.parametrize("model,args,ok", [
    ("local-chat-completions", "model=m,base_url=http://127.0.0.1:9/v1", False),  # API default max_images=1
    ("local-chat-completions", "model=m,max_images=2", True),
    ("openai-chat-completions", {"model": "m"}, False),
    ("hf-multimodal", "pretrained=x,max_images=1", False),
    ("hf-multimodal", "pretrained=x", True),  # default 999
    ("vllm-vlm", "pretrained=x,max_images=1", False),
    ("bias-probe", "", True),
    ("hf", "pretrained=x", False),  # text-only backend
])
def test_check_image_budget(model, args, ok):
    if ok:
        check_image_budget(model, args, ["focus_2afc_income"])
    else:
        with pytest.raises(ImageBudgetError) as err:
            check_image_budget(model, args, ["focus_2afc_income"])
        assert "focus_2afc_income gives the model 2 image(s)" in str(err.value)
        if model != "hf":
            assert "add max_images=2 to --model_args" in str(err.value)


def test_text_only_and_foreign_tasks_pass():
    check_image_budget("hf", "pretrained=x", ["fact_or_fair"])
    check_image_budget("local-chat-completions", "model=m", ["hellaswag"])


def test_cli_stops_before_loading_the_model():
    proc = subprocess.run(
        [BIN / "lm-eval-bias", "run", "--model", "local-chat-completions", "--model_args",
         "model=m,base_url=http://127.0.0.1:9/v1/chat/completions", "--tasks", "focus_2afc_income"],
        capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=300,
    )
    assert proc.returncode == 2
    assert "add max_images=2 to --model_args" in proc.stderr
