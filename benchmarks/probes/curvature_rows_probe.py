"""The curvature term of the exact Hessian (``nuejax.inference.fitting.curvature_term``) one
non-linear parameter at a time (``by_direction=True``) against one ``vmap`` over one-hot tangents
(``False``), batched over R rows as the solver's launches run it, and the whole value, gradient and
Hessian (``value_grad_hessian``) both ways.

  OUT=DIR python benchmarks/probes/curvature_rows_probe.py [--rows 1,64,4096]   # DIR/curvature_rows.json

Problems: Phase-III NSI (ε^L_ee, ε^R_ee free; 19 fitted, 7 non-linear) and XENONnT's fast μ_ν
problem. Each function is jitted with the problem and the rows as arguments (no constants folded),
called once to compile, then timed over alternating repeats; both ways must give the same matrices.
Written for a GPU, where ``curvature_term`` keeps the ``vmap`` until this is measured
(docs/inference.md); on the CPU the rows run one at a time (``over_rows``), so R=1 is the CPU's case.
"""
import argparse, functools, json, os, time, warnings
import numpy as np
import nuejax; nuejax.enable_x64()
import nuejax.cache; nuejax.cache.enable_compilation_cache()
import jax
import jax.numpy as jnp
from nuejax.inference import fitting as F
from nuejax.inference.problem import FitProblem, Pins

warnings.simplefilter("ignore")
ap = argparse.ArgumentParser()
ap.add_argument("--rows", default="1,64,4096")
ap.add_argument("--repeats", type=int, default=3)
ap.add_argument("--calls", type=int, default=20)
a = ap.parse_args()


def problems():
    from nuejax.analyses.borexino import Phase3Choices, borexino_phase3_model, sm_rates, ssm_constrained
    from nuejax.analyses.xenonnt import xenonnt_sr0_model
    from nuejax.model.fast import fast_model
    model, data, _ = borexino_phase3_model(Phase3Choices())
    yield "phase3_nsi", FitProblem.create(ssm_constrained(model, sm_rates()).release("eps_ee_L", "eps_ee_R"),
                                          np.asarray(data.counts))
    m, counts = xenonnt_sr0_model()
    yield "xenonnt_mu", FitProblem.create(fast_model(m).release("mu_nu"), counts)


def timed(f, *args):
    jax.block_until_ready(f(*args))
    t = time.perf_counter()
    for _ in range(a.calls):
        o = f(*args)
    jax.block_until_ready(o)
    return (time.perf_counter() - t) / a.calls


out = {"device": jax.devices()[0].device_kind, "backend": jax.default_backend(), "jax": jax.__version__,
       "date": time.strftime("%Y-%m-%d"), "calls": a.calls, "results": []}
for name, s in problems():
    d = len(s.names)
    x1 = np.asarray(s.start(), dtype=float)
    for R in (int(v) for v in a.rows.split(",")):
        rng = np.random.default_rng(0)
        X = jnp.asarray(x1[None] * (1 + 0.01 * rng.standard_normal((R, d))))
        fixed = Pins(jnp.zeros((R, d), bool), jnp.zeros((R, d)))
        rows = {}
        for way in (False, True):
            def curv(s, fixed, X, way=way):
                def one(x, f):
                    r = F.gauss_newton_terms(x, (s, f))[3]
                    return F.curvature_term(x, (s, f), r, by_direction=way)
                return jax.vmap(one)(X, fixed)

            def vgh(s, fixed, X, way=way):
                orig = F.curvature_term
                F.curvature_term = functools.partial(orig, by_direction=way)  # read while tracing only
                try:
                    return jax.vmap(lambda x, f: F.value_grad_hessian(x, (s, f)))(X, fixed)
                finally:
                    F.curvature_term = orig
            rows[way] = (jax.jit(curv), jax.jit(vgh))
        t0 = time.perf_counter(); A = np.asarray(rows[False][0](s, fixed, X)); c0 = time.perf_counter() - t0
        t0 = time.perf_counter(); B = np.asarray(rows[True][0](s, fixed, X)); c1 = time.perf_counter() - t0
        t0 = time.perf_counter(); HA = np.asarray(rows[False][1](s, fixed, X)[2]); c2 = time.perf_counter() - t0
        t0 = time.perf_counter(); HB = np.asarray(rows[True][1](s, fixed, X)[2]); c3 = time.perf_counter() - t0
        rec = {"problem": name, "rows": R, "d": d, "compile_s": {"curv_vmap": c0, "curv_split": c1, "vgh_vmap": c2,
                                                                "vgh_split": c3},
               "max_rel_diff": float(np.max(np.abs(A - B)) / np.max(np.abs(A))),
               "max_rel_diff_hessian": float(np.max(np.abs(HA - HB)) / np.max(np.abs(HA))),
               "ms": {"curv_vmap": [], "curv_split": [], "vgh_vmap": [], "vgh_split": []}}
        for _ in range(a.repeats):
            for way, tag in ((False, "vmap"), (True, "split")):
                rec["ms"]["curv_" + tag].append(1e3 * timed(rows[way][0], s, fixed, X))
                rec["ms"]["vgh_" + tag].append(1e3 * timed(rows[way][1], s, fixed, X))
        print(json.dumps(rec), flush=True)
        out["results"].append(rec)
if os.environ.get("OUT"):
    json.dump(out, open(os.path.join(os.environ["OUT"], "curvature_rows.json"), "w"), indent=1)
