"""Where the time of one general-path call goes: the paper workload split into its stages.

  python benchmarks/timings/profile_general.py [--quick] [--out FILE]

Times (median of 30 calls after warm-up, ms) of the value and of value + gradient (reverse mode
with respect to all parameters) of each stage on its own:
  p_ee    the oscillated source tables λ(E) P_eα(E) of all components (production-zone average);
  spectra the recoil spectra f_T of all signals (tables, node interpolation, cross-section contraction);
  fold    the fold of the spectra through the kernels (one matrix-vector product, gradient w.r.t. f);
  nll     the whole -2 ln L.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common, workload, run
import common  # noqa: E402  (puts the repository root on sys.path too)


def main(argv=None):
    ap = common.parser(__doc__)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    import workload
    from common import call_stats as _stats

    from nuejax.model import KernelFold, SolarSignals, osc_from_params
    from nuejax.model import nll as model_nll
    from nuejax.physics.oscillation import flavour_probabilities

    model = workload.build(**(workload.QUICK_DIMS if args.quick else workload.PAPER_DIMS))
    p = model.parameters.values(eps_ee_L=0.05, mu_nu=3.0)
    data = model.asimov(p)

    def p_ee(m, p):
        osc = osc_from_params(p)
        return sum(jnp.sum(jax.vmap(lambda e, w, prof: w[:, None] * flavour_probabilities(e, osc, prof))(
            g.energies, g.weights, g.profile)) for g in m.stage(SolarSignals).groups)

    def spectra(m, p):  # the signal stage: recoil spectra of all signals
        return jnp.sum(jnp.stack(m.stage(SolarSignals)(p)))

    F = jnp.stack(model.stage(SolarSignals)(p))
    r = jnp.ones(model.n_obs, dtype=F.dtype)

    def fold(m, F):  # the model's route: blocks of the kernels on the CPU, one dense product elsewhere
        kf = m.stage(KernelFold)
        if kf.kernel_blocks is not None:
            return kf.kernel_blocks.fold(list(F)) @ r
        return (F.reshape(-1) @ kf.kernels.reshape(-1, m.n_obs)) @ r

    def nll(m, p):
        return model_nll(m, p, data)

    def timed(fn, *a):
        return _stats(fn, *a, n=30)["median_ms"]

    out = {"device": str(jax.devices()[0].device_kind), "jax_version": jax.__version__,
           "date": time.strftime("%Y-%m-%d"), "dims": workload.dims(model),
           "fold_route": "kernel blocks" if model.stage(KernelFold).kernel_blocks is not None else "dense", "ms": {}}
    for name, fn, arg in (("p_ee", p_ee, p), ("spectra", spectra, p), ("fold", fold, F), ("nll", nll, p)):
        out["ms"][name] = {"value": timed(jax.jit(fn), model, arg),
                           "value_and_grad": timed(jax.jit(jax.value_and_grad(fn, argnums=1)), model, arg)}
    text = json.dumps(out, indent=2)
    if args.out:
        Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
