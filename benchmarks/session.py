"""Run one machine's benchmark session and write its manifest.

  python benchmarks/session.py --machine cpu2|h100|h100x2 --out DIR [--steps a,b,c] [--tag TAG]
  python benchmarks/session.py --list [--json]          # the steps, their scripts and each machine's default set
  python benchmarks/session.py --machine h100 --out DIR --dry-run   # the commands, nothing run

Each step runs one script of ``benchmarks/`` as a subprocess (its own process group, killed at its
time limit), from the repository root, with ``sys.executable``. Its output files go into DIR, named
``TAG_...`` (TAG defaults to the machine name, so that they can be copied into ``benchmarks/results/``
as they are); its stdout and stderr go to ``TAG_STEP.log``. Before the steps the session

* installs carried wheels (``.whl/*.whl`` at the repository root, e.g. iminuit for a bare GPU
  machine) into ``--wheel-target`` (default ``$TMPDIR/site``) and puts that folder on PYTHONPATH;
* puts the repository root on PYTHONPATH;
* sets NUEJAX_CACHE_DIR, unless it is set, to a temporary folder (``--cache-dir``, default
  ``$TMPDIR/nuejax_session_cache``, kept between sessions on the same machine), so that the steps
  after the first load the model tensors instead of rebuilding them (nuejax.cache);
* records the date, host, git commit, the GPUs and driver (``nvidia-smi``, where present), and the
  JAX version and devices as the steps see them (also as text in ``TAG_info.txt``).

``DIR/manifest.json`` is written after every step: the machine, the session's records, and per
step its command, return code, wall time, whether it hit its time limit, its output files (names
relative to DIR) and its log. Running the session again with the same DIR adds to the manifest: a
step run again replaces its earlier record. ``benchmarks/report.py`` reads results through such
manifests (``benchmarks/README.md``).
"""

from __future__ import annotations

import argparse
import datetime
import fnmatch
import json
import os
import platform
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent


@dataclass(frozen=True)
class Step:
    """One step: ``script`` (relative to benchmarks/) with ``args``; ``{out}`` in an argument is the
    path of the step's output file, ``{dir}`` the session folder. ``output`` is the output file's
    name (``{tag}``, ``{ndev}`` filled in); ``outputs_glob`` names several files written into
    ``{dir}``; ``stdout_output``: the script prints its result, stdout is the output file."""

    script: str
    args: tuple = ()
    output: str | None = None
    outputs_glob: str | None = None
    stdout_output: bool = False
    help: str = ""
    timeout: int = 1800
    env: dict = field(default_factory=dict)
    multi_device_only: bool = False  # skipped on a machine with one device


