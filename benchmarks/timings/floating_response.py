"""Per-call cost of a floating detector response against the fixed-response model.

  python benchmarks/timings/floating_response.py --n-T 100 --window 150 350 --signals small --json out.json
  python benchmarks/timings/floating_response.py --n-T 2000 --signals all --json gpu.json   # the default model

Cases (each: one -2 ln L call, and one value + gradient over the model's free parameters):

* ``fixed_general``: :func:`nuejax.model.nll` of the general path (the ``borexino_like_model``,
  kernels fixed at build time, oscillation parameters free);
* ``fixed_general+transform``: its expectation through the ResponseTransform below (the
  counterpart of the floating ``+transform`` cases: the same transform stage on a fixed response);
* ``fixed_fast``: the fast path (``fast_model``: folded basis templates);
* ``fixed_fast+transform``: the fast path's expectation through a ResponseTransform (scale, offset,
  extra resolution floating): ``transform(p, expected(fm, p))`` plus ``fm.constraint_nll(p)`` (the
  transform is linear and the builder's mask is all ones, so applying it after the exposure is the same);
* ``floating_general`` / ``floating_fast``: :mod:`nuejax.model.floating`, the analytic
  T -> N_p kernel recomputed in every call from ``light_yield``, ``kB``, ``var_const``, ``var_rel``
  (all four free), by the default grid fold (:mod:`nuejax.detector.mean_grid`);
* ``floating_general_exact``: the same with ``fold="exact"`` (one Gaussian integral per node
  and edge), for comparison;
* ``floating_general+transform`` / ``floating_fast+transform``: the same followed by the transform.

Free in every case: the model's defaults (flux normalisations, background rates) plus
``eps_ee_L``, ``eps_ee_R``, ``mu_nu``; the general fixed and floating models also
``sin2_theta12`` and ``dm2_21`` (the fast ones bake the oscillations in). Evaluated at a non-SM
point with a non-nominal response (gradients at zero extra resolution are degenerate).

Times: median (and 16th-84th percentile) of ``--n-calls`` (>= 20) calls after a warm-up call,
each ended by ``jax.block_until_ready``; compile time (first call) reported apart. float64.
No iminuit/uproot imports (the GPU machine lacks them).
"""

from __future__ import annotations

import datetime
import functools
import json
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common, workload, run
import common  # noqa: E402  (puts the repository root on sys.path too)
from common import call_stats_with_first as _stats  # noqa: E402  (run.py's statistics + the first call)

SMALL_SIGNALS = ("7Be_862", "pep", "13N")
SMALL_BACKGROUNDS = ("210Bi", "85Kr")
RESPONSE_POINT = dict(light_yield=510.0, kB=0.0115, var_const=5.0, var_rel=0.01)
TRANSFORM_POINT = dict(e_scale=1.01, e_offset=1.0, e_res_a=0.5)
PHYSICS_POINT = dict(eps_ee_L=0.05, eps_ee_R=-0.03, mu_nu=2.0)


def _objective(kind):
    """-2 ln L of a model of ``kind`` as a function of (x, model, base, data), names static."""
    from nuejax.model import expected, nll
    from nuejax.model.likelihood import poisson_nll

    def unpack(base, names, x):
        p = dict(base)
        for i, n in enumerate(names):
            p[n] = x[i]
        return p

    if kind in ("fixed_general+transform", "fixed_fast+transform"):
        def f(model, p, data):
            m, tr = model  # constraint_nll: the fast path's terms on its baked oscillations included
            return poisson_nll(tr(p, expected(m, p)), data) + m.constraint_nll(p)
    else:  # fixed_general, fixed_fast and the floating models: the model's own -2 ln L
        f = lambda model, p, data: nll(model, p, data)  # noqa: E731

    def objective(x, model, base, data, *, names):
        return f(model, unpack(base, names, x), data)

    return objective


