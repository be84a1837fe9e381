"""The Counterfactual VQA construction pipeline (paper Sec. 3.2-3.3, App. A-D, K.1-K.3) in resumable,
shardable stages; ``lm-eval-bias generate cf-vqa`` (:mod:`lm_eval_bias.cf_vqa.generate`) is its command.

Modules: :mod:`.paper` (the paper's prompts and thresholds), :mod:`.store` (stage files: resume, shards,
merge), :mod:`.text_stages` (1-2), :mod:`.validation` (3), :mod:`.images` (4), :mod:`.quality` (5),
:mod:`.manifest` (6).

Stages and what each writes in the work folder (``docs/cf-vqa.md``, "Building the dataset"):

1. ``attributes``: ``attributes.jsonl`` from the user's list, or from bias proposals of a chat model
   (App. K.1 prompt, ``proposals.jsonl``), keeping social impact > 3 (App. A: "Attributes scored 3 or
   below are filtered out").
2. ``describe``: ``descriptions.jsonl``, per attribute two image descriptions, the attribute states,
   one question and four options (App. K.2 prompt verbatim, strict JSON validation, bounded retries).
3. ``sheets`` / ``import-ratings``: the Likert validation round trip (Sec. 3.3 Step 2, App. D):
   ``validation/relevance_sheet.csv`` out, completed sheets in, ``ratings.jsonl`` (mean < 3 kept) and
   ``validation/summary.json`` (share dropped, agreement with the majority label); with ``--answers``
   an answer sheet on the images whose import gives each pair's human consistency (App. D.2).
4. ``images``: ``images/<set>/<pair>_plus.png`` / ``_minus.png`` and ``images-<set>.jsonl``: b+ from its
   description, then edited into b- (Sec. 3.3 Step 3, App. K.3), by an OpenAI-compatible images
   endpoint or local ``diffusers`` pipelines (:mod:`lm_eval_bias.core.imagegen`).
5. ``quality``: ``quality.jsonl`` (Attribute Reflection, Common Content Discrepancy per pair and
   image set, App. C) and ``quality_summary.csv`` (Table 1: per generator, with intervals).
6. ``manifest``: ``manifest.jsonl``, exactly the source layout ``lm-eval-bias build cf-vqa`` reads
   (the work folder is the build's ``--source``).

Every stage file is JSONL, one finished item per line, flushed and fsynced; a rerun skips finished
items, and a torn last line (a killed process) is dropped with a warning. ``--shard i/n`` deals the
items round-robin over their sorted keys and writes ``<stage>.shard-i-of-n.jsonl``; every stage reads
the union of a stage's files, and ``merge`` writes that union as the stage's single file. Every model
call (request messages and raw answer, or the error) goes to ``calls.jsonl`` (``calls.shard-i-of-n.jsonl``).
Failed items are recorded with their reason (``status: failed``) and are retried only with
``--retry-failed``.
"""

from __future__ import annotations

from lm_eval_bias.cf_vqa.construction.images import MAX_FAILURES_IN_A_ROW, edit_instruction, pairs_for_images, run_images
from lm_eval_bias.cf_vqa.construction.manifest import write_manifest
from lm_eval_bias.cf_vqa.construction.paper import (
    DESCRIBE_FORMAT,
    FORBIDDEN_IN_DESCRIPTION,
    GENERATION_PROMPT,
    LIKERT_KEEP_BELOW,
    MULTI_TURN_STEP1,
    MULTI_TURN_STEP2,
    N_ANNOTATORS,
    PROPOSAL_PROMPT,
    PROPOSE_FORMAT,
    SHORT_EDIT_INSTRUCTION,
    SOCIAL_IMPACT_KEEP_ABOVE,
)
from lm_eval_bias.cf_vqa.construction.quality import quality_table, run_quality
from lm_eval_bias.cf_vqa.construction.store import (
    STAGES,
    AppendLog,
    StageError,
    described_pairs,
    generated_pairs,
    image_sets,
    images_stem,
    merge_stage,
    read_jsonl_tolerant,
    read_stage,
    shard_items,
    validated_pairs,
    write_jsonl_atomic,
    write_text_atomic,
)
from lm_eval_bias.cf_vqa.construction.text_stages import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_MAX_ATTEMPTS,
    ask_all,
    attribute_id,
    attributes_from_proposals,
    generation_messages,
    load_attribute_list,
    load_captions,
    parse_json_object,
    proposal_messages,
    read_attributes,
    run_describe,
    run_proposals,
    validate_description,
    validate_proposals,
    write_attributes,
)
from lm_eval_bias.cf_vqa.construction.validation import (
    ValidationSummary,
    human_consistency,
    import_sheets,
    majority_agreement,
    relevance_label,
    write_answer_sheet,
    write_relevance_sheet,
)

__all__ = [
    "AppendLog", "DEFAULT_BATCH_SIZE", "DEFAULT_MAX_ATTEMPTS", "DESCRIBE_FORMAT", "FORBIDDEN_IN_DESCRIPTION",
    "GENERATION_PROMPT", "LIKERT_KEEP_BELOW", "MAX_FAILURES_IN_A_ROW", "MULTI_TURN_STEP1", "MULTI_TURN_STEP2",
    "N_ANNOTATORS", "PROPOSAL_PROMPT", "PROPOSE_FORMAT", "SHORT_EDIT_INSTRUCTION", "SOCIAL_IMPACT_KEEP_ABOVE",
    "STAGES", "StageError", "ValidationSummary", "ask_all", "attribute_id", "attributes_from_proposals",
    "described_pairs", "edit_instruction", "generated_pairs", "generation_messages", "human_consistency",
    "image_sets", "images_stem", "import_sheets", "load_attribute_list", "load_captions", "majority_agreement",
    "merge_stage", "pairs_for_images", "parse_json_object", "proposal_messages", "quality_table", "read_attributes",
    "read_jsonl_tolerant", "read_stage", "relevance_label", "run_describe", "run_images", "run_proposals",
    "run_quality", "shard_items", "validate_description", "validate_proposals", "validated_pairs",
    "write_answer_sheet", "write_attributes", "write_jsonl_atomic", "write_manifest", "write_relevance_sheet",
    "write_text_atomic",
]