STEPS = {
    # -- timings (docs/benchmarks.md) -------------------------------------------------------------
    "paper": Step("run.py", ("--out", "{out}"), "{tag}_paper_float64.json",
                  help="the paper workload, float64, with the fits and the scan"),
    "float32": Step("run.py", ("--no-fit", "--dtype", "float32", "--out", "{out}"), "{tag}_paper_float32.json",
                    help="the paper workload in float32, no fits"),
    "quick": Step("run.py", ("--quick", "--json", "--out", "{out}"), "{tag}_quick_float64.json",
                  help="run.py --quick: reduced dimensions, < 1 min on 2 CPU cores", timeout=600),
    "profile": Step("timings/profile_general.py", ("--out", "{out}"), "{tag}_profile_general.json",
                    help="the general path's stages"),
    "migrad": Step("timings/migrad_profile.py", ("--out", "{out}"), "{tag}_migrad_profile.json",
                   help="a 25-parameter MIGRAD fit: its calls and the rest"),
    "build": Step("timings/build_time.py", ("--repeat", "2", "--out", "{out}"), "{tag}_build_time.json",
                  help="the default model's build, uncached, cached and with the cache off"),
    "cli": Step("timings/cli_times.py", ("--out", "{out}"), "{tag}_cli_times.json",
                help="nuejax rates and nuejax demo, fresh processes"),
    "floating": Step("timings/floating_response.py",
                     ("--n-T", "2000", "--window", "90", "950", "--signals", "all", "--json", "{out}"),
                     "{tag}_floating_response.json", help="floating responses, default model (2000 recoil bins)"),
    "floating200": Step("timings/floating_response.py",
                        ("--n-T", "200", "--window", "90", "950", "--signals", "all", "--json", "{out}"),
                        "{tag}_floating_response_nT200.json", help="the same on 200 recoil bins"),
    "general": Step("timings/general_case.py", ("--n-T", "2000", "--json", "{out}"), "{tag}_general_case.json",
                    help="the general case (general NSI, mediators, propagation, day-night)", timeout=3600),
    "threads": Step("timings/threads.py", ("--out-dir", "{dir}"), outputs_glob="cpu_threads*_float64.json",
                    help="CPU thread scaling: run.py --no-fit pinned to 1..cores (taskset)", timeout=3600),
    "toys": Step("timings/toy_throughput.py", ("--json", "{out}"), "{tag}_toys_{ndev}dev.json",
                 help="toy-fit throughput and belts on all devices", timeout=3600),
    "toys1dev": Step("timings/toy_throughput.py", ("--json", "{out}"), "{tag}_toys_1dev.json",
                     help="the same on one device (CUDA_VISIBLE_DEVICES=0), only where there are several",
                     timeout=3600, env={"CUDA_VISIBLE_DEVICES": "0"}, multi_device_only=True),
    "batchtoys": Step("timings/batch_fit_toys.py", ("--n-toys", "1000", "--json", "{out}"),
                      "{tag}_batch_fit_toys_1000.json", help="batch_fit of 1000 Poisson toys in one launch"),
    # -- probes (one-off investigations) --------------------------------------------------------
    "fitoverhead": Step("probes/fit_overhead_probe.py", ("--out", "{out}"), "{tag}_fit_overhead_probe.json",
                        help="a fit's time outside MIGRAD's calls; gradients ahead of time"),
    "trace": Step("probes/gpu_trace.py", ("--out", "{out}"), "{tag}_trace_value_and_grad.json",
                  help="kernel-level GPU trace of value + gradient"),
    "dispatch": Step("probes/dispatch_probe.py", (), "{tag}_dispatch_probe.json", stdout_output=True,
                     help="argument handling of a GPU call"),
    "blocks": Step("probes/kernel_blocks_ab.py", ("--rows", "256", "--out", "{out}"), "{tag}_kernel_blocks_ab.json",
                   help="the fold by kernel blocks against the dense product"),
    "gridprobe": Step("probes/grid_fold_probe.py", ("--n-T", "2000", "--out", "{out}"), "{tag}_grid_fold_probe.json",
                      help="the grid fold's cell-lookup methods"),
    "scanconv": Step("probes/scan_convergence.py", ("--out", "{out}"), "{tag}_scan_convergence.json",
                     help="the 200-point profile scan's convergence"),
    "costcall": Step("probes/cost_call_probe.py", ("--out", "{out}"), "{tag}_cost_call_probe.json",
                     help="one NLLCost call as a minimiser makes it, against a loop"),
    "hessian": Step("probes/hessian_ab.py", ("--out", "{out}"), "{tag}_hessian_ab.json",
                    help="the exact Hessian with and without the Poisson structure", timeout=3600),
    "gaussfold": Step("probes/gaussian_fold_ab.py", ("--out", "{out}"), "{tag}_gaussian_fold_ab.json",
                      help="formulations of the floating Gaussian fold"),
    "xlaflags": Step("probes/xla_flag_probe.py", (os.environ.get("XLA_FLAGS", ""),), "{tag}_xla_flag_probe.json",
                     stdout_output=True, help="value and value + gradient under this process's XLA_FLAGS"),
    # -- accuracy ---------------------------------------------------------------------------------
    "precision": Step("accuracy/precision_physics.py", (), "{tag}_precision_physics.txt", stdout_output=True,
                      help="float32 against float64 in the physics layer"),
    "poisson": Step("accuracy/poisson_sampler.py", ("--json", "{out}"), "{tag}_poisson_sampler.json",
                    help="jax.random.poisson's variance and nuejax's split draws"),
    "physicsnumbers": Step("accuracy/general_physics_numbers.py", ("--json", "{out}"),
                           "{tag}_general_physics_numbers.json", help="the numbers of docs/physics.md section 6"),
    "toysbounds": Step("accuracy/toys_at_bounds.py", ("--n-toys", "30", "--n-T", "300", "--json", "{out}"),
                       "{tag}_toys_at_bounds.json", help="batch_fit against MIGRAD, fit() and L-BFGS-B on toys"),
    "borexino": Step("accuracy/borexino_variants.py", ("--json", "{out}"), "{tag}_borexino_variants.json",
                     help="the Borexino CNO result under each modelling choice"),
    "offdiagonal": Step("accuracy/borexino_offdiagonal.py", ("--json", "{out}"), "{tag}_borexino_offdiagonal.json",
                        help="the off-diagonal NSI example on the Borexino data"),
    # -- reproducers ------------------------------------------------------------------------------
    "hangrepro": Step("repro/xla_cpu_hang_repro.py", ("400", "14"), None, timeout=60,
                      help="the XLA:CPU hang (expected to hit its 60 s limit on an affected CPU)"),
}

