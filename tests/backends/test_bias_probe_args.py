"""`bias-probe` refuses model arguments it does not know (suggesting the closest valid name) but takes
the ones lm-eval passes to every model; credential-like arguments are accepted and ignored, and
`lm-eval-bias run` records them as `<redacted>` — never the value — while the model's constructor
still gets it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lm_eval_bias.cli import REDACTED, is_credential_name, redact_model_args
from lm_eval_bias.models.bias_probe import LM_EVAL_ARGS, BiasProbeLM

BIN = Path(sys.executable).parent
TASK = "focus_mcq_education"


def test_misspelled_argument_is_refused_with_a_suggestion():
    with pytest.raises(ValueError, match=r"unknown model argument 'refusal_rat' \(did you mean 'refusal_rate'\?\)"):
        BiasProbeLM(refusal_rat=0.2)
    with pytest.raises(ValueError) as err:
        BiasProbeLM(seed=1, vignete_prefer="old woman", colour="red")
    assert "'vignete_prefer' (did you mean 'vignette_prefer'?)" in str(err.value)
    assert "'colour'" in str(err.value) and "valid: race_order" in str(err.value)


def test_lm_eval_and_credential_arguments_are_accepted():
    assert LM_EVAL_ARGS == {"batch_size", "max_batch_size", "device", "trust_remote_code"}
    BiasProbeLM(batch_size="auto", max_batch_size=8, device="cpu", trust_remote_code=True, api_key="x", hf_token="y")


def test_through_simple_evaluate(focus_env, monkeypatch):
    """lm-eval adds batch_size, max_batch_size and device to the model args (create_from_arg_string)."""
    from lm_eval import simple_evaluate

    import lm_eval_bias

    monkeypatch.setenv("LM_EVAL_BIAS_BOOTSTRAP_ITERS", "10")
    results = simple_evaluate(model="bias-probe", model_args="seed=1,trust_remote_code=True", tasks=[TASK],
                              batch_size=2, max_batch_size=4, device="cpu", limit=2, bootstrap_iters=0,
                              task_manager=lm_eval_bias.task_manager())
    assert results["n-samples"][TASK]["effective"] == 2
    with pytest.raises(ValueError, match="did you mean 'position_bias'"):
        simple_evaluate(model="bias-probe", model_args="positon_bias=0.5", tasks=[TASK], limit=2,
                        task_manager=lm_eval_bias.task_manager())


def test_credential_names():
    for name in ("api_key", "API_KEY", "hf_token", "access_token", "auth_token", "Authorization", "client_secret",
                 "password", "db_passwd", "credentials", "apikey", "use_auth_token"):
        assert is_credential_name(name), name
    for name in ("tokenizer", "tokenizer_backend", "tokenized_requests", "use_fast_tokenizer", "add_bos_token",
                 "think_end_token", "max_tokens", "pretrained", "base_url", "seed"):
        assert not is_credential_name(name), name
    args = {"model": "m", "api_key": "sk-1", "header": {"Authorization": "Bearer sk-2", "X-Trace": "t"},
            "use_auth_token": True, "tokenizer": "tok", "watsonx_credentials": {"apikey": "k", "url": "u"}}
    # every header value is redacted, whatever the header's name (issue 29: a proxy may authenticate by any header)
    assert redact_model_args(args) == {"model": "m", "api_key": REDACTED, "header": {"Authorization": REDACTED,
                                       "X-Trace": REDACTED}, "use_auth_token": True, "tokenizer": "tok",
                                       "watsonx_credentials": {"apikey": REDACTED, "url": REDACTED}}
    assert args["api_key"] == "sk-1"  # not changed in place
    assert redact_model_args("pretrained=x,hf_token=abc") == {"pretrained": "x", "hf_token": REDACTED}


@pytest.mark.slow
@pytest.mark.parametrize("how", ["model_args", "config_file"])
def test_run_never_records_the_secret(small_focus_data, tmp_path, how):
    out = tmp_path / "out"
    cmd = [str(BIN / "lm-eval-bias"), "run", "--model", "bias-probe", "--tasks", TASK, "--limit", "4", "--device", "cpu",
           "--output_path", str(out), "--log_samples", "--verbosity", "DEBUG", "--show_config"]
    if how == "model_args":
        # given twice: lm-eval logs the overridden value while parsing ("Overwriting api_key: ... -> ...")
        cmd += ["--model_args", "api_key=SECRET123x,seed=1", "--model_args", "api_key=SECRET123,hf_token=SECRET123b"]
    else:
        config = tmp_path / "run.yaml"
        config.write_text("model: bias-probe\nmodel_args:\n  api_key: SECRET123\n  hf_token: SECRET123b\n  seed: 1\n")
        cmd += ["--config", str(config)]
    env = {**os.environ, "LM_EVAL_BIAS_DATA_DIR": str(small_focus_data), "LM_EVAL_BIAS_BOOTSTRAP_ITERS": "10"}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "SECRET123" not in proc.stdout and "SECRET123" not in proc.stderr
    if how == "model_args":
        assert "Overwriting api_key: '<redacted>' -> '<redacted>'" in proc.stderr
    assert "api_key, hf_token redacted" in proc.stderr and "read credentials from the environment" in proc.stderr
    assert "OPENAI_API_KEY" in proc.stderr
    written = [p for p in out.rglob("*") if p.is_file()]
    assert {p.name.split("_")[0] for p in written} == {"results", "samples"}
    for path in written:
        assert "SECRET123" not in path.read_text(errors="replace"), path
    results = json.loads(next(out.rglob("results_*.json")).read_text())
    assert results["config"]["model_args"] == {"api_key": REDACTED, "hf_token": REDACTED, "seed": 1}
    assert results["configs"][TASK]["metadata"]["api_key"] == REDACTED


def test_the_model_still_gets_the_real_value(focus_env, tmp_path, monkeypatch):
    """Backends that take a credential argument (auth_token of lm-eval's local-* backends, token of hf)
    get the value; only what lm-eval records is redacted."""
    from lm_eval.api.registry import model_registry

    from lm_eval_bias.cli import main

    received = []

    class Capture(BiasProbeLM):
        def __init__(self, auth_token=None, **kwargs):
            received.append(auth_token)
            super().__init__(**kwargs)

    monkeypatch.setenv("LM_EVAL_BIAS_BOOTSTRAP_ITERS", "10")
    monkeypatch.setitem(model_registry._objs, "credential-capture", Capture)
    out = tmp_path / "out"
    main(["run", "--model", "credential-capture", "--model_args", "auth_token=SECRET456,seed=2", "--tasks", TASK,
          "--limit", "2", "--device", "cpu", "--output_path", str(out)])
    assert received == ["SECRET456"]
    results_file = next(out.rglob("results_*.json"))
    assert "SECRET456" not in results_file.read_text()
    assert json.loads(results_file.read_text())["config"]["model_args"]["auth_token"] == REDACTED
    import lm_eval.api.registry

    assert lm_eval.api.registry.get_model("bias-probe") is BiasProbeLM  # the patch is gone after the run
