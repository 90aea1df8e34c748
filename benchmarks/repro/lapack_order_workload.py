"""A small workload that compiles every kind of program holding the bound-constrained solver: a
multi-start ``batch_fit`` of toys, a profile scan, and the toy fits of a Feldman–Cousins
construction (one model: two solar signals, two backgrounds, μ_ν released, 30 recoil bins).

tests/test_no_hang.py runs it with ``XLA_FLAGS=--xla_dump_to=DIR --xla_dump_hlo_as_text`` and
checks every optimised program in DIR: the LAPACK calls (batched eigh and Cholesky) must depend
on one another, never run side by side, the pattern of the XLA:CPU hang in
benchmarks/repro/xla_cpu_hang_repro.py (docs/inference.md, "Known issue").

    python benchmarks/repro/lapack_order_workload.py
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

import jax  # noqa: E402
import numpy as np  # noqa: E402

import nuejax  # noqa: E402


def main():
    nuejax.enable_x64()
    from nuejax.inference import batch_fit, feldman_cousins, profile_scan
    from nuejax.model import borexino_like_model

    m = borexino_like_model(n_T=30, signals=("pp", "7Be_862"), backgrounds=("210Bi", "85Kr"))
    m = m.with_parameters(m.parameters.release("mu_nu"))
    p = m.parameters.values(mu_nu=1.0)
    counts, aux = jax.vmap(lambda k: m.draw_toy(k, p))(jax.random.split(jax.random.PRNGKey(0), 4))
    b = batch_fit(m, np.asarray(counts), aux=aux, starts=3)
    data = np.asarray(counts[0])
    s = profile_scan(m, data, "mu_nu", np.linspace(0.0, 3.0, 4))
    fc = feldman_cousins(m, data, "mu_nu", np.linspace(0.0, 3.0, 3), 16, key=0)
    print(int(np.sum(b.converged)), float(np.min(s.nll)), fc.interval)


if __name__ == "__main__":
    main()