#: Each machine's default steps: the report's files of that machine (or, on two GPUs, the scaling).
MACHINES = {
    "cpu2": ("paper", "float32", "profile", "migrad", "fitoverhead", "build", "cli", "floating"),
    "h100": ("paper", "float32", "profile", "migrad", "fitoverhead", "build", "floating", "scanconv"),
    "h100x2": ("toys", "toys1dev"),
}


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _run_quiet(cmd, env=None, timeout=120) -> subprocess.CompletedProcess | None:
    try:
        return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return None


def git_info() -> dict:
    head = _run_quiet(["git", "rev-parse", "HEAD"])
    if head is None or head.returncode != 0:
        return {"commit": None, "dirty": None}
    st = _run_quiet(["git", "status", "--porcelain", "--untracked-files=no"])
    return {"commit": head.stdout.strip(), "dirty": bool(st.stdout.strip()) if st and st.returncode == 0 else None}


def gpu_info() -> tuple[list, str]:
    """The GPUs as ``nvidia-smi`` lists them (name, driver, memory), and its CSV text; none without it."""
    if shutil.which("nvidia-smi") is None:
        return [], ""
    r = _run_quiet(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv"])
    if r is None or r.returncode != 0:
        return [], ""
    rows = [[c.strip() for c in line.split(",")] for line in r.stdout.strip().splitlines()[1:] if line.strip()]
    return [dict(zip(("name", "driver", "memory"), row)) for row in rows], r.stdout


JAX_INFO = """import json, platform, jax
d = jax.devices()
try:
    import jaxlib; jl = getattr(jaxlib, "__version__", None) or jaxlib.version.__version__
except Exception:
    jl = None
print(json.dumps({"jax": jax.__version__, "jaxlib": jl, "backend": jax.default_backend(), "n_devices": len(d),
                  "devices": [str(x) for x in d], "device_kind": getattr(d[0], "device_kind", ""),
                  "python": platform.python_version()}))
"""


def jax_info(env) -> dict:
    r = _run_quiet([sys.executable, "-c", JAX_INFO], env=env, timeout=300)
    if r is None or r.returncode != 0:
        return {"error": (r.stderr[-2000:] if r else "could not start python")}
    return json.loads(r.stdout.strip().splitlines()[-1])


def install_wheels(target: Path) -> dict | None:
    """pip-install the carried wheels (.whl/*.whl) into ``target``, as the old shell runners did."""
    wheels = sorted((ROOT / ".whl").glob("*.whl"))
    if not wheels:
        return None
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile", "--no-cache-dir",
           "--upgrade", "--target", str(target), *map(str, wheels)]
    r = _run_quiet(cmd, timeout=600)
    return {"wheels": [w.name for w in wheels], "target": str(target),
            "returncode": None if r is None else r.returncode, "stderr": "" if r is None else r.stderr[-2000:]}


def command(name: str, step: Step, out_dir: Path, tag: str, ndev: int, extra: list) -> tuple[list, str | None]:
    out_name = step.output.format(tag=tag, ndev=ndev) if step.output else None
    out_path = str(out_dir / out_name) if out_name else ""
    args = [a.replace("{out}", out_path).replace("{dir}", str(out_dir)) for a in step.args]
    return [sys.executable, str(Path("benchmarks") / step.script), *args, *extra], out_name