def run(n_T: int, window, signals: str, n_calls: int, log=print) -> dict:
    import jax
    import jax.numpy as jnp
    import numpy as np

    import nuejax

    nuejax.enable_x64()
    from nuejax.detector.transforms import ResponseTransform
    from nuejax.model import AddTemplates, FloatingFold, borexino_like_model, expected, fast_model
    from nuejax.model.floating import floating_response_model, transform_parameters
    from nuejax.model.parameters import ParameterSet

    kw = {} if signals == "all" else dict(signals=SMALL_SIGNALS, backgrounds=SMALL_BACKGROUNDS)
    t0 = time.perf_counter()
    base = borexino_like_model(n_T=n_T, window=tuple(window), **kw)
    base = base.with_parameters(base.parameters.release(*PHYSICS_POINT, "sin2_theta12", "dm2_21"))
    build = {"fixed_general_s": time.perf_counter() - t0}
    # the fast paths bake the oscillation parameters in: at their values, fixed
    base_osc_fixed = base.with_parameters(base.parameters.fix("sin2_theta12", "dm2_21"))
    t0 = time.perf_counter()
    fm = fast_model(base_osc_fixed)
    build["fixed_fast_s"] = time.perf_counter() - t0
    edges = np.asarray(base.obs_edges)
    k = max(1, (edges.size - 1) // 20)  # output bins: the input bins less 5 % on each side
    tr = ResponseTransform.create(edges, edges[k:-k], scale="e_scale", offset="e_offset", res_a="e_res_a")
    models = {}
    for fast in (False, True):
        for with_tr in (False, True):
            name = "floating_" + ("fast" if fast else "general") + ("+transform" if with_tr else "")
            t0 = time.perf_counter()
            models[name] = floating_response_model(base_osc_fixed if fast else base, fast=fast,
                                                   transform=tr if with_tr else None)
            build[name + "_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    models["floating_general_exact"] = floating_response_model(base, fast=False, fold="exact")
    build["floating_general_exact_s"] = time.perf_counter() - t0
    tr_params = ParameterSet(fm.parameters.parameters + transform_parameters(tr))
    tr_general = ParameterSet(base.parameters.parameters + transform_parameters(tr))
    cases = {"fixed_general": (base, base.parameters), "fixed_general+transform": ((base, tr), tr_general),
             "fixed_fast": (fm, fm.parameters), "fixed_fast+transform": ((fm, tr), tr_params)}
    cases.update({n: (m, m.parameters) for n, m in models.items()})

    point = {**PHYSICS_POINT, **RESPONSE_POINT, **TRANSFORM_POINT}
    out = {}
    for name, (model, ps) in cases.items():
        p = ps.values({k: v for k, v in point.items() if k in ps})
        if name in ("fixed_general+transform", "fixed_fast+transform"):
            mu = model[1](p, expected(model[0], p))
        else:
            mu = model.expected(p)
        data = jnp.asarray(np.asarray(mu))  # Asimov at the point
        names = ps.free_names
        x = jnp.stack([p[n] for n in names])
        obj = functools.partial(_objective(name), names=names)
        value = jax.jit(obj)
        vgrad = jax.jit(jax.value_and_grad(obj))
        r = {"n_free": len(names), "n_obs": int(np.size(mu)),
             "value": _stats(value, x, model, p, data, n=n_calls),
             "value_and_grad": _stats(vgrad, x, model, p, data, n=n_calls)}
        g = np.asarray(vgrad(x, model, p, data)[1])
        r["grad_finite"] = bool(np.all(np.isfinite(g)))
        out[name] = r
        v, vg = r["value"]["median_ms"], r["value_and_grad"]["median_ms"]
        log(f"{name:<28} value {v:9.3f} ms   value+grad {vg:9.3f} ms   ({len(names)} free, {r['n_obs']} bins)")
    fl = models["floating_general"].stage(FloatingFold)
    dims = {"n_sig": len(base.signals), "n_T": n_T, "n_obs": base.n_obs, "n_nodes": int(np.prod(fl.nodes.shape)),
            "grid_points": int(fl.grid.size),
            "n_bkg": len(base.stage(AddTemplates).names), "signals": list(base.signal_names), "window": list(window)}
    return {"dims": dims, "build": build, "cases": out}


def main(argv=None):
    ap = common.parser(__doc__)
    ap.add_argument("--n-T", type=int, default=100, help="recoil bins per signal")
    ap.add_argument("--window", type=float, nargs=2, default=(150, 350), metavar=("LO", "HI"),
                    help="lowest and highest N_p bin centre (unit bins)")
    ap.add_argument("--signals", choices=("all", "small"), default="small",
                    help="all: the default model's 9 spectra and 8 backgrounds; "
                         "small: 7Be_862, pep, 13N and 2 backgrounds")
    ap.add_argument("--n-calls", type=int, default=30, help="timed calls per case (>= 20)")
    ap.add_argument("--json", default=None, help="write the numbers to this file")
    a = ap.parse_args(argv)
    if a.n_calls < 20:
        ap.error("--n-calls must be >= 20")
    import jax

    res = run(a.n_T, a.window, a.signals, a.n_calls)
    dev = jax.devices()[0]
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    res["meta"] = {"device": f"{dev.platform}: {getattr(dev, 'device_kind', '')}", "n_devices": jax.device_count(),
                   "jax": jax.__version__, "jaxlib": __import__("jaxlib").__version__,
                   "python": platform.python_version(), "host": platform.node(), "date": now,
                   "dtype": "float64", "argv": sys.argv[1:] if argv is None else list(argv),
                   "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
                   "cpu_count": os.cpu_count()}
    print(f"device {res['meta']['device']}, jax {jax.__version__}")
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=1))
        print(f"wrote {a.json}")
    return res


if __name__ == "__main__":
    main()
