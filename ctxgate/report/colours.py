"""The score colour scale of the HTML report: viridis (van der Walt and Smith, matplotlib's default
since 2.0, released CC0), perceptually uniform and readable with the common colour-vision
deficiencies and in greyscale. 33 evenly spaced anchors of matplotlib's 256-entry table,
interpolated linearly in sRGB: at most 3/255 from the full table in a channel (tests check it)."""

from __future__ import annotations

VIRIDIS = tuple(
    "#440154 #470d60 #48186a #482374 #472d7b #453781 #424086 #3e4989 #3b528b #375b8d #33638d "
    "#2f6b8e #2c728e #297a8e #26828e #23898e #21918c #1f988b #1fa088 #22a785 #28ae80 #32b67a "
    "#3fbc73 #4ec36b #5ec962 #70cf57 "
    "#84d44b #98d83e #addc30 #c2df23 #d8e219 #ece51b #fde725".split()
)
NAME = "viridis"


def colour(fraction: float) -> str:
    """The scale's colour at ``fraction`` (clamped to 0..1) as ``#rrggbb``."""
    t = min(1.0, max(0.0, fraction)) * (len(VIRIDIS) - 1)
    i = min(int(t), len(VIRIDIS) - 2)
    low, high = bytes.fromhex(VIRIDIS[i][1:]), bytes.fromhex(VIRIDIS[i + 1][1:])
    mixed = (round(a + (b - a) * (t - i)) for a, b in zip(low, high, strict=True))
    return "#" + "".join(f"{c:02x}" for c in mixed)


def ink(fraction: float) -> str:
    """Text colour with enough contrast on ``colour(fraction)``: white on dark, black on light."""
    return "#ffffff" if fraction < 0.6 else "#000000"
