"""``nuejax limits``: Feldman–Cousins intervals from toys on the demo model.

1. build the default Borexino-like model (``n_T`` recoil bins) and its fast path;
2. data: the Standard-Model Asimov data set (expected counts at the defaults: the median
   experiment without new physics), or counts read from a file (``--data``);
3. the Feldman–Cousins 90 % CL interval of μ_ν (ε fixed at 0) and the 90 % CL region of
   (ε^L_ee, ε^R_ee) (μ_ν fixed at 0), every flux normalisation and background rate profiled, toys
   with the flux constraints' auxiliary measurements resampled
   (:func:`~nuejax.inference.feldman_cousins`), on every visible device;
4. beside them, the Wilks (asymptotic) profile-likelihood interval and the asymptotic CLs upper
   limit of μ_ν, for comparison;
5. ``summary.json``, the two runs' folders (resumable: ``--resume``) and the figures in ``out``.

Grids: μ_ν from 0 to where the Asimov profile reaches Δχ² = 9; (ε^L_ee, ε^R_ee) over the box
where each 1-D profile (the other profiled) stays below Δχ² = 9, both widened by 20 %.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from ..errors import DataError

__all__ = ["delta_chi2_range", "merge_limits", "read_counts", "run_limits"]


def read_counts(path, n_obs: int, *, integer: bool = True) -> np.ndarray:
    """Counts per observable bin from ``path``: ``.npy``, or text with one number per bin
    (whitespace or comma separated; ``#`` comments). Raises :class:`~nuejax.errors.DataError`
    naming the file for a wrong length or an invalid count. ``integer``: warn
    (:class:`~nuejax.model.NonIntegerCountsWarning`) for non-integer counts, as raw data should
    not have them (templates and expectations may: pass False)."""
    from ..model.checks import check_data

    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: no such file")
    try:
        if path.suffix == ".npy":
            n = np.load(path)
        else:
            tokens = [t for line in path.read_text().splitlines() for t in line.split("#")[0].replace(",", " ").split()]
            n = np.array([float(t) for t in tokens])
    except (ValueError, OSError) as err:
        raise DataError(f"{path}: cannot be read as counts: {err}") from err
    return np.asarray(check_data(np.ravel(n), n_obs, name=str(path), warn_non_integer=integer), dtype=float)


def delta_chi2_range(scan, level: float) -> tuple[float, float]:
    """``(lowest, highest)`` scanned value of a :class:`~nuejax.inference.ProfileScan` whose Δχ²
    lies below ``level`` (the scan's ends where it never rises above it): the range the
    automatic grids of ``nuejax limits`` are built from."""
    d = np.asarray(scan.delta_chi2)
    ok = np.nonzero(d < level)[0]
    return float(scan.values[ok[0]]), float(scan.values[ok[-1]])


def run_limits(outdir="nuejax_limits", *, n_toys: int = 400, n_grid: int = 11, n_T: int = 2000, data=None,
               resume: bool = False, shard=None, key: int = 0, plots: bool = True, progress=print,
               chunk: int | None = None) -> dict:
    """Run the job of the module docstring; returns the summary (also ``outdir/summary.json``)."""
    import jax

    from ..inference import cls_upper_limit, feldman_cousins, newton_fit, profile_scan
    from ..model import borexino_like_model, fast_model
    from ..plotting import plot_cls, plot_feldman_cousins

    t0 = time.perf_counter()
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    say = progress or (lambda *_: None)
    devices = jax.devices()
    say(f"[1/4] building the default model (n_T = {n_T}) and its fast path on {len(devices)} "
        f"{devices[0].platform} device(s)")
    base = fast_model(borexino_like_model(n_T=n_T))
    m_mu = base.release("mu_nu")
    m_eps = base.release("eps_ee_L", "eps_ee_R")
    counts = np.asarray(base.expected(base.defaults())) if data is None else read_counts(data, base.n_obs)
    say(f"[2/4] data: {'Standard-Model Asimov' if data is None else data} ({counts.sum():.0f} events); grids from "
        "the profile likelihood")
    fit_mu = newton_fit(m_mu, counts, one_sided=False)
    scan = profile_scan(m_mu, counts, "mu_nu", np.linspace(0.0, 40.0, 81), global_fit=fit_mu)
    mu_hi = 1.2 * delta_chi2_range(scan, 9.0)[1]
    grid_mu = np.linspace(0.0, mu_hi, n_grid)
    fit_eps = newton_fit(m_eps, counts, one_sided=False)
    box = []
    for name in ("eps_ee_L", "eps_ee_R"):
        c = fit_eps.values[name]
        s = profile_scan(m_eps, counts, name, np.linspace(c - 1.0, c + 1.0, 81), global_fit=fit_eps)
        lo, hi = delta_chi2_range(s, 9.0)
        pad = 0.2 * (hi - lo)
        box.append(np.linspace(lo - pad, hi + pad, n_grid))
    wilks_mu = profile_scan(m_mu, counts, "mu_nu", grid_mu, global_fit=fit_mu)
    cls = cls_upper_limit(m_mu, counts, "mu_nu", np.linspace(mu_hi / 40, mu_hi, 40), cl=0.9)
    say(f"[3/4] Feldman–Cousins for mu_nu: {n_grid} points x {n_toys} toys")
    fc_mu = feldman_cousins(m_mu, counts, "mu_nu", grid_mu, n_toys, key=key, out=out / "fc_mu_nu", resume=resume,
                            shard=shard, progress=bool(progress), chunk=chunk)
    say(f"[4/4] Feldman–Cousins for (eps_ee_L, eps_ee_R): {n_grid}x{n_grid} points x {n_toys} toys")
    fc_eps = feldman_cousins(m_eps, counts, ("eps_ee_L", "eps_ee_R"), tuple(box), n_toys, key=key + 1,
                             out=out / "fc_eps_ee", resume=resume, shard=shard, progress=bool(progress), chunk=chunk)
    summary = {"devices": [str(d) for d in devices], "n_T": n_T, "data": "asimov_sm" if data is None else str(data),
               "n_toys": n_toys, "n_grid": n_grid, "mu_nu_unit": "1e-11 mu_B",
               "mu_nu_wilks_upper_90": wilks_mu.upper_limit(0.9),
               "mu_nu_cls_asymptotic_upper_90": cls.limit, "mu_nu_cls_expected_90": cls.expected}
    if fc_mu is None or fc_eps is None:
        summary["complete"] = False
        summary["note"] = (f"shard {shard}: this slice is on disk; run the other slices, then "
                           f"`nuejax limits --merge DIR ...`")
    else:
        summary.update(_fc_summary(fc_mu, fc_eps))
        if plots:
            plot_feldman_cousins(fc_mu, path=out / "fc_mu_nu.png")
            plot_feldman_cousins(fc_eps, path=out / "fc_eps_ee.png")
            plot_cls(cls, path=out / "cls_mu_nu.png")
    summary["seconds"] = time.perf_counter() - t0
    (out / "summary.json").write_text(json.dumps(summary, indent=1, allow_nan=False))
    return summary


def _fc_summary(fc_mu, fc_eps) -> dict:
    return {"complete": True, "mu_nu_fc_interval_90": list(fc_mu.interval), "mu_nu_fc_regions_90": fc_mu.regions,
            "mu_nu_fc_convention": fc_mu.convention,
            "eps_ee_fc_accepted_points": int(np.sum(fc_eps.accepted)), "eps_ee_fc_grid": [len(a) for a in fc_eps.axes],
            "eps_ee_L_fc_range_90": _projection(fc_eps, 0), "eps_ee_R_fc_range_90": _projection(fc_eps, 1),
            "toys_valid_fraction": float((np.sum(fc_mu.n_valid) + np.sum(fc_eps.n_valid))
                                         / (fc_mu.n_toys * (len(fc_mu.points) + len(fc_eps.points))))}


def _projection(fc, axis):
    """The range of one parameter over the accepted grid points of a 2-D region (grid precision)."""
    pts = np.asarray(fc.points)[np.asarray(fc.accepted, dtype=bool)]
    return [float(pts[:, axis].min()), float(pts[:, axis].max())] if len(pts) else [None, None]


def merge_limits(folders, outdir) -> dict:
    """Merge the run folders of ``nuejax limits --shard i/n`` processes (each a ``--out``
    folder holding ``fc_mu_nu`` and ``fc_eps_ee``) into ``outdir`` and write its summary."""
    from ..inference import load_run, merge_runs

    out = Path(outdir)
    res = {}
    for run in ("fc_mu_nu", "fc_eps_ee"):
        res[run] = load_run(merge_runs([Path(f) / run for f in folders], out / run))
    summary = {"merged_from": [str(f) for f in folders], **_fc_summary(res["fc_mu_nu"], res["fc_eps_ee"])}
    (out / "summary.json").write_text(json.dumps(summary, indent=1, allow_nan=False))
    return summary
