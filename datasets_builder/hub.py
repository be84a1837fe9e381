"""Write datasets in Hugging Face Hub layout, atomically, and publish them. Shared by every builder.

Layout: ``OUT/README.md`` (dataset card: YAML header with ``configs``, ``dataset_info``, ``license``,
``pretty_name``; body with schema, provenance and how it was built) and
``OUT/data/<split>-NNNNN-of-NNNNN.parquet`` shards, which ``datasets.load_dataset(OUT)`` loads exactly
as it loads the same repository from the Hub.

Atomicity: everything is written into a temporary sibling folder that is renamed into place only when
complete; on any error the temporary folder is removed and nothing is left at OUT.
"""

from __future__ import annotations

import datetime as _dt
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import yaml

from datasets_builder.readers import SourceError

BUILDER_VERSION = "1"
__all__ = ["BUILDER_VERSION", "DatasetCard", "SourceError", "check_image", "push_to_hub", "write_hub_dataset",
           "write_hub_dataset_configs"]



@dataclass
class DatasetCard:
    """What the dataset card says about a dataset."""

    name: str
    pretty_name: str
    description: str
    license: str
    columns: dict[str, str]
    provenance: dict[str, Any] = field(default_factory=dict)
    build_command: str = ""
    notes: list[str] = field(default_factory=list)


