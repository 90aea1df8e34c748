"""XLA's cost analysis of one row's value, gradient and Hessian (``nuejax.inference.fitting._row_cost``,
what ``cheap_rows`` reads) for the problems of ``nuejax xenonnt`` (μ_ν, ε, the mediators), and
whether ``cheap_rows`` finds them cheap (``ACCELERATOR_ROW_BYTES``), on the machine it runs on.

  OUT=DIR python benchmarks/probes/row_cost_probe.py     # writes DIR/row_cost.json

Written for a GPU (is the rule's answer there the CPU's?); on 2 CPU cores (2026-11-30) the three
problems move 4.2e8-4.7e8 bytes: cheap. On one H200 (2026-11-30) it read no cost at all at fe54a4f
(JAX returns None for a GPU's lowering: nothing cheap), and the CPU's bytes once ``_row_cost``
lowered for the host's CPU device (benchmarks/results/h200_2026-11-30_twentysecond/).
"""
import json, os, time
import numpy as np
import nuejax; nuejax.enable_x64()
import jax
from nuejax.analyses.xenonnt import xenonnt_sr0_model
from nuejax.analyses.mediators import mediator_model
from nuejax.model.fast import fast_model
from nuejax.inference import fitting as F
from nuejax.inference.problem import FitProblem, Pins
out = {"device": jax.devices()[0].device_kind, "jax": jax.__version__, "threshold": F.ACCELERATOR_ROW_BYTES}
m, data = xenonnt_sr0_model(); m = fast_model(m)
mm, _ = xenonnt_sr0_model(mediators=("zprime", "phi"), fast_mediators=True)
probs = {"mu": FitProblem.create(m.release("mu_nu"), data),
         "eps": FitProblem.create(m.release("eps_ee_L", "eps_ee_R"), data),
         "mediators": FitProblem.create(mediator_model(mm), data).full()}
for k, s in probs.items():
    d = len(s.names)
    fixed = Pins(np.zeros(d, bool), np.zeros(d))
    t = time.perf_counter()
    cost = F._row_cost("vgh", s, fixed, np.asarray(s.start()))
    out[k] = {"cost": {a: float(b) for a, b in cost.items()}, "cheap": bool(F.cheap_rows(s, fixed, np.asarray(s.start()))),
              "d": d, "seconds": time.perf_counter() - t}
    print(k, out[k], flush=True)
json.dump(out, open(os.path.join(os.environ["OUT"], "row_cost.json"), "w"), indent=1)
