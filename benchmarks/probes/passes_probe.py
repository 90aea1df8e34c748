"""The toy fits' passes (``nuejax.inference.toys.PASSES``) measured against one uncapped pass on
the model of `nuejax xenonnt`'s mu_nu constructions (the XENONnT SR0 model's fast path, mu_nu
released): for each number of rows, ``toy_fits`` with the accelerators' passes (a first pass
capped at 10 iterations over every row, then launches of 1/8 of the rows for those still
running: two compiled programs per kernel) and with the CPU's (every row uncapped in one launch:
one program, the 1/8 launches compiled only where a fit reaches ``max_iter``; ``CPU_PASSES``).
On an accelerator the package fits a run of at most ``toys.ONE_PASS_ROWS`` toys in one pass.

    python benchmarks/probes/passes_probe.py ROWS [ROWS ...] > out.jsonl

One JSON line per (scheme, rows): the first call's seconds (tracing and compiling its programs;
compiled programs dropped before each scheme's first call), the best of two warm calls, the
programs compiled, and the largest difference of t and of the global minimum from the first
scheme's fits of the same toys. The toys are drawn at mu_nu spread over [0, 1.2] (units of the
model's parameter), the other parameters at their defaults, each tested at its generating value.
Keep NUEJAX_EXPORTED=0 (or an empty NUEJAX_CACHE_DIR) for compile times that are not loads.
"""

from __future__ import annotations

import json
import logging
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

import nuejax
import nuejax.inference.toys as toys
from nuejax.analyses.xenonnt import xenonnt_sr0_model
from nuejax.inference.construction import construction
from nuejax.inference.toys import draw_parts, toy_fits
from nuejax.model.fast import fast_model

SCHEMES = {"accelerator_passes": toys.PASSES, "one_uncapped_pass": toys.CPU_PASSES}


def main(argv):
    nuejax.enable_x64()
    compiled = []

    class Count(logging.Handler):
        def emit(self, record):
            if "Finished XLA compilation" in record.getMessage():
                compiled.append(record.getMessage())

    for name in ("jax._src.interpreters.pxla", "jax._src.dispatch", "jax._src.compiler"):
        logging.getLogger(name).addHandler(Count())
        logging.getLogger(name).setLevel(logging.DEBUG)
    model, data = xenonnt_sr0_model()
    model = fast_model(model)
    model = model.with_parameters(model.parameters.release("mu_nu"))
    pr = construction(model, data, "mu_nu", None, None)
    full = pr.full
    truth = model.parameters.defaults()
    x = np.array([float(truth[n]) for n in full.names])
    i_mu = list(full.names).index("mu_nu")
    parts = draw_parts(full, x[None])
    key = jnp.asarray(jax.random.key_data(jax.random.key(7)))
    for rows in (int(a) for a in argv):
        gen = np.repeat(x[None], rows, 0)
        gen[:, i_mu] = np.linspace(0.0, 1.2, rows)
        args = (jnp.asarray(gen), jnp.asarray(gen[:, [i_mu]]), jnp.arange(rows, dtype=jnp.uint32))
        ref = None
        for scheme, sch in SCHEMES.items():
            jax.clear_caches()
            toys.compiled_toy_fits.cache_clear()
            jax.config.update("jax_log_compiles", True)
            n0 = len(compiled)
            t = time.perf_counter()
            out = toy_fits(full, key, *args, k=1, max_iter=100, one_sided=True, parts=parts, resample=pr.resample,
                           scheme=sch)
            first = time.perf_counter() - t
            n_prog = len(compiled) - n0
            jax.config.update("jax_log_compiles", False)
            warm = []
            for _ in range(2):
                t = time.perf_counter()
                toy_fits(full, key, *args, k=1, max_iter=100, one_sided=True, parts=parts, resample=pr.resample,
                         scheme=sch)
                warm.append(time.perf_counter() - t)
            line = {"scheme": scheme, "rows": rows, "first_s": first, "warm_s": min(warm), "programs": n_prog,
                    "converged": int(np.sum(out["conv_global"] & out["conv_cond"])),
                    "device": jax.devices()[0].device_kind, "jax": jax.__version__}
            if ref is None:
                ref = out
            else:
                line["max_dt"] = float(np.max(np.abs(out["t"] - ref["t"])))
                line["max_df_global"] = float(np.max(np.abs(out["f_global"] - ref["f_global"])))
            print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
