"""The mediator curves of XENONnT SR0 (both mediators on their fast path) with the solver launches
counted, run twice (the second warm), the curves saved as JSON:

    PYTHONPATH=<package checkout>:. python benchmarks/results/cpu2_2026-12-01_twentyeighth/mediator_launches.py OUT.json [N_MASSES]

(from the repository root; ``N_MASSES`` masses from 0.01 to 100 MeV, default 3). Run with the
package before and after a change to compare the curves and the launches.
"""
import json
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/: common
import common  # noqa: E402

import nuejax  # noqa: E402

nuejax.enable_x64()
import nuejax.cache  # noqa: E402

nuejax.cache.enable_compilation_cache()
import numpy as np  # noqa: E402

from nuejax.analyses.mediators import mediator_curves  # noqa: E402
from nuejax.analyses.xenonnt import xenonnt_sr0_model  # noqa: E402

print("nuejax from", nuejax.__file__, flush=True)
warnings.simplefilter("ignore")
xe, data = xenonnt_sr0_model(mediators=("zprime", "phi"), fast_mediators=True)
masses = np.logspace(-2, 2, int(sys.argv[2]) if len(sys.argv) > 2 else 3)
for rep in range(2):
    with common.timed_solver_launches() as timed:
        t0 = time.perf_counter()
        curves = mediator_curves(xe, np.asarray(data), masses, say=print)
        dt = time.perf_counter() - t0
    print(f"run {rep}: {dt:.2f} s, {len(timed)} launches, rows {[int(np.asarray(r.n_iter).size) for _, r in timed]}")
with open(sys.argv[1], "w") as f:
    json.dump(curves, f, indent=1)
