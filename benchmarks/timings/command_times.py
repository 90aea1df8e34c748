"""Wall time of whole commands, first run and warm run, each in a fresh process (issue 29's targets).

  python benchmarks/timings/command_times.py --cache DIR --out FILE.json demo borexino xenonnt

For each command (``nuejax <command> --json --no-plots`` where it has ``--no-plots``): ``first``
with an empty cache folder (no model tensors, no compiled programs: a fresh machine), ``warm`` on
the cache that run left, and ``warm_no_compilation_cache`` with the tensor cache warm but JAX's
compilation cache switched off (``NUEJAX_COMPILATION_CACHE=0``: what the warm runs cost before it
existed). ``--runs`` picks some of these; ``--keep`` leaves the folder's caches in place, so that a
later call (another device session) can time warm runs. ``--prelude`` runs Python statements
before the command (``python -c``, then the package's ``__main__``): a probe's setting. Each record holds the command's own
``seconds`` (from its JSON) beside the process's wall time, the date, the device and JAX's
version. Results are appended to ``--out`` (a JSON list), so one file gathers several calls.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

NO_PLOTS = {"demo", "borexino", "xenonnt", "combine"}


def _device() -> dict:
    code = ("import json, jax, jaxlib; d = jax.devices()[0]; print(json.dumps({'backend': jax.default_backend(), "
            "'device': d.device_kind, 'n_devices': len(jax.devices()), 'jax': jax.__version__}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    info = json.loads(out.stdout.strip().splitlines()[-1])
    try:
        drv = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
        info["driver"] = drv.stdout.strip().splitlines()[0] if drv.returncode == 0 else None
    except (FileNotFoundError, subprocess.TimeoutExpired, IndexError):
        info["driver"] = None
    info["cpu_count"] = os.cpu_count()
    return info


def _run(command: str, extra: list, env: dict, out_dir: Path, timeout: float | None = None,
         prelude: str = "") -> dict:
    launch = ["-m", "nuejax"]
    if prelude:  # a probe's setting, then the package's __main__ as `python -m nuejax` runs it
        launch = ["-c", prelude + "; import runpy; runpy.run_module('nuejax', run_name='__main__', alter_sys=True)"]
    cmd = [sys.executable] + launch + [command, "--json", "--out", str(out_dir)] + extra
    if command in NO_PLOTS:
        cmd.append("--no-plots")
    t0 = time.perf_counter()
    try:  # on a timeout subprocess.run kills the command's process (no leftover run on the device)
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"command": " ".join(["nuejax"] + cmd[3:]), "prelude": prelude or None, "wall_s": None, "rc": None,
                "timed_out_after_s": timeout}
    wall = time.perf_counter() - t0
    rec = {"command": " ".join(["nuejax"] + cmd[3:]), "prelude": prelude or None, "wall_s": wall, "rc": p.returncode,
           "load_average_start": os.getloadavg()[0] if hasattr(os, "getloadavg") else None}
    if p.returncode != 0:
        rec["stderr_tail"] = p.stderr[-2000:]
        return rec
    try:
        summary = json.loads(p.stdout.strip().splitlines()[-1])
        rec["seconds"] = summary.get("seconds")
        if summary.get("phase_start_seconds"):  # when each stage began (the analysis commands)
            rec["phase_start_seconds"] = summary["phase_start_seconds"]
    except (json.JSONDecodeError, IndexError, AttributeError):
        rec["seconds"] = None
    return rec


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("commands", nargs="+")
    ap.add_argument("--cache", required=True, help="the cache folder (emptied before a first run)")
    ap.add_argument("--out", required=True, help="JSON list the records are appended to")
    ap.add_argument("--runs", default="first,warm,warm_no_compilation_cache")
    ap.add_argument("--extra", default="", help="extra arguments for every command (one string)")
    ap.add_argument("--timeout", type=float, default=None, help="seconds a run may take before it is killed")
    ap.add_argument("--prelude", default="", help="Python statements run before the command (a probe's "
                    "setting, e.g. 'import nuejax.inference.fitting as f; f.ROW_LAUNCH_MIN = 64')")
    a = ap.parse_args(argv)
    cache = Path(a.cache)
    out = Path(a.out)
    records = json.loads(out.read_text()) if out.exists() else []
    dev = _device()
    work = cache.parent / (cache.name + "-out")
    for command in a.commands:
        for run in a.runs.split(","):
            env = {**os.environ, "NUEJAX_CACHE_DIR": str(cache)}
            env.pop("JAX_COMPILATION_CACHE_DIR", None)
            if run == "first":
                shutil.rmtree(cache, ignore_errors=True)
            elif run == "warm_no_compilation_cache":
                env["NUEJAX_COMPILATION_CACHE"] = "0"
            elif run != "warm":
                raise SystemExit(f"--runs: unknown run {run!r} (first, warm, warm_no_compilation_cache)")
            rec = dict(_run(command, a.extra.split(), env, work, a.timeout, a.prelude), run=run,
                       date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), **dev)
            print(json.dumps(rec), flush=True)
            records.append(rec)
            out.write_text(json.dumps(records, indent=1))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
