r"""Feldman–Cousins intervals (1-D) and regions (2-D) from toys, with profiled nuisance parameters.

**Test statistic.** For parameters of interest θ (one or two) and nuisances ν,

.. math:: t(\theta) = -2\ln\frac{L(\theta, \hat{\hat\nu}(\theta))}{L(\hat\theta, \hat\nu)},

where the denominator is the maximum *inside the parameter bounds* (μ_ν ≥ 0 stays ≥ 0), so the
ordering is Feldman & Cousins' likelihood-ratio ordering with the physical boundary respected
(Feldman & Cousins, PRD 57 (1998) 3873, Eq. 4.1), with nuisances profiled (the "profile
construction": toys at each tested θ are drawn with ν at :math:`\hat{\hat\nu}(\theta)` fitted to
the observed data; Cranmer, PHYSTAT 2005, p. 112; Feldman, "Multiple measurements and
parameters in the unified approach", 2000). θ is accepted at confidence level CL when
:math:`t_{\rm obs}(\theta) \le t_c(\theta)`, the CL-quantile of t over toys drawn at θ; the
interval (region) is the accepted set. Toys resample the auxiliary measurements too
(:mod:`nuejax.inference.toys`).

**Critical values conditioned on the branch** (``condition_on_branch=True``, the default). Where
the model declares a symmetry among the nuisances (``model.symmetries()``, e.g. ε^L_ee →
−2 g_L − ε^L_ee), the conditional fit of a toy drawn at :math:`\hat{\hat\nu}` can end on the
image branch, and t's distribution differs between the toys that stay on their generating
point's branch and those that cross (the likelihood's shape there differs). The observed data's
conditional fit *is* :math:`\hat{\hat\nu}`, so :math:`t_c` is taken from the toys whose
conditional fit stays on that branch: nearer to :math:`\hat{\hat\nu}` than to each image, in
the coordinates that image moves (:func:`~nuejax.inference.construction.on_generating_branch`;
images outside the bounds, and symmetries that move a parameter of interest or a fixed one, do
not count). This is a heuristic choice of reference toys, not conditional inference on an
ancillary (how often toys cross depends on θ and ν); its coverage is measured
(docs/inference.md, "Coverage where the likelihood is bimodal"). Without such a symmetry every
valid toy counts, as with ``condition_on_branch=False``.
"""

from __future__ import annotations

import time
import warnings
from typing import Mapping

import numpy as np

from .construction import (ACCEPT_TOL, branch_selection, check_toys, construction, critical_value, grid_points,
                           observed_fits, poi_bounds, run_construction, with_branch_images)
from .intervals import check_cl
from .results import FeldmanCousinsResult
from .starts import DEFAULT_STARTS

__all__ = ["feldman_cousins", "fc_assemble"]


def feldman_cousins(model, data, names, grid, n_toys: int, key=0, *, cl: float = 0.9, profile=None,
                    init: Mapping | None = None, aux=None, resample_aux: bool = True, starts=DEFAULT_STARTS,
                    chunk: int | None = None, out=None, resume: bool = False, shard=None, progress=False,
                    max_iter: int = 100, condition_on_branch: bool = True):
    """Feldman–Cousins interval (one name) or region (two names) of ``names`` from toys (module
    docstring): ``grid`` the tested values (a 2-D construction takes ``(values_x, values_y)``, the
    full product is tested), ``n_toys`` per grid point, ``key`` a seed or ``jax.random`` key
    (toy ``i`` of point ``k`` has index ``k * n_toys + i``). ``profile`` chooses the nuisances
    (default: every other free parameter); ``aux`` the observed auxiliary measurements (default:
    the model's nominal ones); ``starts`` the multi-start design of every fit, to the observed
    data and to each toy (:mod:`~nuejax.inference.starts`; 1: the generating point alone).
    ``condition_on_branch``: the critical value from the toys whose conditional fit stays on the
    branch of the generating nuisances (module docstring); False: from every valid toy.

    ``out`` stores the run (:mod:`nuejax.inference.runner`); ``resume=True`` continues one;
    ``shard="i/n"`` computes a slice (returns ``None`` until every slice is on disk; then
    :func:`~nuejax.inference.load_run` or :func:`~nuejax.inference.runner.merge_runs`). Rows are split over every
    local device. Returns :class:`FeldmanCousinsResult`.
    """
    t0 = time.perf_counter()
    n_toys = check_toys(n_toys)
    check_cl(cl)
    pr = construction(model, data, names, profile, init, aux=aux, resample_aux=resample_aux, starts=starts)
    axes, points = grid_points(pr.cond.model.parameters, pr.poi, grid)
    shape = tuple(len(a) for a in axes)
    extra = {"axes": [a.tolist() for a in axes], "cl": float(cl), "bounds": poi_bounds(pr)}
    if condition_on_branch:  # absent otherwise: a run stored before the option existed resumes with False
        extra["condition_on_branch"] = True
    return run_construction(pr, "feldman_cousins", extra,
                            lambda: with_branch_images(pr, observed_fits(pr, points, max_iter=max_iter, one_sided=False,
                                                                   grid_shape=shape)),
                            lambda st: _fc_rows(st, n_toys), fc_assemble, n_rows=len(points) * n_toys, n_toys=n_toys,
                            key=key, resample_aux=resample_aux, chunk=chunk, out=out, resume=resume, shard=shard,
                            progress=progress, max_iter=max_iter, one_sided=False, label=f"FC {' x '.join(pr.poi)}",
                            t0=t0)


