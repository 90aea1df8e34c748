"""Coverage of the Feldman–Cousins construction: the fraction of toys drawn at a true point whose
interval (region) contains it, with its statistical uncertainty (:func:`coverage`)."""

from __future__ import annotations

import time
import warnings
from typing import Mapping

import jax
import jax.numpy as jnp
import numpy as np

from .construction import (ACCEPT_TOL, Construction, branch_images, branch_selection, check_toys, construction,
                           critical_value, key_data)
from .intervals import check_cl
from .results import CoverageResult
from .runner import Progress, default_chunk, run_rows
from .starts import DEFAULT_STARTS
from .toys import costly_toys, draw_parts, passes, toy_fits, toy_starts

__all__ = ["coverage"]


def coverage(model, truth: Mapping, names, n_toys: int, key=0, *, cl: float = 0.9, inner_toys: int = 0,
             profile=None, resample_aux: bool = True, starts=DEFAULT_STARTS, max_iter: int = 100,
             chunk: int | None = None, progress=False, condition_on_branch: bool = True) -> CoverageResult:
    """Fraction of toys drawn at ``truth`` (parameter values; the rest from the model's defaults)
    whose Feldman–Cousins interval for ``names`` contains the true value (:class:`CoverageResult`).

    Toys for the coverage use indices ``0 … n_toys − 1`` of ``key``; the critical values use
    another key derived from it (``jax.random.split(key)[1]``), so no toy serves twice. Every toy's
    fits start from the multi-start design ``starts`` at its generating point
    (:mod:`~nuejax.inference.starts`). With ``inner_toys`` > 0, ``condition_on_branch`` takes each
    critical value as :func:`~nuejax.inference.feldman_cousins` does (from the inner toys whose
    conditional fit stays on the branch of their generating nuisances); the result keeps the
    critical values from every valid inner toy too (``t_crit_pooled``), to compare the two on the
    same toys.
    """
    t0 = time.perf_counter()
    n_toys = check_toys(n_toys)
    check_cl(cl)
    if inner_toys:
        inner_toys = check_toys(inner_toys, "inner_toys")
    key = jnp.asarray(key_data(key))
    ps = model.parameters
    truth = ps.values(dict(truth))
    asimov = np.asarray(model.expected(truth))
    pr = construction(model, asimov, names, profile, {k: float(v) for k, v in truth.items()},
                      resample_aux=resample_aux, starts=starts)
    names_fit = pr.full.names
    x_true = np.array([float(truth[n]) for n in names_fit])
    poi_true = x_true[:len(pr.poi)]
    n_fit = len(names_fit)
    chunk = chunk or default_chunk()

    def run(gen_x, test, index, run_key, label):
        parts = draw_parts(pr.full, gen_x)
        design_g, design_c, design_idx = toy_starts(pr.full, gen_x, len(pr.poi), pr.starts, max_iter=max_iter)
        designs = (None, None) if design_g is None else (jnp.asarray(design_g), jnp.asarray(design_c))
        scheme = passes(len(index))  # the run's passes (toys.passes)

        def kernel(part):
            return toy_fits(pr.full, run_key, part["gen_x"], part["test"], part["index"], k=len(pr.poi),
                            max_iter=max_iter, parts=parts, resample=pr.resample, designs=designs,
                            design_index=part.get("design"), scheme=scheme)

        rows = {"gen_x": gen_x, "test": test, "index": index}
        if design_idx is not None:
            rows["design"] = design_idx
        bar = Progress(len(index), label) if progress else None
        n_starts = 1 if design_g is None else max(design_g.shape[1], design_c.shape[1])
        return run_rows(kernel, rows, chunk=chunk, progress=bar, n_par=n_fit, starts_per_row=n_starts,
                        cheap=not costly_toys(pr.full, pr.resample, parts))

    # the coverage toys: statistic at the truth, and the conditional fits' nuisances
    outer = run(np.repeat(x_true[None], n_toys, 0), np.repeat(poi_true[None], n_toys, 0),
                np.arange(n_toys, dtype=np.uint32), key, "coverage toys")
    ok = outer["conv_global"] & outer["conv_cond"]
    key_inner = jax.random.split(key)[1]  # not fold_in(key, i): that is coverage toy i's key
    nuis_hat = _conditional_nuisances(pr, outer, x_true, max_iter)
    if inner_toys == 0:
        inner = run(np.repeat(x_true[None], n_toys, 0), np.repeat(poi_true[None], n_toys, 0),
                    np.arange(n_toys, dtype=np.uint32), key_inner, "critical value")
        good = inner["conv_global"] & inner["conv_cond"]
        t_crit = np.full(n_toys, critical_value(inner["t"][good], cl)[0])
        n_crit = int(good.sum())
    else:
        gen = np.repeat(np.concatenate([np.repeat(poi_true[None], n_toys, 0), nuis_hat], axis=1), inner_toys, 0)
        idx = np.arange(n_toys * inner_toys, dtype=np.uint32)
        inner = run(gen, np.repeat(poi_true[None], len(idx), 0), idx, key_inner, "critical values")
        good = (inner["conv_global"] & inner["conv_cond"]).reshape(n_toys, inner_toys)
        tin = inner["t"].reshape(n_toys, inner_toys)
        t_pooled = np.array([critical_value(tin[j][good[j]], cl)[0] for j in range(n_toys)])
        t_crit = t_pooled
        if condition_on_branch:
            gen_points = gen[::inner_toys]
            use, none = branch_selection(good, nuis_hat, branch_images(pr, gen_points),
                                         inner["nuis_hat"].reshape(n_toys, inner_toys, -1))
            if np.any(none):
                warnings.warn(f"coverage: for {int(none.sum())} toy(s) no valid inner toy's conditional fit stayed on "
                              "the branch of its generating nuisances; their critical values use every valid inner toy",
                              RuntimeWarning, stacklevel=2)
            t_crit = np.array([critical_value(tin[j][use[j]], cl)[0] for j in range(n_toys)])
    covered = ok & (outer["t"] <= t_crit + ACCEPT_TOL)
    n_valid = int(ok.sum())
    f = float(covered.sum() / n_valid) if n_valid else float("nan")
    var = f * (1 - f) / n_valid if n_valid else float("nan")
    if inner_toys == 0 and n_valid:
        # the one critical value is itself estimated from n_crit toys: the probability content of
        # its estimate scatters by sqrt(cl(1-cl)/n_crit), which every covered/not-covered count shares
        var += cl * (1 - cl) / max(n_crit, 1)
    err = float(np.sqrt(var))
    return CoverageResult(pr.poi, {k: float(v) for k, v in truth.items() if np.ndim(v) == 0}, n_toys, n_valid,
                          int(covered.sum()), f, err, float(cl), int(inner_toys), t_crit, time.perf_counter() - t0,
                          t=np.where(ok, outer["t"], np.nan), nuisances=tuple(pr.nuis),
                          nuisance_hat=np.asarray(nuis_hat),
                          t_crit_pooled=t_pooled if inner_toys and condition_on_branch else None)


def _conditional_nuisances(pr: Construction, outer: dict, x_true, max_iter):
    """ν̂̂ at the true POI of every coverage toy (the generating nuisances of its inner toys)."""
    return outer["nuis_hat"] if "nuis_hat" in outer else np.repeat(x_true[None, len(pr.poi):], len(outer["t"]), 0)
