"""The Feldman–Cousins case that hung on four virtual CPU devices (issue of 2026-11-25): a 1-D
construction of μ_ν on the fast path of a three-signal, four-background Borexino-like model
(n_T = 100, 7 grid points, 64 toys per point). Prints one JSON line: devices, seconds, interval.

    XLA_FLAGS=--xla_force_host_platform_device_count=4 JAX_PLATFORMS=cpu timeout 300 \\
        python benchmarks/repro/fc_multidevice.py

tests/test_multidevice.py runs it on 1, 2 and 4 devices in subprocesses with a time limit.
"""
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

import jax  # noqa: E402
import numpy as np  # noqa: E402

import nuejax  # noqa: E402


def main():
    nuejax.enable_x64()
    # as the commands do: a repeated run with the same number of devices loads its programs (runs
    # on 1, 2 and 4 devices share none: JAX's key holds the device topology)
    from nuejax.cache import enable_compilation_cache

    enable_compilation_cache()
    from nuejax.inference import feldman_cousins
    from nuejax.inference.runner import fingerprint
    from nuejax.model import borexino_like_model, fast_model

    t0 = time.perf_counter()
    m = borexino_like_model(n_T=100, signals=("pp", "7Be_862", "pep"), backgrounds=("210Bi", "85Kr", "11C", "ext_40K"))
    m = fast_model(m.with_parameters(m.parameters.release("mu_nu")))
    data = np.round(np.asarray(m.expected(m.parameters.values(mu_nu=1.0))))
    digest = fingerprint(m)  # its arrays and tree structure
    t1 = time.perf_counter()
    r = feldman_cousins(m, data, "mu_nu", np.linspace(0.0, 3.0, 7), 64, key=0)
    out = {"devices": len(jax.devices()), "build_s": t1 - t0, "fc_s": time.perf_counter() - t1,
           "interval": [None if v is None else float(v) for v in r.interval], "t_crit": np.asarray(r.t_crit).tolist(),
           "model_digest": digest}
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
