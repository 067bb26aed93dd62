"""The angle-of-repose estimator of benchmarks/physics_repose.py reads the slope of a known pile."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchmarks.physics_repose import LENGTH, RADIUS, WIDTH, repose_angle


@pytest.mark.parametrize("angle_deg", [20.0, 27.0, 35.0])
def test_repose_angle_reads_the_slope_of_a_synthetic_half_pile(angle_deg):
    """Grains stacked under a straight surface falling at ``angle_deg`` from the back wall."""
    rng = np.random.default_rng(0)
    d = 2.0 * RADIUS
    height = 0.9 * LENGTH * math.tan(math.radians(angle_deg))
    x, y, z = np.meshgrid(np.arange(RADIUS, LENGTH, d), np.arange(RADIUS, WIDTH, d), np.arange(RADIUS, height, d),
                          indexing="ij")
    points = np.stack([x.ravel(), y.ravel(), z.ravel()], 1)
    surface = height - points[:, 0] * math.tan(math.radians(angle_deg))
    pile = points[points[:, 2] + RADIUS <= np.maximum(surface, d)]
    pile = pile + rng.uniform(-0.1, 0.1, pile.shape) * RADIUS
    result = repose_angle(pile, np.full(len(pile), RADIUS))
    assert result["angle_deg"] == pytest.approx(angle_deg, abs=1.5)
    assert result["grains"] == len(pile)