def run_step(cmd, env, cwd, log_path: Path, stdout_path: Path | None, timeout: float) -> dict:
    """Run ``cmd`` in its own process group; at ``timeout`` the group is stopped (SIGTERM, then SIGKILL)."""
    t0 = time.perf_counter()
    started = _now()
    timed_out = False
    with open(log_path, "w") as log:
        out = open(stdout_path, "w") if stdout_path else log
        try:
            p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=log if stdout_path else subprocess.STDOUT,
                                 start_new_session=True)
            try:
                rc = p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                for sig, grace in ((signal.SIGTERM, 10), (signal.SIGKILL, 30)):
                    try:
                        os.killpg(p.pid, sig)
                    except ProcessLookupError:
                        break
                    try:
                        p.wait(timeout=grace)
                        break
                    except subprocess.TimeoutExpired:
                        continue
                rc = p.returncode
        finally:
            if stdout_path:
                out.close()
    return {"started": started, "returncode": rc, "timed_out": timed_out, "wall_s": round(time.perf_counter() - t0, 3)}


def list_steps(as_json: bool) -> None:
    if as_json:
        print(json.dumps({"steps": {n: {"script": f"benchmarks/{s.script}", "args": list(s.args), "output": s.output,
                                        "outputs_glob": s.outputs_glob, "stdout_output": s.stdout_output,
                                        "timeout_s": s.timeout, "env": s.env, "help": s.help,
                                        "multi_device_only": s.multi_device_only} for n, s in STEPS.items()},
                          "machines": {m: list(v) for m, v in MACHINES.items()}}, indent=1))
        return
    for m, steps in MACHINES.items():
        print(f"--machine {m}: default steps {','.join(steps)}")
    print()
    for n, s in STEPS.items():
        default = [m for m, v in MACHINES.items() if n in v]
        print(f"{n:15s} benchmarks/{s.script} {' '.join(s.args)}".rstrip())
        print(f"{'':15s} {s.help}; limit {s.timeout} s" + (f"; default on {', '.join(default)}" if default else ""))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n", 2)[2])
    ap.add_argument("--machine", choices=tuple(MACHINES), help="the machine kind: sets the default steps")
    ap.add_argument("--out", type=Path, help="the session folder (its manifest.json, results and logs)")
    ap.add_argument("--steps", help="comma-separated steps instead of the machine's defaults (see --list)")
    ap.add_argument("--tag", help="prefix of the output files (default: the machine)")
    ap.add_argument("--args", action="append", default=[], metavar="STEP=ARGS",
                    help="extra arguments for the steps matching STEP (a glob), e.g. --args 'toys*=--rows 4096'")
    ap.add_argument("--timeout", type=float, help="time limit of every step in s (default: each step's own)")
    ap.add_argument("--cache-dir", help="NUEJAX_CACHE_DIR where not set (default $TMPDIR/nuejax_session_cache)")
    ap.add_argument("--wheel-target", default=str(Path(tempfile.gettempdir()) / "site"),
                    help="where carried wheels (.whl/*.whl) are installed (default $TMPDIR/site)")
    ap.add_argument("--list", action="store_true", help="list the steps and each machine's defaults, run nothing")
    ap.add_argument("--json", action="store_true", help="with --list: as JSON")
    ap.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    a = ap.parse_args(argv)
    if a.list:
        list_steps(a.json)
        return 0
    if not a.machine or not a.out:
        ap.error("--machine and --out are required (or --list)")
    names = [s.strip() for s in a.steps.split(",") if s.strip()] if a.steps else list(MACHINES[a.machine])
    unknown = [n for n in names if n not in STEPS]
    if unknown:
        ap.error(f"unknown steps {unknown}; known: {', '.join(STEPS)}")
    extra = {}
    for spec in a.args:
        pattern, sep, text = spec.partition("=")
        if not sep:
            ap.error(f"--args {spec!r}: expected STEP=ARGS")
        for n in names:
            if fnmatch.fnmatchcase(n, pattern):
                extra.setdefault(n, []).extend(shlex.split(text))
    tag = a.tag or a.machine
    out_dir = a.out.resolve()

    env = dict(os.environ)
    if a.dry_run:
        for n in names:
            cmd, _ = command(n, STEPS[n], out_dir, tag, "N", extra.get(n, []))
            print(f"{n}: {shlex.join(cmd)}" + (f"  (env {STEPS[n].env})" if STEPS[n].env else ""))
        return 0

    out_dir.mkdir(parents=True, exist_ok=True)
    wheels = install_wheels(Path(a.wheel_target))
    path = [str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    if wheels and wheels["returncode"] == 0:
        path.insert(0, wheels["target"])
    env["PYTHONPATH"] = os.pathsep.join(path)
    if not env.get("NUEJAX_CACHE_DIR"):
        env["NUEJAX_CACHE_DIR"] = a.cache_dir or str(Path(tempfile.gettempdir()) / "nuejax_session_cache")
    Path(env["NUEJAX_CACHE_DIR"]).mkdir(parents=True, exist_ok=True)

    started = _now()
    gpus, smi_text = gpu_info()
    jinfo = jax_info(env)
    info_name = f"{tag}_info.txt"
    (out_dir / info_name).write_text(
        (smi_text or "nvidia-smi: not present\n") + started[:10] + "\n"
        + f"jax {jinfo.get('jax')} [{', '.join(jinfo.get('devices', []))}]\n")
    run = {"started": started, "finished": None, "host": platform.node(), "cpu_count": os.cpu_count(),
           "python": platform.python_version(), "git": git_info(), "gpus": gpus, "jax": jinfo, "wheels": wheels,
           "environment": {k: env.get(k) for k in ("PYTHONPATH", "NUEJAX_CACHE_DIR", "XLA_FLAGS", "JAX_PLATFORMS",
                                                   "CUDA_VISIBLE_DEVICES")},
           "argv": sys.argv[1:] if argv is None else list(argv), "steps": names}
    mpath = out_dir / "manifest.json"
    manifest = json.loads(mpath.read_text()) if mpath.exists() else {}
    if manifest.get("machine") not in (None, a.machine):
        ap.error(f"{mpath} is a session of machine {manifest['machine']}, not {a.machine}")
    manifest.update({"schema": 1, "machine": a.machine, "tag": tag, "info_file": info_name, "date": started,
                     "device": jinfo.get("device_kind") or jinfo.get("backend"), "gpus": gpus,
                     "jax": jinfo.get("jax"), "git": run["git"]})
    manifest.setdefault("runs", []).append(run)
    manifest.setdefault("steps", [])
    run_index = len(manifest["runs"]) - 1

    def save():
        mpath.write_text(json.dumps(manifest, indent=1) + "\n")

    save()
    ndev = int(jinfo.get("n_devices") or 1)
    print(f"session {a.machine} ({tag}) in {out_dir}: {jinfo.get('n_devices')} device(s) "
          f"{jinfo.get('device_kind') or jinfo.get('error', '')[-200:]}, jax {jinfo.get('jax')}", flush=True)
    failed = 0
    for n in names:
        step = STEPS[n]
        cmd, out_name = command(n, step, out_dir, tag, ndev, extra.get(n, []))
        rec = {"name": n, "script": f"benchmarks/{step.script}", "command": cmd, "run": run_index,
               "log": f"{tag}_{n}.log"}
        if step.multi_device_only and ndev < 2:
            rec.update({"skipped": "one device", "date": _now(), "outputs": []})
        else:
            before = {p.name: p.stat().st_mtime for p in out_dir.glob(step.outputs_glob)} if step.outputs_glob else {}
            step_env = dict(env, **step.env)
            stdout_path = out_dir / out_name if step.stdout_output else None
            res = run_step(cmd, step_env, ROOT, out_dir / rec["log"], stdout_path,
                           a.timeout if a.timeout else step.timeout)
            if step.outputs_glob:
                outs = sorted(p.name for p in out_dir.glob(step.outputs_glob)
                              if before.get(p.name) != p.stat().st_mtime)
            else:
                outs = [out_name] if out_name and (out_dir / out_name).exists() else []
            missing = [out_name] if out_name and not outs else []
            rec.update(res, date=res["started"], env=step.env or None, outputs=outs, missing=missing)
            failed += res["returncode"] != 0
        manifest["steps"] = [s for s in manifest["steps"] if s["name"] != n] + [rec]
        save()
        print(f"{n}: " + (rec["skipped"] if "skipped" in rec else
                          f"rc {rec['returncode']}{' (time limit)' if rec['timed_out'] else ''} in {rec['wall_s']:.0f} s"
                          f" -> {', '.join(rec['outputs']) or 'no output'}"), flush=True)
    run["finished"] = _now()
    save()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
