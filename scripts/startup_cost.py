"""Measure what the start-up hook (lm_eval_bias/core/startup.py) costs an unrelated Python start-up.

Builds the wheel of this checkout, installs it (--no-deps) into a fresh venv, then times
``python -c pass`` in that venv with the hook's ``.pth`` file present and with it moved away,
alternating the two, and reads ``python -X importtime -c pass`` for the hook module's own import.

    .venv/bin/python scripts/startup_cost.py [--runs 40]

Prints the median wall-clock time of each and the difference (the number docs/backends.md quotes).
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _fresh_venv(work: Path) -> tuple[Path, Path]:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(work / "wheels"), str(ROOT)], check=True)
    (wheel,) = (work / "wheels").glob("lm_eval_bias-*.whl")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(work / "venv")], check=True)
    python = work / "venv" / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q",
                    str(wheel)], check=True)
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    return python, Path(purelib) / "lm_eval_bias_autoload.pth"


def _once(python: Path) -> float:
    start = time.perf_counter()
    subprocess.run([str(python), "-c", "pass"], check=True, cwd=python.parent)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        python, pth = _fresh_venv(Path(tmp))
        away = pth.with_suffix(".off")
        with_hook, without_hook = [], []
        for _ in range(args.runs):
            with_hook.append(_once(python))
            pth.rename(away)
            without_hook.append(_once(python))
            away.rename(pth)
        trace = subprocess.run([str(python), "-X", "importtime", "-c", "pass"], capture_output=True, text=True,
                               cwd=python.parent).stderr
        own = [int(m.group(1)) for m in re.finditer(r"import time:\s+\d+ \|\s+(\d+) \|\s+_lm_eval_bias_autoload", trace)]
    a, b = statistics.median(with_hook), statistics.median(without_hook)
    print(f"python -c pass, median of {args.runs}: with the hook {a * 1000:.1f} ms, without {b * 1000:.1f} ms, "
          f"difference {(a - b) * 1000:+.1f} ms")
    print(f"-X importtime, _lm_eval_bias_autoload (cumulative): {own[0] if own else 'not imported'} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
