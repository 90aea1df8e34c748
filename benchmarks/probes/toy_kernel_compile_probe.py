"""Compile time, memory and run time of one launch of the toy-fit kernel of `nuejax xenonnt`'s
mu_nu construction (the XENONnT SR0 model's fast path, mu_nu released: 9 fitted parameters), at
a given number of rows, with XLA's flags as the environment sets them.

  python benchmarks/probes/toy_kernel_compile_probe.py ROWS [ROWS ...] > out.json

Each row is one toy drawn at the default parameters and fitted from them (the first pass of the
toys' passes: 10 Newton iterations at most). Prints one JSON line per row count: compile seconds,
XLA's memory analysis (temporary bytes per launch and per row), the launch's run time (second
call), the device and ``XLA_FLAGS``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

import nuejax
from nuejax.analyses.xenonnt import xenonnt_sr0_model
from nuejax.inference.construction import construction
from nuejax.inference.toys import compiled_toy_fits, draw_parts
from nuejax.model.fast import fast_model


def main(argv):
    nuejax.enable_x64()
    model, data = xenonnt_sr0_model()
    model = fast_model(model)
    model = model.with_parameters(model.parameters.release("mu_nu"))
    pr = construction(model, data, "mu_nu", None, None)
    full = pr.full
    shell = dataclasses.replace(full, data=None, aux_flat=None)
    truth = model.parameters.defaults()
    x = np.array([float(truth[n]) for n in full.names])
    d = len(x)
    parts = draw_parts(full, x[None])
    kernel = compiled_toy_fits(10, 1e-8, parts, pr.resample)
    for rows in (int(a) for a in argv):
        args = (shell, jnp.asarray(np.repeat(x[None], rows, 0)), jnp.asarray(np.repeat(x[None], rows, 0)),
                jnp.asarray(np.repeat(x[None], rows, 0)), jnp.zeros((rows, d), bool),
                jnp.arange(rows, dtype=jnp.uint32), jnp.zeros(2, jnp.uint32))
        t = time.perf_counter()
        compiled = getattr(kernel, "__wrapped__", kernel).lower(*args).compile()  # the jitted kernel
        t_compile = time.perf_counter() - t
        m = compiled.memory_analysis()
        jax.block_until_ready(compiled(*args))
        t = time.perf_counter()
        jax.block_until_ready(compiled(*args))
        t_run = time.perf_counter() - t
        print(json.dumps({"rows": rows, "compile_s": t_compile, "run_s": t_run,
                          "temp_bytes": m.temp_size_in_bytes, "temp_bytes_per_row": m.temp_size_in_bytes / rows,
                          "device": jax.devices()[0].device_kind, "jax": jax.__version__,
                          "xla_flags": os.environ.get("XLA_FLAGS", "")}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
