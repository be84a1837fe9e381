"""Small, documented adaptations that let lm-eval's own backends run where their import-time checks
assume a particular installation (see :mod:`.vllm_compat`)."""
