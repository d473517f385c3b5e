"""Colour difference: sRGB → CIELAB and the CIEDE2000 ΔE, as scikit-image computes them.

OSWorld scores "is this word red" with ``skimage.color.deltaE_ciede2000`` on
``skimage.color.rgb2lab`` values; these pure functions give the same numbers (D65 white point,
2° observer) without scikit-image and SciPy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

_XYZ_FROM_RGB = (
    (0.412453, 0.357580, 0.180423),
    (0.212671, 0.715160, 0.072169),
    (0.019334, 0.119193, 0.950227),
)
_D65 = (0.95047, 1.0, 1.08883)
_POW25_7 = 25.0**7


def _linear(c: float) -> float:
    return ((c + 0.055) / 1.055) ** 2.4 if c > 0.04045 else c / 12.92


def _lab_f(t: float) -> float:
    return t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116


def rgb_to_lab(rgb: Sequence[int]) -> tuple[float, float, float]:
    """CIELAB of an 8-bit sRGB colour.

    Example:
        >>> [round(v, 1) for v in rgb_to_lab((255, 0, 0))]
        [53.2, 80.1, 67.2]
    """
    linear = [_linear(c / 255.0) for c in rgb]
    xyz = [sum(m * c for m, c in zip(row, linear, strict=True)) for row in _XYZ_FROM_RGB]
    fx, fy, fz = (_lab_f(v / w) for v, w in zip(xyz, _D65, strict=True))
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


def _hue(b: float, a: float) -> float:
    return math.degrees(math.atan2(b, a)) % 360 if (a or b) else 0.0


def delta_e_2000(lab1: Sequence[float], lab2: Sequence[float]) -> float:
    """CIEDE2000 colour difference (kL = kC = kH = 1).

    Example:
        >>> round(delta_e_2000((50, 2.6772, -79.7751), (50, 0, -82.7485)), 4)  # Sharma 2005
        2.0425
    """
    (l1, a1, b1), (l2, a2, b2) = lab1, lab2
    c_mean = (math.hypot(a1, b1) + math.hypot(a2, b2)) / 2
    g = 0.5 * (1 - math.sqrt(c_mean**7 / (c_mean**7 + _POW25_7)))
    a1p, a2p = (1 + g) * a1, (1 + g) * a2
    c1p, c2p = math.hypot(a1p, b1), math.hypot(a2p, b2)
    h1p, h2p = _hue(b1, a1p), _hue(b2, a2p)
    dh = h2p - h1p
    if c1p * c2p == 0:
        dh = 0.0
    elif dh > 180:
        dh -= 360
    elif dh < -180:
        dh += 360
    d_big_h = 2 * math.sqrt(c1p * c2p) * math.sin(math.radians(dh) / 2)
    l_mean, cp_mean = (l1 + l2) / 2, (c1p + c2p) / 2
    h_mean = h1p + h2p
    if c1p * c2p != 0:
        if abs(h1p - h2p) <= 180:
            h_mean /= 2
        else:
            h_mean = (h_mean + 360) / 2 if h_mean < 360 else (h_mean - 360) / 2
    t = (
        1
        - 0.17 * math.cos(math.radians(h_mean - 30))
        + 0.24 * math.cos(math.radians(2 * h_mean))
        + 0.32 * math.cos(math.radians(3 * h_mean + 6))
        - 0.20 * math.cos(math.radians(4 * h_mean - 63))
    )
    d_theta = 30 * math.exp(-(((h_mean - 275) / 25) ** 2))
    r_c = 2 * math.sqrt(cp_mean**7 / (cp_mean**7 + _POW25_7))
    s_l = 1 + 0.015 * (l_mean - 50) ** 2 / math.sqrt(20 + (l_mean - 50) ** 2)
    s_c = 1 + 0.045 * cp_mean
    s_h = 1 + 0.015 * cp_mean * t
    r_t = -math.sin(math.radians(2 * d_theta)) * r_c
    dl, dc, dhh = (l2 - l1) / s_l, (c2p - c1p) / s_c, d_big_h / s_h
    return math.sqrt(dl**2 + dc**2 + dhh**2 + r_t * dc * dhh)


def rgb_difference(rgb1: Sequence[int], rgb2: Sequence[int]) -> float:
    """CIEDE2000 ΔE between two 8-bit sRGB colours.

    Example:
        >>> rgb_difference((255, 0, 0), (255, 0, 0))
        0.0
        >>> rgb_difference((255, 0, 0), (0, 0, 255)) > 50
        True
    """
    return delta_e_2000(rgb_to_lab(rgb1), rgb_to_lab(rgb2))