#: What the convention of a result conditioned on the branch adds (module docstring).
CONDITIONED = ("; critical values from the toys whose conditional fit stays on the branch of the generating "
               "nuisances (where the model declares a symmetry among them)")


def _fc_rows(st, n_toys):
    g = len(st["points"])
    gen = np.repeat(np.arange(g), n_toys)
    return {"gen_x": st["gen_x"][gen], "test": st["points"][gen], "index": np.arange(g * n_toys, dtype=np.uint32)}


def fc_assemble(config, st, res, seconds) -> FeldmanCousinsResult:
    """The :class:`FeldmanCousinsResult` of a run's set-up and toy outputs."""
    n_toys, cl = int(config["n_toys"]), float(config["cl"])
    g = len(st["points"])
    t = res["t"].reshape(g, n_toys)
    ok = (res["conv_global"] & res["conv_cond"]).reshape(g, n_toys)
    # a run stored before the conditioning existed (no images in its set-up) keeps the pooled toys
    conditioned = bool(config.get("condition_on_branch", False)) and "branch_images" in st
    use = ok
    if conditioned:
        k_poi = len(config["poi"])
        use, none = branch_selection(ok, st["gen_x"][:, k_poi:], st["branch_images"],
                                     res["nuis_hat"].reshape(g, n_toys, -1))
        if np.any(none):
            warnings.warn(f"Feldman–Cousins: at {int(none.sum())} grid point(s) (first {st['points'][np.argmax(none)].tolist()}) "
                          "no valid toy's conditional fit stayed on the branch of the generating nuisances; their "
                          "critical values use every valid toy", RuntimeWarning, stacklevel=3)
    t_crit, t_err, p, n_valid = (np.empty(g) for _ in range(4))
    discrete = np.zeros(g, dtype=bool)
    for k in range(g):
        tk = t[k][use[k]]
        t_crit[k], t_err[k], discrete[k] = critical_value(tk, cl)
        p[k] = float(np.mean(tk >= st["t_obs"][k])) if tk.size else np.nan
        n_valid[k] = ok[k].sum()
    if np.any(n_valid < n_toys):
        bad = int(n_toys * g - n_valid.sum())
        warnings.warn(f"Feldman–Cousins: {bad} of {n_toys * g} toys had a fit that did not pass the KKT test and "
                      "are left out of the critical values", RuntimeWarning, stacklevel=3)
    accepted = st["t_obs"] <= t_crit + ACCEPT_TOL
    extra = {"n_branch": use.sum(axis=1), "convention": FeldmanCousinsResult.convention + CONDITIONED} \
        if conditioned else {}
    return FeldmanCousinsResult(tuple(config["poi"]), tuple(np.asarray(a, dtype=float) for a in config["axes"]),
                                st["points"], st["t_obs"], t_crit, t_err, p, accepted, n_valid.astype(int), n_toys, cl,
                                tuple(float(v) for v in st["poi_hat_obs"]),
                                tuple((-np.inf if lo is None else lo, np.inf if hi is None else hi)
                                      for lo, hi in config.get("bounds", [])), seconds, discrete=discrete, **extra)
