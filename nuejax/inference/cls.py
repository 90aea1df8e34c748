r"""CLs upper limits, asymptotic and from toys, with profiled nuisance parameters.

**CLs.** For one parameter bounded below at zero (a signal strength, μ_ν), the statistic is
:math:`\tilde q_\mu` of Cowan, Cranmer, Gross & Vitells, EPJC 71 (2011) 1554, Eq. 16: t(μ) with
the bounded fit, set to 0 where :math:`\hat\mu > \mu`. :math:`{\rm CL_s} = p_{s+b}/(1 - p_b)`
(Read, J. Phys. G 28 (2002) 2693) with :math:`p_{s+b} = P(\tilde q_\mu \ge \tilde q_{\rm obs}\mid\mu)`
and :math:`1 - p_b = P(\tilde q_\mu \ge \tilde q_{\rm obs}\mid 0)`; the upper limit is where CLs
falls to 1 − CL. *Asymptotic*: the distributions of Cowan et al. Eq. 65 with
:math:`\mu^2/\sigma^2 = \tilde q_{\mu,A}` from the background-only Asimov data set (their Sec.
5.1; its auxiliary measurements at the same background-only nuisance values as its counts;
expressed through :math:`\tilde q_{\mu,A}` the formulas do not depend on how the signal
grows with μ); expected limits from the same formulas at the ±Nσ background-only outcomes.
*Toys*: both distributions from toys at each grid point; the background-only toys are the same
data sets at every grid point (same indices), so each gives a limit and the expected band is
their quantiles.
"""

from __future__ import annotations

import time
import warnings
from typing import Mapping

import numpy as np

from .._internal.stats import norm_cdf, norm_sf
from ..errors import InputError, ParameterError
from .construction import check_toys, construction, observed_fits, poi_bounds, run_construction, with_branch_images
from .feldman_cousins import fc_assemble
from .intervals import check_cl
from .results import CLsResult
from .starts import DEFAULT_STARTS
from .scan import grid_values
from .toys import ratio_statistic

__all__ = ["asymptotic_cls", "cls_upper_limit", "cls_assemble"]


def _limit_from_cls(values, cls_values, alpha):
    """First crossing of CLs below ``alpha`` (interpolated in ln CLs); ``None`` if none."""
    c = np.asarray(cls_values, dtype=float)
    below = np.nonzero(c <= alpha)[0]
    if below.size == 0:
        return None
    k = int(below[0])
    if k == 0 or not np.isfinite(c[k - 1]):
        return float(values[k])
    a, b = np.log(max(c[k - 1], 1e-300)), np.log(max(c[k], 1e-300))
    f = (np.log(alpha) - a) / (b - a) if b != a else 1.0
    return float(values[k - 1] + f * (values[k] - values[k - 1]))


def asymptotic_cls(q, q_a):
    r"""CLs and its parts from :math:`\tilde q_\mu` and the Asimov :math:`\tilde q_{\mu,A}`
    (Cowan et al. 2011, Eq. 65 with :math:`\mu^2/\sigma^2 = \tilde q_{\mu,A}`): returns
    (CLs, p_{s+b}, 1 − p_b)."""
    q = np.maximum(np.asarray(q, dtype=float), 0.0)
    qa = np.maximum(np.asarray(q_a, dtype=float), 1e-300)
    sq, sqa = np.sqrt(q), np.sqrt(qa)
    low = q <= qa
    # p_{s+b} = 1 - F(q|mu), 1 - p_b = 1 - F(q|0)
    clsb = np.where(low, norm_sf(sq), norm_sf((q + qa) / (2 * sqa)))
    clb = np.where(low, norm_sf(sq - sqa), norm_sf((q - qa) / (2 * sqa)))
    return clsb / np.maximum(clb, 1e-300), clsb, clb


def _expected_q(q_a, n_sigma):
    """q̃ of the background-only outcome μ̂ = Nσ (Gaussian limit; Cowan et al. 2011, Sec. 3.7)."""
    sqa = np.sqrt(np.maximum(q_a, 0.0))
    return np.where(n_sigma >= 0, np.where(n_sigma <= sqa, (sqa - n_sigma) ** 2, 0.0), q_a - 2.0 * n_sigma * sqa)


