"""Feldman & Cousins' Table X (the 90 % CL intervals of a Gaussian mean bounded at 0), every
sourced row, from the package's construction with 10⁵ toys per grid point (slow job). Its own
module, so that the slow job's workers take it beside tests/test_limits.py."""
import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest

from nuejax.inference import feldman_cousins

sys.path.insert(0, str(Path(__file__).parent))
from fc_reference import FC_TABLE_90, fc_statistic  # noqa: E402
from limits_models import gaussian_counts, gaussian_model  # noqa: E402


@pytest.mark.slow
def test_fc_gaussian_table_to_its_precision():
    """Every sourced row of Feldman & Cousins' Table X with 1e5 toys per grid point."""
    m = gaussian_model()
    ends = sorted({e for row in FC_TABLE_90.values() for e in row if e > 0})
    grid = np.unique(np.concatenate([[0.0], np.floor(np.array(ends) * 10) / 10, np.ceil(np.array(ends) * 10) / 10]))
    r = feldman_cousins(m, gaussian_counts(m, 1.7), "mu", grid, 100_000, key=5)
    worst = 0.0
    for x0, (tlo, thi) in FC_TABLE_90.items():
        t_obs = np.array([fc_statistic(x0, x) for x in grid])
        lo, hi = dataclasses.replace(r, t_obs=t_obs).interval
        worst = max(worst, abs(lo - tlo), abs(hi - thi))
        print(f"x0 = {x0:+.1f}: [{lo:.4f}, {hi:.4f}]  Table X [{tlo:.2f}, {thi:.2f}]")
        assert abs(lo - tlo) < 0.012 and abs(hi - thi) < 0.012, (x0, lo, hi, tlo, thi)
    print(f"largest deviation from Table X: {worst:.4f}")
