"""Per-call cost of the general case (general NSI, mediators, NSI in propagation, day-night)
against the flavour-diagonal model of the paper, on the same signals and binning.

  python benchmarks/timings/general_case.py --n-T 200 --json out.json

Cases (each: -2 ln L, and value + gradient over the free parameters):

* ``diagonal``: the default model's general path (the paper's physics, precomputed coefficients);
* ``general``: ``nsi="all"`` with both mediators, general path (the trace form per call);
* ``general+propagation``: also NSI in the Sun's matter potential;
* ``general+average``: day-night yearly average at Borexino's latitude (Earth crossing per call);
* ``fast_diagonal`` / ``fast_general``: the fast paths (17 and 164 folded templates).

Free: the model's defaults (flux normalisations, background rates), the oscillation parameters
sin2_theta12 and dm2_21 on the general paths, and eps_ee_L, eps_ee_R, mu_nu; the general models
also eps_etau_L_re, eps_etau_L_im, eps_emu_R_re, zprime_coupling, phi_coupling. Times: median of
``--n-calls`` calls after a warm-up call (run.py's statistics), first call (compilation) apart.
"""

from __future__ import annotations

import datetime
import json
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common, workload, run
import common  # noqa: E402  (puts the repository root on sys.path too)

SIGNALS = ("pp", "pep", "7Be_862", "7Be_384", "8B", "13N", "15O")
BACKGROUNDS = ("210Bi", "85Kr", "11C", "210Po")
POINT = dict(eps_ee_L=0.05, eps_ee_R=-0.03, mu_nu=2.0)
GENERAL_POINT = dict(eps_etau_L_re=0.05, eps_etau_L_im=0.02, eps_emu_R_re=-0.03, zprime_coupling=0.5,
                     phi_coupling=2.0)


def main(argv=None):
    ap = common.parser(__doc__)
    ap.add_argument("--n-T", type=int, default=200)
    ap.add_argument("--n-calls", type=int, default=30)
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    import nuejax

    nuejax.enable_x64()
    import jax

    from nuejax.model import FoldedPolynomial, borexino_like_model, fast_model, nll
    from common import call_stats_with_first as _stats

    kw = dict(n_T=a.n_T, signals=SIGNALS, backgrounds=BACKGROUNDS)
    t0 = time.perf_counter()
    models = {"diagonal": borexino_like_model(**kw)}
    t_build_diag = time.perf_counter() - t0
    t0 = time.perf_counter()
    gen_kw = dict(nsi="all", mediators=("zprime", "phi"))
    models["general"] = borexino_like_model(**kw, **gen_kw)
    t_build_gen = time.perf_counter() - t0
    models["general+propagation"] = borexino_like_model(**kw, **gen_kw, propagation_nsi=True)
    models["general+average"] = borexino_like_model(**kw, **gen_kw, day_night="average")
    osc = ("sin2_theta12", "dm2_21")
    out = {"device": str(jax.devices()[0]), "backend": jax.default_backend(), "jax": jax.__version__,
           "date": datetime.date.today().isoformat(), "host": platform.node(), "n_T": a.n_T, "signals": SIGNALS,
           "build_s": {"diagonal": t_build_diag, "general": t_build_gen}, "cases": {}}

    def case(name, fn, m, p, data):
        free = tuple(n for n in m.parameters.free_names)
        x = {n: p[n] for n in free}
        vg = jax.jit(jax.value_and_grad(lambda x, p, d: fn(m, {**p, **x}, d)))
        f = jax.jit(lambda p, d: fn(m, p, d))
        out["cases"][name] = dict(value=_stats(f, p, data, n=a.n_calls), value_grad=_stats(vg, x, p, data, n=a.n_calls),
                                  n_free=len(free))
        print(name, json.dumps(out["cases"][name]), flush=True)
        if a.json:  # after every case: a case that fails leaves the others on disk
            Path(a.json).write_text(json.dumps(out, indent=1))

    for name, m in models.items():
        extra = GENERAL_POINT if name != "diagonal" else {}
        m = m.with_parameters(m.parameters.release(*POINT, *extra, *osc))
        p = m.parameters.values(**POINT, **extra)
        case(name, nll, m, p, m.asimov(p))
        if name in ("diagonal", "general"):
            t0 = time.perf_counter()
            # the fast path bakes the oscillation parameters in: at their values, fixed
            fm = fast_model(m.with_parameters(m.parameters.fix(*osc)))
            out["build_s"]["fast_" + name] = time.perf_counter() - t0
            q = fm.parameters.values(**POINT, **extra)
            case("fast_" + name, nll, fm, q, fm.asimov(q))
            out["cases"]["fast_" + name]["n_templates"] = int(fm.stage(FoldedPolynomial).basis.shape[1])
            if a.json:
                Path(a.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