def cls_upper_limit(model, data, name: str, values, *, cl: float = 0.9, n_toys: int = 0, key=0, profile=None,
                    init: Mapping | None = None, aux=None, resample_aux: bool = True, starts=DEFAULT_STARTS,
                    chunk: int | None = None, out=None, resume: bool = False, shard=None, progress=False,
                    max_iter: int = 100, feldman_cousins: bool = False) -> CLsResult:
    """CLs upper limit on ``name`` (module docstring), a parameter whose lower bound is 0 (the
    background-only hypothesis), tested at ``values`` (> 0). ``n_toys = 0``: asymptotic formulas;
    ``n_toys > 0``: that many signal+background toys per value and background-only toys shared by
    all values (toy indices: ``k * n_toys + i`` for s+b, ``n_values * n_toys + i`` for b).

    ``feldman_cousins=True`` (with toys): also the Feldman–Cousins interval of ``name`` at the same
    CL on the grid 0, ``values``, from the same toys (the result's ``feldman_cousins``, a
    :class:`~nuejax.inference.results.FeldmanCousinsResult` as
    :func:`~nuejax.inference.feldman_cousins` gives, critical values conditioned on the branch;
    its ``seconds`` are the whole run's).
    Both statistics come from the same two fits of a toy (at the tested value, and free with the
    bound): q̃ sets t to 0 where the fitted value exceeds the tested one, t does not. So the
    interval's toys at each tested value are the signal+background toys, and its toys at 0 the
    background-only ones, each fitted once more at 0 (``n_toys`` rows added to the
    ``2 n_values n_toys``). Each construction is the one its function runs alone, drawn from
    other toy indices; the two results share their toys, so their fluctuations are correlated.
    Where both are wanted this costs about two thirds of running them apart. The CLs part is the
    plain run's (the added rows come last); on an accelerator a run of more rows may take other
    passes (:func:`~nuejax.inference.toys.passes`), which moves the fits within their tolerance."""
    t0 = time.perf_counter()
    check_cl(cl)
    if not isinstance(name, str):
        raise ParameterError(f"cls_upper_limit takes one parameter name, got {name!r}")
    if feldman_cousins and n_toys == 0:
        raise InputError("cls_upper_limit: feldman_cousins=True needs toys (n_toys > 0); the asymptotic "
                         "two-sided interval is profile_scan(...).interval(cl)")
    pr = construction(model, data, name, profile, init, aux=aux, resample_aux=resample_aux, starts=starts)
    ps = pr.cond.model.parameters
    if ps[name].lower != 0.0:
        raise ParameterError(f"cls_upper_limit: {name} must have lower bound 0 (the background-only hypothesis), "
                             f"has {ps[name].lower}")
    v = grid_values(ps, name, values)
    if v[0] <= 0:
        raise ParameterError(f"cls_upper_limit: test values of {name} must be > 0 (0 is the background-only point)")
    points = np.concatenate([[0.0], v])[:, None]
    alpha = 1.0 - cl
    if n_toys == 0:
        obs = observed_fits(pr, points, max_iter=max_iter, one_sided=True)
        # background-only Asimov data: expected counts at mu = 0 with the nuisances fitted to the data there
        model = pr.cond.model
        p0 = pr.full.params(obs["gen_x"][0])
        asimov = np.asarray(model.likelihood.asimov_data(model.expected(p0)))
        # the Asimov data set's auxiliary measurements sit at the same nuisance values as its counts
        aux_a = tuple(a if r else n for a, r, n in zip(model.asimov_aux(p0), pr.resample, pr.cond.aux))
        pr_a = construction(model, asimov, name, profile, init, aux=aux_a, resample_aux=resample_aux, starts=starts)
        q_a = observed_fits(pr_a, points, max_iter=max_iter, one_sided=True)["t_obs"][1:]
        q = obs["t_obs"][1:]
        cls, clsb, clb = asymptotic_cls(q, q_a)
        bands = [asymptotic_cls(_expected_q(q_a, k), q_a) for k in (-2, -1, 0, 1, 2)]
        expected = {str(k): _limit_from_cls(v, b[0], alpha) for k, b in zip((-2, -1, 0, 1, 2), bands)}
        expected_sb = {str(k): _limit_from_cls(v, b[1], alpha) for k, b in zip((-2, -1, 0, 1, 2), bands)}
        return CLsResult(name, v, q, clsb, clb, cls, _limit_from_cls(v, cls, alpha), expected, float(cl), "asymptotic",
                         0, time.perf_counter() - t0, limit_sb=_limit_from_cls(v, clsb, alpha), expected_sb=expected_sb)
    n_toys = check_toys(n_toys)
    extra = {"axes": [v.tolist()], "cl": float(cl)}

    def setup():
        st = observed_fits(pr, points, max_iter=max_iter, one_sided=True)
        return with_branch_images(pr, st) if feldman_cousins else st

    if feldman_cousins:  # absent otherwise: a run stored before the option existed resumes as it was
        extra.update(feldman_cousins=True, bounds=poi_bounds(pr))
    # each background-only toy's rows next to each other (_cls_rows); a run stored before (rows by
    # tested value, no such key) loads as it was and is not resumed with this layout
    extra["background_rows"] = "by_toy"
    layout = {**extra, "n_toys": n_toys}  # what _row_layout reads of the run's configuration
    n_rows = sum(a.size for a in _row_layout(layout) if a is not None)
    return run_construction(pr, "cls", extra, setup, lambda st: _cls_rows(st, layout), cls_assemble,
                            n_rows=n_rows, n_toys=n_toys, key=key, resample_aux=resample_aux, chunk=chunk, out=out,
                            resume=resume, shard=shard, progress=progress, max_iter=max_iter, one_sided=True,
                            label=f"CLs {name}" + (" and Feldman-Cousins" if feldman_cousins else ""), t0=t0)


