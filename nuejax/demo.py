"""The main job (``nuejax demo``): the paper's end-to-end demonstration (Sec. VI.B) on the default
Borexino-like model.

1. build the default model (9 reweighted spectra on 2000 recoil bins, 8 backgrounds) and its
   fast path;
2. make Asimov data with the general path at the injected point (ε^L_ee = 0.05,
   μ_ν = 3 × 10⁻¹¹ μ_B);
3. fit all free parameters with MINUIT (exact autodiff gradient) from a displaced start;
4. profile-likelihood scans of ε^L_ee and μ_ν, all other free parameters profiled at every point,
   each scan one batched launch;
5. report the recovered values, the 90 % CL intervals (two-sided, Δχ² = 2.706) and the one-sided
   90 % CL upper limit on μ_ν (Δχ² = 1.642 above the best fit, μ_ν ≥ 0), the time per
   likelihood call and the device; write the plots and ``summary.json`` into the output folder
   (``nuejax_output/`` of the current folder unless told otherwise).

μ_ν is in units of 1e-11 μ_B throughout (the unit of the ``mu_nu`` parameter and of
``NewPhysics.mu_nu``); the summary says so under ``"mu_nu_unit"``.
"""

from __future__ import annotations

import inspect
import json
import time
from pathlib import Path

import jax
import numpy as np

__all__ = ["INJECTED", "SCANS", "START", "device_description", "run_demo"]

#: Injected point; mu_nu in units of 1e-11 mu_B (3.0 = 3e-11 mu_B).
INJECTED = {"eps_ee_L": 0.05, "mu_nu": 3.0}
START = {"eps_ee_L": 0.0, "mu_nu": 1.0, "norm_pp": 0.98, "norm_7Be": 1.05, "rate_210Bi": 15.0, "rate_85Kr": 8.0}
SCANS = {"eps_ee_L": np.linspace(-0.03, 0.13, 81), "mu_nu": np.linspace(0.0, 5.0, 81)}


def _time_per_call(fn, *args, n: int = 20) -> float:
    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t0)
    return float(np.median(times) * 1e3)


def device_description() -> str:
    d = jax.devices()[0]
    kind = getattr(d, "device_kind", "") or ""
    return f"{d.platform}:{kind}" if kind else d.platform


def _build_model(n_T: int, say):
    """The default model, with the builder's per-component progress lines when it offers them."""
    from .model import borexino_like_model

    if "progress" in inspect.signature(borexino_like_model).parameters:
        return borexino_like_model(n_T=n_T, progress=lambda msg: say("      " + msg))
    return borexino_like_model(n_T=n_T)


def _interval_summary(scans: dict) -> dict:
    """90 % CL intervals (two-sided: the region around the best fit, and every region) of every
    scan, their conventions, the profile's local minima (branches), and the one-sided upper limit
    on mu_nu (bounded at zero)."""
    out = {}
    for name, s in scans.items():
        iv = s.interval(0.9)
        out[f"{name}_interval_90"] = list(iv)
        out[f"{name}_regions_90"] = [list(r) for r in iv.regions]
        out[f"{name}_branches"] = s.branches()
        if hasattr(iv, "convention"):
            out[f"{name}_interval_convention"] = iv.convention
    mu = scans.get("mu_nu")
    if mu is not None and hasattr(mu, "upper_limit"):
        out["mu_nu_upper_limit_90"] = mu.upper_limit(0.9)
        if hasattr(mu, "upper_limit_convention"):
            out["mu_nu_upper_limit_convention"] = mu.upper_limit_convention
    return out


