"""μ_ν limits of the XENONnT SR0 open data from toys (nuejax.analyses.xenonnt_run's constructions
at more toys): the one-sided Neyman construction with q̃ (CLs+b), CLs and Feldman–Cousins, the
expected band from background-only toys, binned (1-keV bins) and unbinned.

    python benchmarks/accuracy/xenonnt_mu_nu_toys.py [n_toys] [out.json] [chunk]

(``chunk``: toy fits per launch; on an 80-GB GPU 1024 fits, the default device chunk does not:
this model's response Hessian terms take about 20 MB per toy fit.)

docs/xenonnt.md records the output (GPU run: device, JAX version, date in the JSON).
"""
import json
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common
import common  # noqa: E402,F401  (puts the repository root on sys.path too)

import jax  # noqa: E402
import numpy as np  # noqa: E402

import nuejax  # noqa: E402


def main():
    nuejax.enable_x64()
    from nuejax.analyses.xenonnt import xenonnt_sr0_model
    from nuejax.analyses.xenonnt_run import MU_TEST
    from nuejax.inference import cls_upper_limit, feldman_cousins, profile_scan

    n_toys = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    chunk = int(sys.argv[3]) if len(sys.argv) > 3 else None
    out = {"n_toys": n_toys, "device": str(jax.devices()[0]), "jax": jax.__version__,
           "date": time.strftime("%Y-%m-%d"), "test_values": MU_TEST.tolist()}
    warnings.simplefilter("ignore")
    for unbinned in (False, True):
        tag = "unbinned" if unbinned else "binned"
        t0 = time.perf_counter()
        m, d = xenonnt_sr0_model(unbinned=unbinned)
        m = m.with_parameters(m.parameters.release("mu_nu"))
        r = {"build_s": time.perf_counter() - t0}
        t = time.perf_counter()
        s = profile_scan(m, d, "mu_nu", np.linspace(0, 1.5, 16))
        r["qtilde_profile_limit"] = s.upper_limit(0.9)
        r["profile_s"] = time.perf_counter() - t
        t = time.perf_counter()
        a = cls_upper_limit(m, d, "mu_nu", MU_TEST)
        r["asymptotic"] = {"cls": a.limit, "clsb": a.limit_sb, "expected_cls": a.expected, "expected_clsb": a.expected_sb}
        r["asymptotic_s"] = time.perf_counter() - t
        print(tag, json.dumps(r), flush=True)
        t = time.perf_counter()
        c = cls_upper_limit(m, d, "mu_nu", MU_TEST, n_toys=n_toys, key=0, chunk=chunk)
        r["toys"] = {"cls": c.limit, "clsb": c.limit_sb, "expected_cls": c.expected, "expected_clsb": c.expected_sb,
                     "clsb_values": c.clsb.tolist(), "cls_values": c.cls.tolist()}
        r["toys_s"] = time.perf_counter() - t
        print(tag, "toys", json.dumps(r["toys"]), f"{r['toys_s']:.1f} s", flush=True)
        if not unbinned:
            t = time.perf_counter()
            f = feldman_cousins(m, d, "mu_nu", np.concatenate([[0.0], MU_TEST]), n_toys, key=1, chunk=chunk)
            r["feldman_cousins"] = {"interval": list(f.interval), "regions": [list(x) for x in f.regions]}
            r["fc_s"] = time.perf_counter() - t
            print(tag, "fc", json.dumps(r["feldman_cousins"]), f"{r['fc_s']:.1f} s", flush=True)
        out[tag] = r
    path = Path(sys.argv[2]) if len(sys.argv) > 2 else None
    if path:
        path.write_text(json.dumps(out, indent=1, default=float))
    print(json.dumps(out, default=float))


if __name__ == "__main__":
    main()
