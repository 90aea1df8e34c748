"""float32 vs float64 error of the physics layer (rates and 2000-bin recoil spectra).

Run: python benchmarks/accuracy/precision_physics.py
The float32 side runs in a child process, since jax_enable_x64 is process-wide.
"""

import json
import subprocess
import sys

CHILD = r'''
import json, jax.numpy as jnp
from nuejax.physics import COMPONENT_NAMES, binned_recoil_spectrum, build_source, event_rate, uniform_recoil_edges
out = {}
for n in COMPONENT_NAMES:
    s = build_source(n, dtype=jnp.float32)
    e = uniform_recoil_edges(float(s.t_end), 2000, dtype=jnp.float32)
    out[n] = [float(event_rate(s)), [float(x) for x in binned_recoil_spectrum(s, e, in_sigma0_units=True)]]
print(json.dumps(out))
'''


def main():
    f32 = json.loads(subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True).stdout)
    import numpy as np

    import nuejax

    nuejax.enable_x64()
    from nuejax.physics import binned_recoil_spectrum, build_source, event_rate, uniform_recoil_edges

    print(f"{'component':>9}  {'rate rel. err':>13}  {'max bin rel. err':>16}")
    for name, (r32, b32) in f32.items():
        s = build_source(name)
        e = uniform_recoil_edges(float(s.t_end), 2000)
        b64 = np.asarray(binned_recoil_spectrum(s, e, in_sigma0_units=True))
        b32 = np.array(b32)
        m = b64 > 1e-6 * b64.max()
        print(f"{name:>9}  {r32 / float(event_rate(s)) - 1:+13.2e}  {np.max(np.abs(b32[m] / b64[m] - 1)):16.2e}")


if __name__ == "__main__":
    main()
