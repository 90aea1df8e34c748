"""Command-line interface: ``nuejax <command>``.

The CLI opts in to float64 explicitly (``nuejax.enable_x64()``) before building anything.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from .precision import enable_x64


def _add_physics_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--solar-model", choices=("gs98", "agss09"), default="gs98",
                   help="B16 standard solar model (default: gs98)")
    p.add_argument("--tree", action="store_true",
                   help="tree-level cross section (s_W^2 = 0.23867) instead of BKS radiative corrections")
    for flav in ("ee", "mumu", "tautau"):
        for chir in ("L", "R"):
            p.add_argument(f"--eps-{flav}-{chir}", type=float, default=0.0, metavar="X",
                           help=f"NSI coupling epsilon^{chir}_{flav} (default 0)")
    p.add_argument("--mu-nu", type=float, default=0.0, metavar="MU",
                   help="effective neutrino magnetic moment in Bohr magnetons, e.g. 3e-11 (needs --threshold > 0)")


def _physics_from_args(args):
    from .physics import NewPhysics

    return NewPhysics(
        eps_L=(args.eps_ee_L, args.eps_mumu_L, args.eps_tautau_L),
        eps_R=(args.eps_ee_R, args.eps_mumu_R, args.eps_tautau_R),
        mu_nu=args.mu_nu,
    )


def _cmd_rates(args) -> int:
    from .physics import component_rates

    t0 = time.perf_counter()
    try:
        rates = component_rates(_physics_from_args(args), solar_model=args.solar_model,
                                radiative=not args.tree, threshold=args.threshold)
    except ValueError as err:
        print(f"nuejax rates: error: {err}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(rates))
        return 0
    xs = "tree level (s_W^2 = 0.23867)" if args.tree else "BKS electroweak + QED radiative corrections"
    print(f"Solar-neutrino ν–e elastic-scattering rates, counts/(day·100 t) "
          f"[{3.307e31:.4g} e⁻ per 100 t], recoil threshold {args.threshold:g} MeV")
    print(f"solar model B16-{args.solar_model.upper()}, MSW-LMA (NuFIT 6.0 NO), {xs}")
    print(f"{'component':>10}  {'rate':>12}")
    for key, value in rates.items():
        print(f"{key:>10}  {value:12.5g}")
    print(f"({time.perf_counter() - t0:.1f} s)")
    return 0


def _cmd_closure(args) -> int:
    from .validation.closure import plot_closure, run_closure

    t0 = time.perf_counter()
    quiet = args.json
    progress = None if quiet else (lambda msg: print(f"  {msg}", flush=True))
    n_T = [int(x) for x in args.n_T.split(",")]
    result, spectra = run_closure(n_T, progress=progress)
    figures = [] if args.no_plots else plot_closure(result, spectra, args.outdir)
    if args.json:
        print(json.dumps(result.to_json_dict()))
        return 0
    print("Closure of the reweighting vs the direct continuum fold (7Be 0.8613 MeV line, analytic response)")
    print(f"{'n_T':>6}  {'NSI integral dev.':>18}  {'MM integral dev.':>18}")
    for n, a, b in zip(result.n_T, result.integral_deviation_nsi, result.integral_deviation_mm):
        print(f"{n:>6}  {a:18.3e}  {b:18.3e}")
    print(f"log-log slopes: NSI {result.slope_nsi:.3f}, MM {result.slope_mm:.3f} (midpoint rule: -2)")
    print(f"max bin residual at n_T = {result.n_T[-1]}: NSI {result.max_bin_residual_nsi:.3e}, "
          f"MM {result.max_bin_residual_mm:.3e}")
    for f in figures:
        print(f"wrote {f}")
    print(f"({time.perf_counter() - t0:.1f} s)")
    return 0


def _cmd_demo(args) -> int:
    from .demo import run_demo

    progress = (lambda *_: None) if args.json else (lambda msg: print(msg, flush=True))
    summary = run_demo(args.outdir, n_T=args.n_T, plots=not args.no_plots, progress=progress)
    if args.json:
        print(json.dumps(summary))
        return 0
    u = summary["mu_nu_unit"]
    print()
    print(f"recovered eps_ee_L = {summary['eps_ee_L_hat']:.5f} ± {summary['eps_ee_L_error']:.5f} "
          f"(injected {summary['eps_ee_L_injected']}), 90% CL {_fmt(summary['eps_ee_L_interval_90'])}")
    print(f"recovered mu_nu    = {summary['mu_nu_hat']:.4f} ± {summary['mu_nu_error']:.4f} {u} "
          f"(injected {summary['mu_nu_injected']}), 90% CL {_fmt(summary['mu_nu_interval_90'])} {u}")
    print(f"time per likelihood call: {summary['ms_per_call']:.1f} ms (general path, value), "
          f"{summary['ms_per_call_fast_value_and_grad']:.3f} ms (fast path, value + gradient) on {summary['device']}")
    print(f"wrote {args.outdir}/summary.json" + ("" if args.no_plots else ", spectrum.png, profile_*.png"))
    print(f"total {summary['total_seconds']:.1f} s")
    return 0


def _cmd_injection(args) -> int:
    from .validation.injection import run_injection_recovery

    progress = None if args.json else (lambda msg: print(msg, flush=True))
    results = run_injection_recovery(None if args.no_plots else args.outdir, n_T=args.n_T, progress=progress)
    out = {k: r.to_json_dict() for k, r in results.items()}
    if args.json:
        print(json.dumps(out))
        return 0
    for case, r in results.items():
        print(f"{case}: {r.name} injected {r.injected:g}, fitted {r.fitted:.5g} ± {r.error:.3g}, "
              f"90% CL {_fmt(r.interval_90)}")
    return 0


def _fmt(interval):
    lo, hi = interval
    f = lambda v: "none" if v is None else f"{v:.4g}"  # noqa: E731
    return f"[{f(lo)}, {f(hi)}]"


def _add_model_run_options(p: argparse.ArgumentParser, outdir: str) -> None:
    p.add_argument("--outdir", default=outdir, help=f"where the outputs go (default {outdir})")
    p.add_argument("--n-T", type=int, default=2000, help="recoil bins per spectrum (default 2000)")
    p.add_argument("--no-plots", action="store_true", help="skip the figures")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nuejax", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("rates", help="SM (or NSI / magnetic-moment) event rate of every solar component")
    _add_physics_options(p)
    p.add_argument("--threshold", type=float, default=0.0, help="recoil threshold T [MeV] (default 0)")
    p.add_argument("--json", action="store_true", help="print one JSON object keyed by component")
    p.set_defaults(func=_cmd_rates)
    p = sub.add_parser("closure", help="closure test of the reweighting (paper Sec. VI.A), with figures")
    p.add_argument("--n-T", default="25,50,100,200,500,1000,2000",
                   help="comma-separated recoil binnings (each must divide 8000)")
    p.add_argument("--outdir", default="docs/figures", help="where the figures go (default docs/figures)")
    p.add_argument("--no-plots", action="store_true", help="skip the figures")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_cmd_closure)
    p = sub.add_parser("demo", help="the main job: injection, MINUIT fit and profile scans on the Borexino-like model")
    _add_model_run_options(p, "nuejax_output")
    p.set_defaults(func=_cmd_demo)
    p = sub.add_parser("injection", help="injection-recovery of eps_ee_L and mu_nu on Asimov data (paper Sec. VI.B)")
    _add_model_run_options(p, "docs/figures")
    p.set_defaults(func=_cmd_injection)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    enable_x64()
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