def _cls_rows(st, config):
    """The rows of a run, placed where :func:`_row_layout` says: each value's s+b toys (value by
    value), then each background-only toy tested at every value and (``feldman_cousins``) at 0,
    toy by toy. A toy's rows share its global fit (:func:`~nuejax.inference.toys.toy_fits` fits it
    once per launch), so they sit together."""
    sb, b, at_zero = _row_layout(config)
    g, n = sb.shape
    n_rows = sum(a.size for a in (sb, b, at_zero) if a is not None)
    gen, test = np.zeros(n_rows, dtype=int), np.zeros(n_rows, dtype=int)  # points: 0 is μ = 0
    index = np.empty(n_rows, dtype=np.uint32)
    values = np.arange(1, g + 1)[:, None]
    gen[sb], test[sb], index[sb] = values, values, np.arange(g * n).reshape(g, n)
    test[b], index[b] = values, g * n + np.arange(n)[None, :]  # the same toy at every value
    if at_zero is not None:
        index[at_zero] = g * n + np.arange(n)
    return {"gen_x": st["gen_x"][gen], "test": st["points"][test], "index": index}


def _row_layout(config):
    """Where a run's rows are (:func:`_cls_rows`): the s+b toys' (g, n), the background-only toys'
    at each value (g, n) and, with ``feldman_cousins``, at 0 (n,) or None. A run stored before the
    toys' rows sat together has its background-only rows value by value, the ones at 0 last."""
    n, g = int(config["n_toys"]), len(config["axes"][0])
    sb = np.arange(g * n).reshape(g, n)
    fc = bool(config.get("feldman_cousins"))
    if config.get("background_rows") == "by_toy":
        m = g + fc
        b = g * n + np.arange(n * m).reshape(n, m)
        return sb, b[:, :g].T, (b[:, g] if fc else None)
    return sb, g * n + np.arange(g * n).reshape(g, n), (2 * g * n + np.arange(n) if fc else None)


