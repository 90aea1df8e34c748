"""Time the night-time density matrix (Earth crossing, nuejax.physics.earth.night_density_matrix)
of one continuous spectrum: value, and value with its gradient in sin²θ12, each compiled once and
then timed warm (the best of ``--repeat`` calls).

    python benchmarks/timings/earth_crossing.py --energies 1000 --json out.json

Defaults: 1000 energies of ¹³N's range (0-1.7 MeV) at Borexino's latitude (95 chords of up to 251
Magnus steps). Prints one JSON line (device, JAX version, times, the values) and writes it to
``--json`` if given. benchmarks/NOTES.md has the measurements ("Earth crossing").
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import nuejax  # noqa: E402


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--energies", type=int, default=1000)
    ap.add_argument("--latitude", default="borexino")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    nuejax.enable_x64()
    from nuejax.physics import earth
    from nuejax.physics.oscillation import OscillationParams, production_profile

    exposure = earth.earth_exposure(args.latitude)
    profile = production_profile("13N")
    E = jnp.linspace(0.0, 1.7, args.energies)

    def night_ee(s12):
        rho = earth.night_density_matrix(E, OscillationParams(sin2_theta12=s12), profile, exposure)
        return jnp.sum(jnp.real(rho[..., 0, 0]))

    out = {"date": datetime.date.today().isoformat(), "device": jax.devices()[0].device_kind,
           "backend": jax.default_backend(), "jax": jax.__version__, "energies": args.energies,
           "chords": list(exposure.steps.shape)}
    for name, fn in (("value", jax.jit(night_ee)), ("value_and_grad", jax.jit(jax.value_and_grad(night_ee)))):
        t0 = time.perf_counter()
        res = jax.block_until_ready(fn(0.308))
        first = time.perf_counter() - t0
        warm = []
        for i in range(args.repeat):
            t0 = time.perf_counter()
            jax.block_until_ready(fn(0.308 + 1e-4 * (i + 1)))
            warm.append(time.perf_counter() - t0)
        out[name] = {"first_s": first, "warm_s": min(warm),
                     "result": [float(r) for r in (res if isinstance(res, tuple) else (res,))]}
    print(json.dumps(out), flush=True)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
