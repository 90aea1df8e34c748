"""The few distribution functions the inference needs, from :mod:`scipy.special`.

``import scipy.stats`` took 1.37 s of a warm ``nuejax demo`` on 2 CPU cores (``python -X
importtime``, 2026-11-29; it loads every distribution and parses their docstrings), paid by every
process that computed an interval threshold, a CLs band, a goodness of fit or a multi-start
design. These are the formulas :mod:`scipy.stats` itself evaluates for the same calls (scipy 1.17:
``chi2._ppf`` = ``2 gammaincinv(k/2, p)``, ``chi2._sf`` = ``chdtrc(k, x)``, ``norm._cdf`` =
``ndtr(x)``, ``norm._sf`` = ``ndtr(-x)``), so the numbers are the same to the last bit
(tests/test_stats.py compares them with :mod:`scipy.stats`); :mod:`scipy.special`
is imported anyway (:mod:`nuejax.physics.beta`).
"""

from __future__ import annotations

import functools

import numpy as np
from scipy import special

__all__ = ["chi2_ppf", "chi2_sf", "norm_cdf", "norm_sf", "sobol_points"]


def chi2_ppf(p, ndof):
    """Quantile of the χ² distribution with ``ndof`` degrees of freedom at probability ``p``."""
    return 2.0 * special.gammaincinv(np.asarray(ndof, dtype=float) / 2.0, p)


def chi2_sf(x, ndof):
    """Survival function P(χ²_ndof ≥ x)."""
    return special.chdtrc(ndof, x)


def norm_cdf(x):
    """Standard normal cumulative distribution function Φ(x)."""
    return special.ndtr(x)


def norm_sf(x):
    """Standard normal survival function 1 − Φ(x), as Φ(−x) (no cancellation in the tail)."""
    return special.ndtr(-np.asarray(x, dtype=float))


def sobol_points(d: int, power: int, seed: int) -> np.ndarray:
    """``2**power`` points of a scrambled Sobol sequence in [0, 1)^d
    (``scipy.stats.qmc.Sobol(d, scramble=True, seed=seed).random_base2(power)``), kept in the
    on-disk cache (kind ``design``, keyed by d, power, seed and scipy's version; :mod:`nuejax.cache`)
    and in the process, so that a process whose designs are cached never imports :mod:`scipy.stats`."""
    return _sobol_points(int(d), int(power), int(seed)).copy()


@functools.lru_cache(maxsize=None)
def _sobol_points(d: int, power: int, seed: int) -> np.ndarray:
    import scipy

    from ..cache import cached

    def build():
        from scipy.stats import qmc

        return np.asarray(qmc.Sobol(d=d, scramble=True, seed=seed).random_base2(power))

    args = {"d": d, "power": power, "seed": seed, "scipy": scipy.__version__}
    return np.array(cached("design", "sobol", args, build))
