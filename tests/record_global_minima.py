"""Record the brute-force global minima of Poisson toys of the general-NSI model of
tests/test_global_minima.py into tests/data/global_minima_reference.json (the toys' counts and
auxiliary measurements, each toy's lowest minimum, its location and the distinct minima found).

    python tests/record_global_minima.py [--toys 100] [--starts 64]

The search is tests/brute_force.py (scipy L-BFGS-B from many random starts, polished; nothing of
nuejax's solver or start design). It takes about 10 s per toy on 2 CPU cores, so the slow test
reads the recorded reference and checks a few toys against a live search.
"""
import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
OUT = HERE / "data" / "global_minima_reference.json"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--toys", type=int, default=100)
    ap.add_argument("--starts", type=int, default=64)
    ap.add_argument("--out", default=str(OUT))
    a = ap.parse_args()

    import nuejax

    nuejax.enable_x64()
    import jax
    import numpy as np

    from brute_force import Objective, brute_force
    from test_global_minima import _n_minima, _row, _toys, build_model

    t0 = time.time()
    m = build_model()
    counts, aux, truth = _toys(m, a.toys)
    names = m.parameters.free_names
    obj = Objective(m, names, truth)
    poi = [names.index("eps_ee_L"), names.index("eps_etau_L_re")]
    x_truth = np.array([truth[k] for k in names])
    rows = []
    for i in range(a.toys):
        obj.bind(counts[i], _row(aux, i))
        f, x, funs = brute_force(obj, x_truth, poi, n_starts=a.starts, seed=i)
        ends = np.unique(np.round(funs[funs < f + 50], 2))
        rows.append({"fval": f, "x": [float(v) for v in x], "distinct_end_values": [float(v) for v in ends]})
        print(i, round(f, 4), np.round(x[poi], 3), "minima", _n_minima(funs, f), flush=True)
    leaves = [np.asarray(v).tolist() for v in jax.tree_util.tree_leaves(aux)]
    Path(a.out).write_text(json.dumps({
        "what": "brute-force global minima of Poisson toys (tests/record_global_minima.py)",
        "truth": {k: float(v) for k, v in truth.items() if k in ("eps_ee_L", "eps_etau_L_re")},
        "names": list(names), "starts": a.starts, "jax": jax.__version__, "date": time.strftime("%Y-%m-%d"),
        "seconds": time.time() - t0, "counts": np.asarray(counts).tolist(), "aux_leaves": leaves, "toys": rows}))
    print("wrote", a.out, round(time.time() - t0), "s")


if __name__ == "__main__":
    main()
