"""Time a Feldman–Cousins construction of μ_ν from a fresh process: the first one (compiling
its programs) and larger ones after it (warm), on the three-signal fast-path model of
benchmarks/repro/fc_multidevice.py (n_T = 100, 7 grid points).

Run with fresh caches to see compilation (``NUEJAX_CACHE_DIR=$(mktemp -d)``):
    python benchmarks/timings/fc_first_run.py [--toys 64,600,600] [--json out.json]
Prints one JSON line per construction: toys per point, seconds, interval, first critical value.
"""

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common
import common  # noqa: E402  (puts the repository root on sys.path too)


def main(argv=None):
    ap = common.parser(__doc__.splitlines()[0])
    ap.add_argument("--toys", default="64,600,600", help="toys per grid point of each construction, in order")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)

    import jax
    import numpy as np

    import nuejax

    nuejax.enable_x64()
    from nuejax.inference import feldman_cousins
    from nuejax.model import borexino_like_model, fast_model

    t0 = time.perf_counter()
    m = borexino_like_model(n_T=100, signals=("pp", "7Be_862", "pep"), backgrounds=("210Bi", "85Kr", "11C", "ext_40K"))
    m = fast_model(m.with_parameters(m.parameters.release("mu_nu")))
    data = np.round(np.asarray(m.expected(m.parameters.values(mu_nu=1.0))))
    rows = [{"stage": "model", "s": time.perf_counter() - t0}]
    print(json.dumps(rows[-1]), flush=True)
    for n in (int(v) for v in a.toys.split(",")):
        t = time.perf_counter()
        r = feldman_cousins(m, data, "mu_nu", np.linspace(0.0, 3.0, 7), n, key=1)
        rows.append({"stage": "feldman_cousins", "toys": n, "s": time.perf_counter() - t,
                     "interval": [None if v is None else float(v) for v in r.interval], "t_crit0": float(r.t_crit[0])})
        print(json.dumps(rows[-1]), flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps({"device": jax.devices()[0].device_kind, "jax": jax.__version__,
                                            "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