def _fc_from_cls(config, st, res, seconds):
    """The Feldman–Cousins result of a CLs run with ``feldman_cousins`` (:func:`cls_upper_limit`):
    at 0 the background-only toys fitted at 0, at each tested value its s+b toys (:func:`_row_layout`),
    with the two-sided statistic of their fits; assembled as :func:`feldman_cousins` assembles its
    own run."""
    sb, _, at_zero = _row_layout(config)
    rows = np.concatenate([at_zero, sb.ravel()])  # point 0 first
    fc_res = {n: np.asarray(res[n])[rows] for n in ("conv_global", "conv_cond", "nuis_hat")}
    fc_res["t"] = ratio_statistic(np.asarray(res["f_cond"])[rows], np.asarray(res["f_global"])[rows])
    fc_st = {**st, "t_obs": st["t_obs_two_sided"]}
    fc_config = {**config, "kind": "feldman_cousins", "axes": [[0.0] + list(config["axes"][0])],
                 "condition_on_branch": True}
    return fc_assemble(fc_config, fc_st, fc_res, seconds)


def cls_assemble(config, st, res, seconds) -> CLsResult:
    """The :class:`CLsResult` of a run's set-up and toy outputs."""
    n_toys, cl = int(config["n_toys"]), float(config["cl"])
    v = np.asarray(config["axes"][0], dtype=float)
    g = len(v)
    sb, b, _ = _row_layout(config)
    ok = res["conv_global"] & res["conv_cond"]
    t = np.where(ok, res["t"], np.nan)
    q_sb, q_b = t[sb], t[b]
    ok = ok[np.concatenate([sb.ravel(), b.ravel()])]  # the Feldman-Cousins toys at 0 are not CLs's
    q_obs = st["t_obs"][1:]

    def frac_ge(sample, q):
        s = sample[np.isfinite(sample)]
        return float(np.mean(s >= q - 1e-9)) if s.size else np.nan

    clsb = np.array([frac_ge(q_sb[k], q_obs[k]) for k in range(g)])
    clb = np.array([frac_ge(q_b[k], q_obs[k]) for k in range(g)])
    cls = clsb / np.maximum(clb, 1e-300)
    # expected band: each background-only toy is one data set tested at every value (CLs, and
    # p_{s+b} alone: the one-sided Neyman construction)
    limits, limits_sb = [], []
    for j in range(n_toys):
        qj = q_b[:, j]
        if not np.all(np.isfinite(qj)):
            continue
        psb = np.array([frac_ge(q_sb[k], qj[k]) for k in range(g)])
        c = np.array([psb[k] / max(frac_ge(q_b[k], qj[k]), 1e-300) for k in range(g)])
        limits.append(_limit_from_cls(v, c, 1 - cl))
        limits_sb.append(_limit_from_cls(v, psb, 1 - cl))

    def band(found):
        # a toy whose CLs stays above 1 - CL on the whole grid has a limit beyond it: +inf, not left out
        lim = np.array([np.inf if x is None else x for x in found])

        def q(p):
            v = float(np.quantile(lim, p, method="inverted_cdf")) if lim.size else np.inf  # no inf - inf
            return v if np.isfinite(v) else None

        return {str(k): q(norm_cdf(k)) for k in (-2, -1, 0, 1, 2)}

    expected, expected_sb = band(limits), band(limits_sb)
    if not ok.all():
        warnings.warn(f"CLs: {int((~ok).sum())} of {ok.size} toys had a fit that did not pass the KKT test and are "
                      "left out", RuntimeWarning, stacklevel=3)
    fc = _fc_from_cls(config, st, res, seconds) if config.get("feldman_cousins") else None
    return CLsResult(config["poi"][0], v, q_obs, clsb, clb, cls, _limit_from_cls(v, cls, 1 - cl), expected, cl, "toys",
                     n_toys, seconds, limit_sb=_limit_from_cls(v, clsb, 1 - cl), expected_sb=expected_sb,
                     feldman_cousins=fc)
