"""Where the synthetic fixtures of every benchmark paint their marker patch.

Synthetic images (``lm_eval_bias/<benchmark>/synthetic.py``) carry a small square of a known colour
in their top-left corner; ``bias-probe`` reads it to know which group, attribute or identity an image
shows, so that a planted bias can be recovered through the harness. The geometry is shared by all
benchmarks; the colours are each benchmark's own vocabulary.
"""

from __future__ import annotations

#: side of the marker patch as a fraction of the image's shorter side
MARKER_FRACTION = 0.125


def marker_box(width: int, height: int) -> tuple[int, int, int, int]:
    """Pixel box ``(left, top, right, bottom)`` of the marker patch of a fixture image."""
    side = max(4, int(round(MARKER_FRACTION * min(width, height))))
    return (0, 0, side, side)