def check_image(path: Path, data: bytes, max_image_pixels: int, min_side: int, max_side: int) -> tuple[int, int]:
    """Decode ``data`` (the file at ``path``) fully and return its size; :class:`SourceError` for a
    broken file, a decompression bomb, a format other than JPEG/PNG or a side outside [min_side,
    max_side]."""
    import io
    import warnings

    from PIL import Image

    saved = Image.MAX_IMAGE_PIXELS
    Image.MAX_IMAGE_PIXELS = max_image_pixels
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as im:
                fmt = im.format
                im.verify()
            with Image.open(io.BytesIO(data)) as im:
                size = im.size
                if size[0] * size[1] > max_image_pixels:
                    raise SourceError(path, f"decompression bomb: {size[0]}x{size[1]} exceeds {max_image_pixels} pixels")
                im.load()
    except SourceError:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise SourceError(path, f"decompression bomb: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - PIL raises many types for broken files
        raise SourceError(path, f"image does not decode ({type(exc).__name__}: {exc})") from None
    finally:
        Image.MAX_IMAGE_PIXELS = saved
    if fmt not in ("JPEG", "PNG"):
        raise SourceError(path, f"expected a JPEG or PNG file, found {fmt}")
    if min(size) < min_side or max(size) > max_side:
        raise SourceError(path, f"size {size[0]}x{size[1]} outside the accepted range [{min_side}, {max_side}] px per side")
    return size


def _card_text(card: DatasetCard, configs: dict[str, tuple[Any, int]], split: str) -> str:
    """Card for ``configs``: {config name: (features, number of rows)}."""
    header = {
        "pretty_name": card.pretty_name,
        "license": card.license,
        "configs": [{"config_name": name, "data_files": [{"split": split, "path": _shard_glob(name, split)}]}
                    for name in configs],
        "dataset_info": [{"config_name": name, "features": features._to_yaml_list()} for name, (features, _) in configs.items()],
    }
    lines = ["---", yaml.safe_dump(header, sort_keys=False).rstrip(), "---", "", f"# {card.pretty_name}", "",
             card.description, "", "## Schema", ""]
    for name, (features, n_rows) in configs.items():
        if len(configs) > 1:
            lines += [f"### Config `{name}` ({n_rows} rows)", ""]
        lines += ["| column | type | description |", "|---|---|---|"]
        for column, feature in features.items():
            lines.append(f"| `{column}` | {type(feature).__name__} | {card.columns.get(column, '')} |")
        lines.append("")
    lines += ["## Provenance", ""]
    lines += [f"- **{k}**: {v}" for k, v in card.provenance.items()]
    total = sum(n for _, n in configs.values())
    lines += [f"- **builder**: lm-eval-bias `datasets_builder` v{BUILDER_VERSION}",
              f"- **built**: {_dt.datetime.now(_dt.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
              f"- **rows**: {total} ({split} split)", "", "## License", "", f"`{card.license}`", ""]
    if card.build_command:
        lines += ["## How it was built", "", "```bash", card.build_command, "```", ""]
    if card.notes:
        lines += ["## Notes", ""] + [f"- {n}" for n in card.notes] + [""]
    return "\n".join(lines)


def _shard_glob(config: str, split: str) -> str:
    return f"data/{split}-*" if config == "default" else f"data/{config}/{split}-*"


def write_hub_dataset(output: str | os.PathLike, rows: Iterable[dict[str, Any]] | Any, features, card: DatasetCard, *,
                      split: str = "test", overwrite: bool = False, max_shard_bytes: int = 256 * 2**20) -> Path:
    """Write ``rows`` (dicts, or a ``datasets.Dataset``) as a one-config Hub-layout dataset at ``output``."""
    return write_hub_dataset_configs(output, {"default": (rows, features)}, card, split=split, overwrite=overwrite,
                                     max_shard_bytes=max_shard_bytes)


def write_hub_dataset_configs(output: str | os.PathLike, configs: dict[str, tuple[Any, Any]], card: DatasetCard, *,
                              split: str = "test", overwrite: bool = False, max_shard_bytes: int = 256 * 2**20,
                              rows_per_row_group: dict[str, int] | None = None,
                              max_shard_rows: dict[str, int] | None = None) -> Path:
    """Write several configs ``{name: (rows, features)}`` as one Hub-layout dataset at ``output``
    (``load_dataset(output, name)`` loads a config). Atomic, as the module docstring says.

    ``rows_per_row_group`` sets the parquet row-group size of some configs (``datasets`` picks one
    otherwise); ``{"default": 1}`` makes every row readable on its own (VIGNETTE images).
    ``max_shard_rows`` caps the rows per shard of some configs, which keeps each shard's footer (one
    entry per row group) small enough to parse on demand."""
    import datasets

    output = Path(output).absolute()
    if output.exists() and not overwrite:
        raise SourceError(output, "output already exists (pass --overwrite to replace it)")
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{output.name}.tmp-", dir=output.parent))
    try:
        written: dict[str, tuple[Any, int]] = {}
        for name, (rows, features) in configs.items():
            ds = rows if isinstance(rows, datasets.Dataset) else datasets.Dataset.from_list(list(rows), features=features)
            # No min/max statistics for image columns: parquet would copy two images per row group
            # into the footer (a 25k-image VIGNETTE set had a 49 MB footer of 64-px images).
            with_statistics = [c for c, f in ds.features.items() if not isinstance(f, datasets.Image)]
            folder = tmp / Path(_shard_glob(name, split)).parent
            folder.mkdir(parents=True, exist_ok=True)
            n_shards = max(1, min(len(ds), -(-int(ds.data.nbytes) // max_shard_bytes)))
            if (max_shard_rows or {}).get(name):
                n_shards = max(n_shards, -(-len(ds) // max_shard_rows[name]))
            for k in range(n_shards):
                shard = ds.shard(num_shards=n_shards, index=k, contiguous=True)
                shard.to_parquet(str(folder / f"{split}-{k:05d}-of-{n_shards:05d}.parquet"),
                                 batch_size=(rows_per_row_group or {}).get(name), write_statistics=with_statistics)
            written[name] = (ds.features, len(ds))
        (tmp / "README.md").write_text(_card_text(card, written, split), encoding="utf-8")
        if output.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{output.name}.old-", dir=output.parent))
            os.rename(output, old / "previous")
            os.rename(tmp, output)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, output)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return output


def push_to_hub(folder: str | os.PathLike, repo_id: str, private: bool = False) -> str:
    """Upload a built dataset folder to the Hub as a dataset repository.

    The token comes from the standard environment (``HF_TOKEN`` or the login cache) through
    ``huggingface_hub`` itself; it is never printed, logged or written. Returns the repo URL.
    """
    from huggingface_hub import HfApi

    api = HfApi()
    url = api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    api.upload_folder(folder_path=str(folder), repo_id=repo_id, repo_type="dataset",
                      commit_message="Upload dataset built by lm-eval-bias")
    return str(url)