def run_demo(outdir="nuejax_output", *, n_T: int = 2000, plots: bool = True, progress=print) -> dict:
    """Run the demonstration; returns the summary (also written to ``outdir/summary.json``).

    ``outdir`` (default ``nuejax_output`` of the current folder) receives ``summary.json`` and,
    with ``plots``, ``spectrum.png``, ``profile_eps_ee_L.png`` and ``profile_mu_nu.png``.
    ``progress`` gets one line per step (``None``: silent). μ_ν values are in units of 1e-11 μ_B.
    """
    from ._internal.ahead import ahead, wait
    from .inference import fit, profile_errors, profile_scan
    from .model import components, fast_model

    t_start = time.perf_counter()
    say = progress or (lambda *_: None)
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)

    say(f"[1/5] building the Borexino-like model ({n_T} recoil bins x 9 spectra, 861 N_p bins, 8 backgrounds)")
    t0 = time.perf_counter()
    model = _build_model(n_T, say)
    ps = model.parameters.release(*INJECTED)
    model = model.with_parameters(ps)
    fast = fast_model(model)
    t_build = time.perf_counter() - t0
    say(f"      built in {t_build:.1f} s")

    say("[2/5] Asimov data at the injected point (general path): " +
        ", ".join(f"{k} = {v:g}" for k, v in INJECTED.items()) + "  (mu_nu in units of 1e-11 mu_B)")
    truth = model.parameters.values(INJECTED)
    data = model.asimov(truth)
    fast_truth = {k: v for k, v in truth.items() if k in fast.parameters}
    agreement = float(np.max(np.abs(np.asarray(fast.expected(fast_truth)) / np.asarray(data) - 1)))
    # step 5's programs compile in the background while the fit and the scans run (a spare core)
    general_nll = jax.jit(lambda m, p: m.nll(p, data))  # model as an argument: no baked-in constants
    fast_vg = jax.jit(jax.value_and_grad(lambda m, p: m.nll(p, data), argnums=1))
    warming = ahead(lambda: (general_nll.lower(model, truth).compile(), fast_vg.lower(fast, fast_truth).compile()))

    say("[3/5] MINUIT fit of all free parameters from a displaced start (autodiff gradient)")
    result = fit(fast, data, START)
    if result.valid:  # the Hessian's symmetric error misleads where the profile is not a parabola (mu_nu)
        result = profile_errors(fast, data, result, names=tuple(n for n in INJECTED if n not in result.at_bound))
    say("      " + str(result).replace("\n", "\n      "))

    say("[4/5] profile scans (nuisances profiled at every point, one batched launch per scan)")
    scans = {}
    for name, values in SCANS.items():
        s = profile_scan(fast, data, name, values, global_fit=result, chunk=27,
                         progress=lambda msg: say("      " + msg))
        scans[name] = s
        iv = s.interval(0.9)
        ends = ", ".join("open" if v is None else f"{v:.4g}" for v in iv)
        say(f"      {name}: 90% CL [{ends}] ({iv.convention.split(';')[0]}) in {s.seconds:.1f} s")
    limits = _interval_summary(scans)
    if limits.get("mu_nu_upper_limit_90") is not None:
        say(f"      mu_nu: one-sided 90% CL upper limit {limits['mu_nu_upper_limit_90']:.4g} (1e-11 mu_B)")

    say("[5/5] timing one likelihood call")
    wait(warming)
    ms_general = _time_per_call(lambda p: general_nll(model, p), truth, n=5)
    ms_fast = _time_per_call(lambda p: fast_vg(fast, p), fast_truth, n=200)

    summary = {
        "eps_ee_L_injected": INJECTED["eps_ee_L"],
        "eps_ee_L_hat": result.values["eps_ee_L"],
        "eps_ee_L_error": result.errors["eps_ee_L"],
        "eps_ee_L_interval_90": limits["eps_ee_L_interval_90"],
        "mu_nu_unit": "1e-11 mu_B",
        "mu_nu_injected": INJECTED["mu_nu"],
        "mu_nu_hat": result.values["mu_nu"],
        "mu_nu_error": result.errors["mu_nu"],
        # None above when mu_nu sits on its bound: then the one-sided error and the upper limit count
        "mu_nu_at_bound": result.at_bound.get("mu_nu"),
        "mu_nu_one_sided_error": result.one_sided.get("mu_nu"),
        "mu_nu_error_text": result.error_text("mu_nu"),
        # profile-likelihood errors (signed distances to Delta(-2 ln L) = 1; None: no crossing in bounds)
        "profile_errors": {k: list(v) for k, v in (result.minos or {}).items()},
        "eps_ee_L_error_text": result.error_text("eps_ee_L"),
        "mu_nu_interval_90": limits["mu_nu_interval_90"],
        **{k: v for k, v in limits.items() if k not in ("eps_ee_L_interval_90", "mu_nu_interval_90")},
        "fit_valid": result.valid,
        "fit_calls": result.nfcn,
        "fit_gradients": result.ngrad,
        "fit_seconds": result.seconds,
        "ms_per_call": ms_general,
        "ms_per_call_fast_value_and_grad": ms_fast,
        "fast_vs_general_max_rel_diff": agreement,
        "scan_seconds": {k: s.seconds for k, s in scans.items()},
        "build_seconds": t_build,
        "device": device_description(),
        "jax_version": jax.__version__,
        "n_free_parameters": len(result.names),
    }
    if plots:
        try:
            from .plotting import parameter_label, parameter_symbol, plot_scan, plot_spectrum, require_matplotlib

            plt = require_matplotlib()
        except ImportError as err:
            say(f"      no plots: {err}")
            plots = False
    if plots:
        comps = components(fast, {k: jax.numpy.asarray(v) for k, v in result.params.items() if k in fast.parameters})
        plot_spectrum(np.asarray(model.obs_edges), comps, np.asarray(data),
                      title="Asimov data and best fit, by component", path=outdir / "spectrum.png")
        for name, s in scans.items():
            fig, ax = plt.subplots(figsize=(6.4, 4.4))
            plot_scan(s, ax, injected=INJECTED[name])
            ax.set_xlabel(parameter_label(name, s.unit))
            ax.set_title(f"Profile likelihood of {parameter_symbol(name)}, Asimov data")
            fig.tight_layout()
            fig.savefig(outdir / f"profile_{name}.png", dpi=120)
            plt.close(fig)
    summary["total_seconds"] = time.perf_counter() - t_start
    (outdir / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary
