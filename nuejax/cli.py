"""Command-line interface: ``nuejax <command>``.

The CLI opts in to float64 explicitly (``nuejax.enable_x64()``) before building anything, and
switches on JAX's persistent compilation cache in the package's cache folder
(:func:`nuejax.cache.enable_compilation_cache`; ``NUEJAX_COMPILATION_CACHE=0`` keeps it off);
on GPUs it switches XLA's Triton GEMMs and its autotuner off and JAX's reservation of most of the
GPU's memory at start, unless the user set them (:func:`nuejax.runtime.gpu_settings`).
Every numeric option must be finite; commands that write files write them into ``nuejax_output/``
of the current folder unless ``--out DIR`` (alias ``--outdir``) says otherwise. The magnetic
moment ``--mu-nu`` is in units of 1e-11 Bohr magnetons, like everywhere in nuejax.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
import time

from . import __version__
from .precision import enable_x64
from .runtime import gpu_settings

__all__ = ["DEFAULT_OUT", "build_parser", "main"]

#: Default output folder of every command that writes files (relative to the current folder).
DEFAULT_OUT = "nuejax_output"
#: The closure test's fine grid has this many panels; each recoil binning must divide it.
_CLOSURE_FINE_PANELS = 8000


def _float_type(*, nonnegative: bool = False):
    """argparse type: a finite float (and >= 0 if ``nonnegative``); argparse names the flag."""
    def parse(text: str) -> float:
        try:
            x = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not math.isfinite(x):
            raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
        if nonnegative and x < 0:
            raise argparse.ArgumentTypeError(f"must be >= 0, got {text!r}")
        return x

    return parse


def _mu_nu_type(text: str) -> float:
    """argparse type of ``--mu-nu``: finite, >= 0, in units of 1e-11 mu_B (a value below 1e-6
    looks like one meant in mu_B and is refused with the corrected value)."""
    x = _float_type(nonnegative=True)(text)
    if 0 < x < 1e-6:
        raise argparse.ArgumentTypeError(
            f"{text} looks like a value in Bohr magnetons; --mu-nu is in units of 1e-11 mu_B "
            f"(did you mean --mu-nu {x / 1e-11:g}?)")
    return x


def _int_at_least(minimum: int):
    """argparse type: an integer >= ``minimum``."""
    what = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"

    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if n < minimum:
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
        return n
    return parse


_positive_int = _int_at_least(1)
_nonnegative_int = _int_at_least(0)


def _cl_type(text: str) -> float:
    """argparse type: a confidence level strictly between 0 and 1."""
    from .inference.intervals import check_cl

    try:
        cl = float(text)
        check_cl(cl)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"{err} (0.9 means 90 %)") from None
    return cl


def _closure_n_T(text: str) -> list:
    """argparse type of ``closure --n-T``: comma-separated positive integers dividing 8000."""
    values = [_positive_int(part.strip()) for part in text.split(",")]
    bad = [n for n in values if _CLOSURE_FINE_PANELS % n]
    if bad:
        raise argparse.ArgumentTypeError(f"each recoil binning must divide {_CLOSURE_FINE_PANELS}, "
                                         f"got {', '.join(map(str, bad))}")
    return values


def _add_report_options(p: argparse.ArgumentParser) -> None:
    """``--no-plots`` and ``--json``, as every analysis command has them."""
    p.add_argument("--no-plots", action="store_true", help="skip the figures")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def _add_recompute_option(p: argparse.ArgumentParser, what: str = "stage") -> None:
    """``--recompute``, for the commands whose stages reuse an earlier run's results
    (:mod:`nuejax.analyses.reuse`); ``what`` names the command's stages."""
    p.add_argument("--recompute", action="store_true",
                   help=f"compute every {what} again instead of reusing the results that an earlier run with the same "
                        "inputs (options, data, nuejax code and library versions) stored in the cache; the new results "
                        "replace them (NUEJAX_REUSE=0: neither reuse nor store)")
    p.set_defaults(reuses_stages=True)


def _add_out_option(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--out", "--outdir", dest="out", default=DEFAULT_OUT, metavar="DIR",
                   help=f"folder for the {what} (created if needed; default ./{DEFAULT_OUT})")


def _add_physics_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--solar-model", choices=("gs98", "agss09"), default="gs98",
                   help="B16 standard solar model (default: gs98)")
    p.add_argument("--tree", action="store_true",
                   help="tree-level cross section (s_W^2 = 0.23867) instead of BKS radiative corrections")
    for flav in ("ee", "mumu", "tautau"):
        for chir in ("L", "R"):
            p.add_argument(f"--eps-{flav}-{chir}", type=_float_type(), default=0.0, metavar="X",
                           help=f"NSI coupling epsilon^{chir}_{flav} (default 0)")
    p.add_argument("--mu-nu", type=_mu_nu_type, default=0.0, metavar="MU",
                   help="effective neutrino magnetic moment in units of 1e-11 Bohr magnetons, >= 0: "
                        "--mu-nu 3 is 3e-11 mu_B (default 0; needs --threshold > 0)")
    g = p.add_argument_group("general case (docs/physics.md: general NSI, mediators, propagation, day-night)")
    for pair in ("emu", "etau", "mutau"):
        for chir in ("L", "R"):
            for part, word in (("re", "real"), ("im", "imaginary")):
                g.add_argument(f"--eps-{pair}-{chir}-{part}", type=_float_type(), default=0.0, metavar="X",
                               help=f"{word} part of the off-diagonal NSI coupling epsilon^{chir}_{pair} (default 0)")
    for med, what in (("zprime", "vector (Z')"), ("phi", "scalar")):
        g.add_argument(f"--{med}-coupling", type=_float_type(), default=0.0, metavar="G",
                       help=f"g_nu g_e of a {what} mediator in units of 1e-12 (default 0; needs --threshold > 0)")
        g.add_argument(f"--{med}-mass", type=_float_type(nonnegative=True), default=10.0, metavar="MEV",
                       help=f"mass of the {what} mediator in MeV (default 10)")
    g.add_argument("--propagation-nsi", action="store_true",
                   help="the NSI (eps^L + eps^R) also act in the matter potential of the Sun and the Earth")
    g.add_argument("--day-night", choices=("day", "night", "average"), default="day",
                   help="rates by day (no Earth crossing; the default), by night, or their yearly average")
    g.add_argument("--latitude", default="borexino", metavar="DEG|NAME",
                   help="detector latitude for --day-night night/average: degrees north, or borexino, "
                        "super-kamiokande (default borexino)")


_GENERAL_OPTIONS = tuple(f"eps_{p}_{c}_{x}" for p in ("emu", "etau", "mutau") for c in ("L", "R") for x in ("re", "im"))


def _physics_from_args(args):
    from .physics import NewPhysics

    return NewPhysics(
        eps_L=(args.eps_ee_L, args.eps_mumu_L, args.eps_tautau_L),
        eps_R=(args.eps_ee_R, args.eps_mumu_R, args.eps_tautau_R),
        mu_nu=args.mu_nu,
    )


def _is_general(args) -> bool:
    return (any(getattr(args, k) for k in _GENERAL_OPTIONS) or args.zprime_coupling or args.phi_coupling
            or args.propagation_nsi or args.day_night != "day")


def _general_physics_from_args(args):
    from .model.physics_params import general_physics_from_params

    keys = ("eps_ee_L", "eps_mumu_L", "eps_tautau_L", "eps_ee_R", "eps_mumu_R", "eps_tautau_R", "mu_nu",
            "zprime_coupling", "zprime_mass", "phi_coupling", "phi_mass") + _GENERAL_OPTIONS
    return general_physics_from_params({k: float(getattr(args, k)) for k in keys})


def _cmd_rates(args) -> int:
    from .physics import component_rates

    t0 = time.perf_counter()
    general = _is_general(args)
    try:
        if general:
            from .physics.earth import earth_exposure

            lat = args.latitude
            try:
                lat = float(lat)
            except ValueError:
                pass
            exposure = earth_exposure(lat) if args.day_night != "day" else None
            rates = component_rates(_general_physics_from_args(args), solar_model=args.solar_model,
                                    radiative=not args.tree, threshold=args.threshold,
                                    propagation=args.propagation_nsi, period=args.day_night, exposure=exposure)
        else:
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
    nonzero = [f"eps_{f}_{c} = {getattr(args, f'eps_{f}_{c}'):g}" for f in ("ee", "mumu", "tautau")
               for c in ("L", "R") if getattr(args, f"eps_{f}_{c}") != 0]
    nonzero += [f"{k} = {getattr(args, k):g}" for k in _GENERAL_OPTIONS if getattr(args, k)]
    if args.mu_nu:
        nonzero.append(f"mu_nu = {args.mu_nu:g} x 1e-11 mu_B")
    for med in ("zprime", "phi"):
        if getattr(args, f"{med}_coupling"):
            nonzero.append(f"{med}: g_nu g_e = {getattr(args, f'{med}_coupling'):g}e-12, "
                           f"mass {getattr(args, f'{med}_mass'):g} MeV")
    if args.propagation_nsi:
        nonzero.append("NSI in propagation")
    if args.day_night != "day":
        nonzero.append(f"{args.day_night} (Earth crossing at latitude {args.latitude})")
    print("new physics: " + (", ".join(nonzero) if nonzero else "none (Standard Model)"))
    print(f"{'component':>10}  {'rate':>12}")
    for key, value in rates.items():
        print(f"{key:>10}  {value:12.5g}")
    print(f"({time.perf_counter() - t0:.1f} s)")
    return 0


def _cmd_closure(args) -> int:
    from .validation.closure import DEFAULT_N_T, plot_closure, run_closure

    t0 = time.perf_counter()
    quiet = args.json
    progress = None if quiet else (lambda msg: print(f"  {msg}", flush=True))
    result, spectra = run_closure(args.n_T or DEFAULT_N_T, progress=progress)
    figures = [] if args.no_plots else plot_closure(result, spectra, args.out)
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

    progress = _progress(args)
    summary = run_demo(args.out, n_T=args.n_T, plots=not args.no_plots, progress=progress)
    if args.json:
        print(json.dumps(summary))
        return 0
    u = summary["mu_nu_unit"]
    print()
    print(f"recovered eps_ee_L = {summary['eps_ee_L_hat']:.5f} {summary['eps_ee_L_error_text']} "
          f"(injected {summary['eps_ee_L_injected']}), 90% CL {_fmt(summary['eps_ee_L_interval_90'])}")
    print(f"recovered mu_nu    = {summary['mu_nu_hat']:.4f} {summary['mu_nu_error_text']} {u} "
          f"(injected {summary['mu_nu_injected']}), 90% CL {_fmt(summary['mu_nu_interval_90'])} {u}")
    if summary.get("mu_nu_upper_limit_90") is not None:
        print(f"mu_nu upper limit (90% CL, one-sided) = {summary['mu_nu_upper_limit_90']:.4g} {u}")
    print(f"time per likelihood call: {summary['ms_per_call']:.1f} ms (general path, value), "
          f"{summary['ms_per_call_fast_value_and_grad']:.3f} ms (fast path, value + gradient) on {summary['device']}")
    print(f"wrote {args.out}/summary.json" + ("" if args.no_plots else ", spectrum.png, profile_*.png"))
    print(f"total {summary['total_seconds']:.1f} s")
    return 0


def _progress(args):
    """The commands' progress lines: on stdout, or with ``--json`` on stderr (stdout then holds
    the JSON object alone), so a long run is never silent."""
    stream = sys.stderr if getattr(args, "json", False) else sys.stdout
    return lambda msg: print(msg, file=stream, flush=True)


def _mediator_masses(n: int):
    """``--masses n``: n masses log-spaced over 0.01-100 MeV (none for 0)."""
    import numpy as np

    return np.logspace(-2, 2, n) if n else ()


def _cmd_xenonnt(args) -> int:
    from .analyses.xenonnt_run import run_xenonnt

    progress = _progress(args)
    summary = run_xenonnt(args.out, n_toys=args.toys, unbinned=args.unbinned, plots=not args.no_plots,
                          progress=progress, seed=args.seed, masses=_mediator_masses(args.masses), fc=not args.no_fc,
                          reuse=not args.recompute)
    if args.json:
        print(json.dumps(summary))
        return 0
    print()
    ul, ex = summary["mu_nu_upper_90"], summary["mu_nu_expected_90"]
    print("mu_nu < " + ("(none in range)" if ul is None else f"{ul:.3g}") + " mu_B (90% CL; "
          + summary["mu_nu_convention"] + ")")
    print("  expected (median) " + ("-" if ex is None else f"{ex:.3g}") + " mu_B; q~ asymptotic "
          + str(summary["mu_nu_upper_90_qtilde_asymptotic"]) + ", CLs " + str(summary["mu_nu_upper_90_cls"]))
    for name in ("eps_ee_L", "eps_ee_R"):
        print(f"{name} 90% CL regions: {summary[name + '_regions_90']}")
    for curve, d in summary["mediator_limits"].items():
        print(f"{curve}: g < " + ", ".join(f"{m:g} MeV: " + ("-" if g is None else f"{g:.2g}")
                                           for m, g in zip(d["masses_mev"], d["couplings"])))
    _print_reused(summary["reused_stages"])
    print(f"wrote {args.out}/summary.json; total {summary['seconds']:.0f} s")
    return 0


def _error_text(hessian, profile, bound) -> str:
    """A fit answer's error: the profile-likelihood one where computed, the Hessian's beside it
    only where both sides agree with it to 10 %; what was not computed, said."""
    if bound is not None:
        return f"(at its {bound} bound: no symmetric error; see a profile or limit question)"
    h = "" if hessian is None else f"+- {hessian:.2g} (Hessian)"
    if not profile:
        return h or "(no error: the Hessian is singular here)"
    lo, hi = profile
    text = (f"{'none' if lo is None else f'{lo:+.2g}'}/{'none' if hi is None else f'{hi:+.2g}'} (profile, Δχ² = 1"
            + ("; " + ", ".join(w for w, v in (("no lower crossing inside the bounds", lo),
                                               ("no upper crossing inside the bounds", hi)) if v is None)
               if lo is None or hi is None else "") + ")")
    agree = hessian is not None and lo is not None and hi is not None and \
        max(abs(-lo - hessian), abs(hi - hessian)) <= 0.1 * hessian
    return f"{text}, {h}" if agree else (f"{text}; the Hessian's {hessian:.2g} differs: the profile is not a parabola"
                                         if hessian is not None else text)


def _print_answer(name: str, a: dict) -> None:
    """One answer of an analysis specification (:func:`~nuejax.analyses.spec.run_spec`), as text."""
    if a["kind"] == "fit":
        print(f"{name}: fit {'valid' if a['valid'] else 'NOT valid'}, -2 ln L = {a['nll']:.3f}, "
              f"{a['n_at_minimum']} of {a['n_starts']} starts at the minimum")
        for k, v in a["values"].items():
            print(f"  {k} = {v:.6g} {_error_text(a['errors'].get(k), a.get('profile_errors', {}).get(k), a['at_bound'].get(k))}")
    elif a["kind"] == "profile":
        def region(r):  # None: the region reaches that end of the scanned grid
            lo = f"{r[0]:.4g}" if r[0] is not None else f"(grid start {a['values'][0]:g}, open)"
            hi = f"{r[1]:.4g}" if r[1] is not None else f"(grid end {a['values'][-1]:g}, open)"
            return f"[{lo}, {hi}]"

        print(f"{name}: {a['poi']} {a['cl']:.0%} CL regions " + ", ".join(region(r) for r in a["regions"])
              + f"; the best fit's {region(a['interval'])}; {a['converged']} of {len(a['values'])} points "
              f"converged ({a['convention']})")
    elif a["kind"] == "upper_limit":
        print(f"{name}: {a['poi']} < " + ("(no crossing on the grid)" if a["upper"] is None else f"{a['upper']:.4g}")
              + f" at {a['cl']:.0%} CL (best fit {a['best']:.4g})")
    elif a["kind"] == "goodness_of_fit":
        toys = ("" if a["p_toys"] is None else
                f", p = {a['p_toys']:.3g} from {a['n_toys_converged']} of {a['n_toys']} toys")
        print(f"{name}: deviance {a['deviance']:.2f} for {a['ndof']} degrees of freedom, p(chi2) = {a['p_chi2']:.3g}"
              f"{toys} ({a['convention']})")
    elif a["kind"] == "cls":
        lim = "not reached on the grid" if a["limit"] is None else f"{a['limit']:.4g}"
        exp = a["expected"].get("0")
        print(f"{name}: {a['poi']} < {lim} at {a['cl']:.0%} CL, CLs ({a['method']}"
              + (f", {a['n_toys']} toys" if a["n_toys"] else "") + ")"
              + ("" if exp is None else f"; expected median {exp:.4g}"))
        print(f"  {a['convention']}")
    elif a["kind"] == "region_2d":
        x, y = a["poi"]
        where = ("no grid point inside" if a["extent"] is None else
                 f"{x} in [{a['extent'][0][0]:.4g}, {a['extent'][0][1]:.4g}], "
                 f"{y} in [{a['extent'][1][0]:.4g}, {a['extent'][1][1]:.4g}] on the grid")
        n = len(a["values_x"]) * len(a["values_y"])
        print(f"{name}: {x} x {y} {a['cl']:.0%} CL region (Δχ² < {a['threshold']:.3f}, 2 dof): {a['n_inside']} of {n} "
              f"grid points inside, {where}; best fit ({a['best'][0]:.4g}, {a['best'][1]:.4g}); "
              f"{a['converged']} of {n} points converged")
        if a["open_at"]:
            print(f"  the region reaches the grid's edge at {', '.join(a['open_at'])}: it may continue beyond the grid")
    elif a["kind"] == "feldman_cousins_2d":
        x, y = a["poi"]
        n = len(a["values_x"]) * len(a["values_y"])
        where = ("no grid point accepted" if a["extent"] is None else
                 f"{x} in [{a['extent'][0][0]:.4g}, {a['extent'][0][1]:.4g}], "
                 f"{y} in [{a['extent'][1][0]:.4g}, {a['extent'][1][1]:.4g}] on the grid")
        print(f"{name}: {x} x {y} {a['cl']:.0%} CL Feldman-Cousins region: {a['n_accepted']} of {n} grid points "
              f"accepted, {where}; best fit ({a['best'][0]:.4g}, {a['best'][1]:.4g}); {a['n_toys']} toys per point")
        print(f"  {a['convention']}")
    elif a["kind"] == "impacts":
        from .inference.impacts import ImpactsResult

        print(f"{name}: " + str(ImpactsResult.from_dict(a)).replace("\n", "\n  "))
        if a["figure"]:
            print(f"  figure: {a['figure']}")
    else:  # feldman_cousins
        print(f"{name}: {a['poi']} {a['cl']:.0%} CL Feldman-Cousins interval {_fmt(a['interval'])} (regions: "
              + ", ".join(_fmt(r) for r in a["regions"]) + f"; best fit {a['best']:.4g}); {a['n_toys']} toys at each "
              f"of {len(a['values'])} points over [{a['values'][0]:.4g}, {a['values'][-1]:.4g}]")
        print(f"  {a['convention']}")
    for w in a.get("warnings", []):
        print(f"  warning: {w}")


def _answer_spec(command: str, args, **kw) -> int:
    """``nuejax run`` and ``nuejax limits SPEC``: answer the specification ``args.spec`` (``kw`` to
    :func:`~nuejax.analyses.spec.run_spec`), print the answers or one JSON object."""
    from .analyses.spec import run_spec
    from .errors import InputError

    try:
        res = run_spec(args.spec, args.out, progress=_progress(args), **kw)
    except InputError as err:
        print(f"nuejax {command}: error: {err}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(res))
        return 0
    for name, a in res["questions"].items():
        _print_answer(name, a)
    _print_reused(res.get("reused"))
    print(f"wrote {args.out}/results.json; total {res['seconds']:.0f} s")
    return 0


def _print_reused(stages) -> None:
    """The closing line of a command that reused stored results (nuejax.analyses.reuse)."""
    if stages:
        print(f"reused from the cache (computed by an earlier run): {', '.join(stages)}; --recompute computes them again")


def _cmd_run(args) -> int:
    return _answer_spec("run", args, resume=args.resume, reuse=not args.recompute)


def _cmd_combine(args) -> int:
    from .analyses.combine_run import run_combine

    progress = _progress(args)
    summary = run_combine(args.out, eps=not args.no_eps, masses=_mediator_masses(args.masses),
                          plots=not args.no_plots, progress=progress, reuse=not args.recompute)
    if args.json:
        print(json.dumps(summary))
        return 0
    print()
    for name, d in list(summary["per_experiment"].items()) + [("combined", summary["combined"])]:
        ul = d["mu_nu_upper_90"]
        print(f"{name:>9}: mu_nu < " + ("(none in range)" if ul is None else f"{ul:.3g}") + " mu_B (90% CL, one-sided q~)")
    _print_reused(summary["reused_stages"])
    print(f"wrote {args.out}/summary.json; total {summary['seconds']:.0f} s")
    return 0


def _cmd_borexino(args) -> int:
    from .analyses.borexino import Phase3Choices
    from .analyses.borexino_run import run_borexino

    progress = _progress(args)
    extra = {} if args.starts is None else {"starts": args.starts}
    summary = run_borexino(args.out, choices=Phase3Choices(rebin=args.rebin), n_toys=args.toys,
                           plots=not args.no_plots, progress=progress, reuse=not args.recompute, **extra)
    if args.json:
        print(json.dumps(summary))
        return 0
    print()
    err = summary["cno_error"]
    print(f"CNO = {summary['cno_best']:.2f}" + (f" ± {err:.2f}" if err is not None else "") +
          f" cpd/100 t (published {summary['cno_published']['value']} +{summary['cno_published']['plus']}"
          f"/-{summary['cno_published']['minus']})")
    print("-2 Delta ln L at CNO =   " + "  ".join(f"{k:>6}" for k in summary["cno_profile"]))
    print("  nuejax (open data)     " + "  ".join(f"{v:6.2f}" for v in summary["cno_profile"].values()))
    print("  Borexino (published)   " + "  ".join(f"{v:6.2f}" for v in summary["cno_profile_published"].values()))
    print(f"deviance/ndf = {summary['deviance']:.1f}/{summary['ndf']}, p(toys) = {summary['p_toys']}")
    ul = summary["mu_nu_upper_90"]
    print(f"mu_nu < {ul:.3g} mu_B (90% CL)" if ul is not None else "mu_nu: no upper limit inside the scanned range")
    for n, side in summary.get("mu_nu_upper_90_at_bound", {}).items():
        print(f"    at the limit {n} sits on its {side} bound: the limit depends on that bound")
    for name in ("eps_ee_L", "eps_ee_R"):
        regions = " U ".join(_fmt(r) for r in summary[f"{name}_regions_90"])
        print(f"{name} 90% CL: {regions} (each with the other free; SSM-constrained rates); "
              f"best fit in {_fmt(summary[f'{name}_interval_90'])}")
        branches = ", ".join(f"{b['value']:.3g} (Δχ² {b['delta_chi2']:.2f})" for b in summary[f"{name}_branches"])
        print(f"    profile minima (branches): {branches}")
    _print_reused(summary["reused_stages"])
    print(f"wrote {args.out}/summary.json" + ("" if args.no_plots else ", spectrum.png, cno_profile.png, "
                                                                      "profile_*.png, eps_ee_L_R.png"))
    print(f"total {summary['seconds']:.1f} s")
    return 0


def _cmd_injection(args) -> int:
    from .validation.injection import run_injection_recovery

    progress = _progress(args)
    results = run_injection_recovery(None if args.no_plots else args.out, n_T=args.n_T, progress=progress)
    out = {k: r.to_json_dict() for k, r in results.items()}
    if args.json:
        print(json.dumps(out))
        return 0
    for case, r in results.items():
        print(f"{case}: {r.name} injected {r.injected:g}, fitted {r.fitted:.5g} ± {r.error:.3g}, "
              f"90% CL {_fmt(r.interval_90)}")
    return 0


def _limits_grid(values):
    """``--grid``: N (points; of the automatic range with a spec) or START STOP N."""
    try:
        if len(values) == 1 and int(values[0]) >= 2:
            return {"points": int(values[0])}
        if len(values) == 3 and int(values[2]) >= 2 and float(values[1]) > float(values[0]):
            return {"grid": {"start": float(values[0]), "stop": float(values[1]), "num": int(values[2])}}
    except ValueError:
        pass
    raise SystemExit(f"nuejax limits: error: --grid takes N (>= 2 points) or START STOP N (STOP > START, N >= 2), "
                     f"got {' '.join(values)}")


def _cmd_limits_spec(args) -> int:
    if not args.poi:
        raise SystemExit("nuejax limits: error: with a specification file, --poi NAME names the parameter of interest")
    if args.merge or args.shard or args.data:
        raise SystemExit("nuejax limits: error: --merge, --shard and --data are for the demo model; a specification "
                         "names its own data")
    grid = _limits_grid(args.grid) if args.grid else {}
    if "points" in grid and grid["points"] < 3:
        raise SystemExit("nuejax limits: error: an automatic grid needs --grid N with N >= 3")
    q = {"name": f"{args.poi}_feldman_cousins", "kind": "feldman_cousins", "poi": args.poi, "cl": args.cl,
         "toys": args.toys, "seed": args.seed, **grid}
    if args.starts is not None:
        q["starts"] = args.starts
    return _answer_spec("limits", args, questions=[{"name": "fit", "kind": "fit", "profile_errors": False}, q],
                        resume=args.resume, asked_by=f"nuejax limits --poi {args.poi}")


def _cmd_limits(args) -> int:
    from .analyses.limits import merge_limits, run_limits

    if args.spec is not None:
        return _cmd_limits_spec(args)
    if args.poi or args.cl != 0.9:
        raise SystemExit("nuejax limits: error: --poi and --cl need a specification file (nuejax limits SPEC --poi NAME)")
    grid = _limits_grid(args.grid) if args.grid else {"points": 11}
    if "points" not in grid:
        raise SystemExit("nuejax limits: error: the demo model takes --grid N (points per parameter)")
    if args.merge:
        summary = merge_limits(args.merge, args.out)
    else:
        progress = _progress(args)
        summary = run_limits(args.out, n_toys=args.toys, n_grid=grid["points"], n_T=args.n_T, data=args.data,
                             resume=args.resume, shard=args.shard, key=args.seed, plots=not args.no_plots,
                             progress=progress, chunk=args.chunk)
    if args.json:
        print(json.dumps(summary))
        return 0
    print()
    if not summary.get("complete"):
        print(summary.get("note", "incomplete run"))
        return 0
    u = "x 1e-11 mu_B"
    print(f"mu_nu 90% CL Feldman-Cousins: {_fmt(summary['mu_nu_fc_interval_90'])} {u}")
    if "mu_nu_wilks_upper_90" in summary:
        print(f"  (Wilks one-sided upper limit {summary['mu_nu_wilks_upper_90']:.4g}, asymptotic CLs "
              f"{summary['mu_nu_cls_asymptotic_upper_90']:.4g})")
    print(f"(eps_ee_L, eps_ee_R) 90% CL Feldman-Cousins region: {summary['eps_ee_fc_accepted_points']} of "
          f"{summary['eps_ee_fc_grid'][0]}x{summary['eps_ee_fc_grid'][1]} grid points; eps_ee_L in "
          f"{_fmt(summary['eps_ee_L_fc_range_90'])}, eps_ee_R in {_fmt(summary['eps_ee_R_fc_range_90'])}")
    print(f"wrote {args.out}/summary.json" + ("" if args.no_plots else ", fc_mu_nu.png, fc_eps_ee.png, cls_mu_nu.png"))
    if "seconds" in summary:
        print(f"total {summary['seconds']:.1f} s")
    return 0


#: what each kind of entry of the on-disk cache holds (``nuejax cache`` says it beside its count)
CACHE_KINDS = {
    "background": "background templates",
    "calibration": "the Borexino Phase-III response calibration",
    "cost": "XLA's cost analyses of the fits' objectives",
    "design": "quasi-random start designs",
    "index": "the programs each command's last run called, loaded ahead by the next",
    "phasethree": "Borexino Phase-III model tensors",
    "program": "exported solver and toy-fit programs",
    "signal": "reweighted signal tensors",
    "stage": "the analysis commands' stage results, reused by a later run; --clear --results removes them",
    "stages": "which stages each command's last run had",
    "xenonnt": "XENONnT SR0 model tensors",
}


def _cmd_cache(args) -> int:
    from .cache import describe_bytes, cache_info, clear_cache
    from .errors import InputError

    if (args.stale or args.results) and not args.clear:
        print(f"nuejax cache: error: {'--stale' if args.stale else '--results'} only goes with --clear", file=sys.stderr)
        return 2
    removed = None
    try:
        if args.clear:
            # the analysis commands' stored stage results and their runs' records (nuejax.analyses.reuse)
            removed = clear_cache(stale_only=args.stale, kinds=("stage", "stages") if args.results else None)
        info = cache_info()
    except InputError as err:  # a bad NUEJAX_CACHE value
        print(f"nuejax cache: error: {err}", file=sys.stderr)
        return 2
    if removed is not None:
        info["removed_files"], info["removed_bytes"] = removed
    if args.json:
        print(json.dumps(info))
        return 0
    if removed is not None:
        what = ("stale " if args.stale else "") + ("stored stage results" if args.results else "entries")
        print(f"removed {removed[0]} {what} ({describe_bytes(removed[1])}) from {info['path']}")
    print(f"nuejax cache: {info['path']} ({'enabled' if info['enabled'] else 'disabled by NUEJAX_CACHE'})")
    print(f"  {info['entries']} entries, {describe_bytes(info['bytes'])}; of this code and environment: "
          f"{info['current_entries']} ({describe_bytes(info['current_bytes'])}); "
          f"stale: {info['entries'] - info['current_entries']}")
    for kind, (n, b) in sorted(info["by_kind"].items()):
        what = CACHE_KINDS.get(kind)
        print(f"  {kind:>10}: {n} entries, {describe_bytes(b)}" + (f"  ({what})" if what else ""))
    if info["temporary_files"]:
        print(f"  {info['temporary_files']} temporary files of writers (running, or killed)")
    print(f"JAX compilation cache: {info['compiled_programs']} programs, {describe_bytes(info['compiled_bytes'])}"
          f" (NUEJAX_COMPILATION_CACHE=0 switches it off)")
    return 0


def _fmt(interval):
    """An interval as text; a missing end is "open" (the region reaches the grid's end or a bound),
    as the scan lines of the commands print it."""
    lo, hi = interval
    f = lambda v: "open" if v is None else f"{v:.4g}"  # noqa: E731
    return f"[{f(lo)}, {f(hi)}]"


def _add_model_run_options(p: argparse.ArgumentParser, what: str) -> None:
    _add_out_option(p, what)
    p.add_argument("--n-T", type=_positive_int, default=2000, help="recoil bins per spectrum (default 2000)")
    _add_report_options(p)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nuejax", description=__doc__.splitlines()[0].replace("``", ""))
    parser.add_argument("--version", action="version", version=f"nuejax {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("rates", help="SM (or NSI / magnetic-moment) event rate of every solar component")
    _add_physics_options(p)
    p.add_argument("--threshold", type=_float_type(nonnegative=True), default=0.0, metavar="T",
                   help="recoil threshold T [MeV], >= 0 (default 0)")
    p.add_argument("--json", action="store_true", help="print one JSON object keyed by component")
    p.set_defaults(func=_cmd_rates)
    p = sub.add_parser("closure", help="closure test of the reweighting (paper Sec. VI.A), with figures")
    p.add_argument("--n-T", type=_closure_n_T, default=None, metavar="N,N,...",
                   help=f"comma-separated recoil binnings, each dividing {_CLOSURE_FINE_PANELS} "
                        "(default 25,50,100,200,500,1000,2000)")
    _add_out_option(p, "figures")
    _add_report_options(p)
    p.set_defaults(func=_cmd_closure)
    p = sub.add_parser("demo", help="the main job: injection, MINUIT fit and profile scans on the Borexino-like model")
    _add_model_run_options(p, "plots and summary.json")
    p.set_defaults(func=_cmd_demo)
    p = sub.add_parser("borexino", help="the Borexino Phase-III open-data analysis: CNO, goodness of fit, mu_nu "
                                        "limit and NSI intervals")
    _add_out_option(p, "plots, fit results and summary.json")
    p.add_argument("--toys", type=_positive_int, default=50, help="goodness-of-fit toys (default 50)")
    p.add_argument("--rebin", type=_positive_int, default=4, help="data bins merged per fit bin (default 4)")
    p.add_argument("--starts", type=_positive_int, default=None,
                   help="multi-start design size of every fit and scan (default 8; 1 takes a third less time and "
                        "is blind to the second eps_ee_L branch)")
    _add_report_options(p)
    _add_recompute_option(p)
    p.set_defaults(func=_cmd_borexino)
    p = sub.add_parser("xenonnt", help="the XENONnT SR0 electronic-recoil analysis on the open data: mu_nu limits "
                                       "(q~, Neyman, CLs, Feldman-Cousins), NSI intervals, mediator exclusion curves")
    _add_out_option(p, "plots, fit results and summary.json")
    p.add_argument("--toys", type=_nonnegative_int, default=100,
                   help="toys per tested mu_nu value of the constructions (default 100; 0: asymptotic only)")
    p.add_argument("--unbinned", action="store_true", help="the extended unbinned likelihood of the 433 events")
    p.add_argument("--masses", type=_positive_int, default=9,
                   help="mediator masses, log-spaced over 0.01-100 MeV (default 9)")
    p.add_argument("--no-fc", action="store_true", help="skip the Feldman-Cousins construction")
    p.add_argument("--seed", type=int, default=0, help="random seed of the toys (default 0)")
    _add_report_options(p)
    _add_recompute_option(p)
    p.set_defaults(func=_cmd_xenonnt)
    p = sub.add_parser("run", help="run the analysis of a specification file (TOML; docs/spec.md): its model, data "
                                   "and questions (fit, profile, upper_limit, cls, feldman_cousins, region_2d, "
                                   "impacts, goodness_of_fit)")
    p.add_argument("spec", help="the specification file")
    _add_out_option(p, "results.json, figures and the runs of feldman_cousins questions")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--resume", action="store_true", help="continue the stored toy runs of feldman_cousins questions in --out")
    _add_recompute_option(p, "fit and answer (feldman_cousins runs in --out follow --resume)")
    p.set_defaults(func=_cmd_run)
    p = sub.add_parser("combine", help="Borexino Phase-III and XENONnT SR0 together: mu_nu limits, (eps_ee_L, "
                                       "eps_ee_R) regions and mediator curves, each experiment alone and combined")
    _add_out_option(p, "figures, scans and summary.json")
    p.add_argument("--no-eps", action="store_true", help="skip the (eps_ee_L, eps_ee_R) regions")
    p.add_argument("--masses", type=_nonnegative_int, default=5,
                   help="mediator masses, log-spaced over 0.01-100 MeV (default 5; 0: no mediator curves)")
    _add_report_options(p)
    _add_recompute_option(p)
    p.set_defaults(func=_cmd_combine)
    p = sub.add_parser("limits", help="Feldman-Cousins interval from toys: of any parameter of an analysis "
                                      "specification (SPEC --poi NAME), or of mu_nu and the (eps_ee_L, eps_ee_R) "
                                      "region of the demo model (no SPEC), on every visible device")
    _add_out_option(p, "the toy runs and results (with SPEC: results.json; without: figures and summary.json)")
    p.add_argument("--n-T", type=_positive_int, default=2000, help="demo model only: recoil bins per spectrum (default 2000)")
    _add_report_options(p)
    p.add_argument("spec", nargs="?", default=None,
                   help="an analysis specification file (docs/spec.md): its model and data, --poi's interval")
    p.add_argument("--poi", default=None, metavar="NAME", help="with SPEC: the parameter of interest (a free parameter)")
    p.add_argument("--cl", type=_cl_type, default=0.9, help="with SPEC: the confidence level (default 0.9)")
    p.add_argument("--starts", type=_positive_int, default=None, help="with SPEC: multi-start design size of every fit")
    p.add_argument("--toys", type=_positive_int, default=400, help="toys per grid point (default 400)")
    p.add_argument("--grid", nargs="+", default=None, metavar="X",
                   help="N: grid points (per parameter; with SPEC over the range where the profile stays below 9, "
                        "widened by 20%%; default 11), or with SPEC START STOP N")
    p.add_argument("--data", default=None, metavar="FILE",
                   help="demo model only (a SPEC names its own data): observed counts per bin (.npy, or text with "
                        "one number per bin); default: SM Asimov data")
    p.add_argument("--seed", type=int, default=0, help="random seed of the toys (default 0)")
    p.add_argument("--resume", action="store_true", help="continue the runs in --out, skipping finished chunks")
    p.add_argument("--shard", default=None, metavar="i/n",
                   help="demo model only: compute slice i of n (a job array: one process per slice), then --merge the folders")
    p.add_argument("--chunk", type=_positive_int, default=None, help="toy fits per stored chunk (default: by device)")
    p.add_argument("--merge", nargs="+", default=None, metavar="DIR",
                   help="demo model only: merge the --out folders of --shard processes into --out and report")
    p.set_defaults(func=_cmd_limits)
    p = sub.add_parser("injection", help="injection-recovery of eps_ee_L and mu_nu on Asimov data (paper Sec. VI.B)")
    _add_model_run_options(p, "figures")
    p.set_defaults(func=_cmd_injection)
    p = sub.add_parser("cache", help="size and location of the on-disk caches (model tensors, compiled programs, "
                                     "the analysis commands' stored results); --clear empties them")
    p.add_argument("--clear", action="store_true",
                   help="remove every cache entry and compiled program (other files in the folder stay)")
    p.add_argument("--stale", action="store_true",
                   help="with --clear: remove only entries of other nuejax code, data or environments")
    p.add_argument("--results", action="store_true",
                   help="with --clear: remove only the stage results that borexino, xenonnt, combine and run reuse "
                        "(kinds stage, stages), keeping model tensors and compiled programs")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_cmd_cache)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    gpu_settings()  # before JAX starts its backends, which read them once
    enable_x64()
    from .cache import REUSE_SWITCH, enable_compilation_cache, env_switch
    from .errors import InputError

    from ._internal.exported import programs_of_run

    # the programs this command's last run with these options called, loaded ahead (on disk)
    # (--recompute runs the same programs: it shares the index)
    options = {k: v for k, v in vars(args).items() if k not in ("func", "out", "recompute", "reuses_stages")}
    with contextlib.ExitStack() as run:
        try:  # before anything compiles: JAX decides once per process (nuejax.cache)
            env_switch(REUSE_SWITCH)  # a bad NUEJAX_REUSE (nuejax.analyses.reuse) is an error before any work
            enable_compilation_cache()
            stages = None
            if getattr(args, "reuses_stages", False):  # borexino, xenonnt, combine (nuejax.analyses.reuse)
                from .analyses.reuse import stages_of_run

                stages = run.enter_context(stages_of_run(args.command, options))
            # a run that will reuse every stage calls none of the stages' programs: none is loaded
            # ahead; one that reuses some adds the programs it calls to the last run's in the index
            if stages is None or not stages.all_stored or args.recompute:
                run.enter_context(programs_of_run(args.command, options,
                                                  merge=lambda: stages is not None and stages.reused > 0))
        except InputError as err:  # a bad NUEJAX_CACHE, NUEJAX_REUSE, NUEJAX_COMPILATION_CACHE, NUEJAX_EXPORTED or NUEJAX_AHEAD value
            print(f"nuejax: error: {err}", file=sys.stderr)
            return 2
        return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
