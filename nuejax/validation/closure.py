r"""Closure test of the reweighting against a direct continuum fold (paper Sec. VI.A).

Set-up, as in the paper: the ⁷Be 0.8613 MeV line (oscillated, MSW-LMA), the closed-form
tree-level cross section (Eq. sm_cross_section) with an NSI shift
(:math:`\varepsilon^L_{ee} = \varepsilon^R_{ee} = 0.1`) or a magnetic moment
(:math:`\mu_\nu = 2.8\times10^{-11}\mu_B`), and the analytic response of
:mod:`nuejax.detector.response` (500 pe/MeV, Birks kB = 0.011 cm/MeV, variance = mean).

* **Direct** (reference): :math:`d_j = \int f_T(T;\varepsilon)\,P(j\mid T)\,dT`, the modified
  spectrum folded on a fine continuum grid (8000 panels × 6 Gauss-Legendre nodes over
  :math:`[0, T_{max}]`), no reweighting involved.
* **Reweighted**: the SM joint histogram :math:`N_{ij} = \int_{T_i} f_T^{SM} P(j\mid T)\,dT` on
  ``n_T`` uniform recoil bins (same fine nodes, so it is exact), then paper Eqs. (Rij),
  (fT_norm), (reweight_factor), (fNp_reweight), with weights at the bin centres, times
  :math:`\text{rate}(\varepsilon) = R^{SM}\sum_l f_T(T_l;\varepsilon)/\sum_l f_T^{SM}(T_l)`.

Both are absolute predictions in the same units, so their ratio is free of any normalisation
choice. The integral deviation is :math:`|\sum_{j\in ROI} (p_j - d_j)| / \sum_{j\in ROI} d_j` over
the region of interest 50 < N_p < 400; the bin residual is :math:`\max_{j\in ROI} |p_j/d_j - 1|`.
The deviation comes only from evaluating each recoil bin's weight at one energy and is expected
to fall as :math:`n_T^{-2}` (midpoint rule).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import jax.numpy as jnp
import numpy as np

from ..detector.montecarlo import ResponseHistogram, joint_response
from ..detector.response import ResponseParams, quenching_table, unit_bin_edges
from ..physics.cross_section import NewPhysics, t_max
from ..physics.oscillation import OscillationParams
from ..physics.spectra import build_source, recoil_bin_quadrature, recoil_spectrum, uniform_recoil_edges
from ..reweighting import normalized_reference, response_matrix, reweighted_spectrum

__all__ = ["ClosureResult", "CLOSURE_POINTS", "closure_case", "run_closure"]

CLOSURE_POINTS = {
    "nsi": NewPhysics(eps_L=(0.1, 0.0, 0.0), eps_R=(0.1, 0.0, 0.0)),
    "mm": NewPhysics(mu_nu=2.8),  # 2.8e-11 mu_B (mu_nu in units of 1e-11 mu_B)
}
DEFAULT_N_T = (25, 50, 100, 200, 500, 1000, 2000)
ROI = (50, 400)
_FINE_PANELS = 8000
_FINE_NODES = 6


@dataclass
class ClosureResult:
    """Closure numbers (the JSON of ``nuejax closure --json``) plus the spectra for the figures."""

    n_T: list
    integral_deviation_nsi: list
    integral_deviation_mm: list
    slope_nsi: float
    slope_mm: float
    max_bin_residual_nsi: float
    max_bin_residual_mm: float

    def to_json_dict(self) -> dict:
        return asdict(self)


def _fold(source, edges_T, physics, osc, obs_edges, params, table, n_sub):
    """Modified spectrum folded with P(j|T) per recoil bin, on n_sub x 6 nodes per bin (tree level)."""
    return joint_response(source, edges_T, obs_edges, params, table, osc, physics=physics, radiative=False,
                          n_bin_quad=_FINE_NODES, n_sub=n_sub)


def closure_case(n_T: int, physics: NewPhysics, *, osc: OscillationParams = OscillationParams(),
                 params: ResponseParams = ResponseParams(), energy_label: str = "7Be_862"):
    """Direct and reweighted N_p spectra over the ROI for one recoil binning ``n_T``.

    Returns ``(obs_centres, direct, reweighted, reweighted_at_sm, direct_sm)``.
    """
    if _FINE_PANELS % n_T:
        raise ValueError(f"n_T={n_T} must divide {_FINE_PANELS} so the fine grid nests in the recoil bins")
    src = build_source(energy_label)
    tmax = float(t_max(src.energies[0]))
    table = quenching_table(t_max=2.0 * tmax + 0.5)
    obs_edges = unit_bin_edges(ROI[0] + 1, ROI[1] - 1)
    fine = uniform_recoil_edges(tmax, _FINE_PANELS)
    direct = np.asarray(_fold(src, fine, physics, osc, obs_edges, params, table, 1).sum(axis=0))
    direct_sm = np.asarray(_fold(src, fine, NewPhysics(), osc, obs_edges, params, table, 1).sum(axis=0))

    edges = uniform_recoil_edges(tmax, n_T)
    counts = np.asarray(_fold(src, edges, NewPhysics(), osc, obs_edges, params, table, _FINE_PANELS // n_T))
    _, wf_sm = recoil_bin_quadrature(src, fine, NewPhysics(), osc, radiative=False, n_bin_quad=_FINE_NODES,
                                     in_sigma0_units=True)
    total_sm = float(jnp.sum(wf_sm))  # R^SM per unit flux: all events, inside the window or not
    hist = ResponseHistogram(counts, np.asarray(edges), np.asarray(obs_edges), total_sm, name=energy_label)
    R = jnp.asarray(response_matrix(hist))
    centres = 0.5 * (edges[1:] + edges[:-1])
    f_sm = recoil_spectrum(src, centres, NewPhysics(), osc, radiative=False, in_sigma0_units=True)
    f_eps = recoil_spectrum(src, centres, physics, osc, radiative=False, in_sigma0_units=True)
    f_hat = normalized_reference(f_sm)

    def predicted(f):
        rate = total_sm * jnp.sum(f) / jnp.sum(f_sm)
        return np.asarray(rate * reweighted_spectrum(R, f_hat, f))

    obs_centres = 0.5 * (np.asarray(obs_edges[1:]) + np.asarray(obs_edges[:-1]))
    return obs_centres, direct, predicted(f_eps), predicted(f_sm), direct_sm


def _deviations(direct, reweighted):
    integral = abs(reweighted.sum() - direct.sum()) / direct.sum()
    return float(integral), float(np.max(np.abs(reweighted / direct - 1.0)))


def run_closure(n_T_list=DEFAULT_N_T, *, progress=None) -> tuple[ClosureResult, dict]:
    """Run both closure cases over ``n_T_list``; returns the result and the spectra at the finest n_T."""
    dev = {"nsi": [], "mm": []}
    resid = {}
    spectra = {}
    for key, phys in CLOSURE_POINTS.items():
        for n_T in n_T_list:
            if progress:
                progress(f"closure {key}: n_T = {n_T}")
            x, direct, rw, _, _ = closure_case(n_T, phys)
            d_int, d_bin = _deviations(direct, rw)
            dev[key].append(d_int)
            resid[key] = d_bin
            spectra[key] = (x, direct, rw)
    logn = np.log(np.asarray(n_T_list, dtype=float))
    slopes = {k: float(np.polyfit(logn, np.log(np.asarray(v)), 1)[0]) for k, v in dev.items()}
    result = ClosureResult(list(n_T_list), dev["nsi"], dev["mm"], slopes["nsi"], slopes["mm"],
                           resid["nsi"], resid["mm"])
    return result, spectra


def plot_closure(result: ClosureResult, spectra: dict, outdir) -> list:
    """Write ``closure_mm.png``, ``closure_nsi.png`` and ``closure_convergence.png`` into ``outdir``."""
    import pathlib

    from ..plotting import require_matplotlib

    plt = require_matplotlib()

    outdir = pathlib.Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    written = []
    labels = {"mm": r"$\mu_\nu = 2.8\times10^{-11}\,\mu_B$", "nsi": r"$\varepsilon^L_{ee}=\varepsilon^R_{ee}=0.1$"}
    for key in ("mm", "nsi"):
        x, direct, rw = spectra[key]
        fig, (a0, a1) = plt.subplots(2, 1, sharex=True, figsize=(6.4, 5.6), gridspec_kw=dict(height_ratios=[2, 1]))
        a0.plot(x, direct, "-", lw=2, label="direct continuum fold")
        a0.plot(x, rw, "--", lw=1.5, label=f"reweighting, $n_T$ = {result.n_T[-1]}")
        a0.set_ylabel(r"$dN/dN_p$ [$\sigma_0$ units per unit flux]")
        a0.set_title(f"Closure, $^7$Be 0.8613 MeV line, {labels[key]}")
        a0.legend()
        a1.plot(x, rw / direct - 1.0, ".", ms=2)
        a1.axhline(0, color="k", lw=0.5)
        a1.set_xlabel(r"$N_p$ [photoelectrons]")
        a1.set_ylabel("reweighted / direct − 1")
        fig.tight_layout()
        path = outdir / f"closure_{key}.png"
        fig.savefig(path, dpi=120)
        plt.close(fig)
        written.append(path)
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    n = np.asarray(result.n_T, dtype=float)
    for key, dev, slope in (("nsi", result.integral_deviation_nsi, result.slope_nsi),
                            ("mm", result.integral_deviation_mm, result.slope_mm)):
        ax.loglog(n, dev, "o-", label=f"{labels[key]} (slope {slope:.2f})")
    ax.loglog(n, result.integral_deviation_mm[0] * (n / n[0]) ** -2, ":", color="gray", label=r"$n_T^{-2}$")
    ax.set_xlabel(r"recoil bins $n_T$")
    ax.set_ylabel(r"integral deviation, $50 < N_p < 400$")
    ax.legend()
    fig.tight_layout()
    path = outdir / "closure_convergence.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    written.append(path)
    return written
