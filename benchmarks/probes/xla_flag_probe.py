"""Per-call time of the general-path -2 ln L (value, value + gradient) under the XLA_FLAGS of this process.

  XLA_FLAGS="..." python benchmarks/probes/xla_flag_probe.py LABEL

Used to test GPU command buffers (CUDA graphs) against launch gaps; prints one JSON line.
"""
import sys, json, jax
from pathlib import Path
jax.config.update("jax_enable_x64", True)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common, workload, run
import common  # noqa: E402,F401  (puts the repository root on sys.path too)
import workload
from common import call_stats as _stats
model = workload.build(**workload.PAPER_DIMS)
p = model.parameters.values(eps_ee_L=0.05, mu_nu=3.0)
free = model.parameters.free_names
data = model.asimov(p)
fixed = {k: v for k, v in p.items() if k not in free}
pf = {k: p[k] for k in free}
nll = lambda m, pf: m.nll({**fixed, **pf}, data)
vg = jax.jit(jax.value_and_grad(nll, argnums=1)); v = jax.jit(nll)
print(json.dumps({"flags": sys.argv[1] if len(sys.argv) > 1 else "", "value": _stats(v, model, pf, n=100)["median_ms"],
                  "value_and_grad": _stats(vg, model, pf, n=100)["median_ms"]}), flush=True)
