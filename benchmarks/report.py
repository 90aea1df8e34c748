"""Write docs/benchmarks.md (and docs/figures/bench_batch.png, bench_threads.png) from the results that the
session manifests in benchmarks/results/ list, followed by the analysis in benchmarks/NOTES.md.

  python benchmarks/report.py                       # every manifest under benchmarks/results/
  python benchmarks/report.py --manifest A.json ... # only these manifests
  python benchmarks/report.py --check               # check that every manifest's files exist, write nothing

A manifest (``benchmarks/session.py`` writes one per machine session, ``DIR/manifest.json``) names its
machine (``cpu2``, ``h100``, ...) and, per step (``paper``, ``profile``, ...), the result files, relative
to the manifest's folder. The report reads ``benchmarks/results/manifest*.json`` and
``benchmarks/results/*/manifest*.json``, leaves out manifests marked ``archived`` and steps that failed,
and takes each (machine, step) from the most recent step that ran it (its ``date``; on a tie, the
manifest read last). The CPU columns are machine ``cpu2``, the GPU columns machine ``h100``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"
RES = BENCH / "results"
PAPER = {"A30X GPU": 52.4, "RTX 3080 Ti GPU": 86.8, "Xeon 8358P, 1 thread": 3058.0, "Xeon 8358P, 16 threads": 273.0,
         "Xeon 8358P, 64 threads": 132.0}
CPU, GPU = "cpu2", "h100"  # the machines of the report's two columns


def manifest_paths(include_archived: bool = False) -> list:
    """The manifests under benchmarks/results/: ``manifest*.json`` there and ``manifest*.json`` one folder down."""
    paths = sorted(RES.glob("manifest*.json")) + sorted(RES.glob("*/manifest*.json"))
    return [p for p in paths if include_archived or not json.loads(p.read_text()).get("archived")]


def read_manifest(path) -> dict:
    m = json.loads(Path(path).read_text())
    m["_path"] = Path(path).resolve()
    return m


class Results:
    """The result files of the manifests, by (machine, step)."""

    def __init__(self, manifests):
        self.steps = {}
        for m in manifests:
            if m.get("archived"):
                continue
            for s in m["steps"]:
                if s.get("returncode") not in (None, 0) or s.get("skipped") or not s.get("outputs"):
                    continue
                key = (s.get("machine") or m["machine"], s["name"])
                date = s.get("date") or m.get("date") or ""
                if key not in self.steps or date >= self.steps[key][0]:
                    self.steps[key] = (date, m, s)

    def files(self, machine: str, step: str) -> list:
        if (machine, step) not in self.steps:
            return []
        _, m, s = self.steps[machine, step]
        return [m["_path"].parent / f for f in s["outputs"]]

    def load(self, machine: str, step: str):
        """The step's (first) JSON result, or None."""
        js = [f for f in self.files(machine, step) if f.suffix == ".json"]
        return json.loads(js[0].read_text()) if js else None

    def info_file(self, machine: str, step: str):
        """The text file with the device, driver and JAX version of the session that ran the step."""
        if (machine, step) not in self.steps:
            return None
        _, m, s = self.steps[machine, step]
        name = s.get("info_file") or m.get("info_file")
        return m["_path"].parent / name if name else None


RESULTS = Results([])


def load(machine: str, step: str):
    return RESULTS.load(machine, step)


def rel(path: Path) -> str:
    """``path`` relative to benchmarks/ where it lies inside it."""
    path = path.resolve()
    return path.relative_to(BENCH).as_posix() if path.is_relative_to(BENCH) else str(path)


def check(paths) -> int:
    """Every manifest's result and info files exist; print one line per manifest."""
    bad = 0
    for p in paths:
        m = read_manifest(p)
        missing = []
        for s in m["steps"]:
            names = list(s.get("outputs", [])) + [x for x in (s.get("info_file"), s.get("log")) if x]
            missing += [f"{s['name']}: {f}" for f in names if not (m["_path"].parent / f).exists()]
        if m.get("info_file") and not (m["_path"].parent / m["info_file"]).exists():
            missing.append(f"info_file: {m['info_file']}")
        print(f"{rel(m['_path'])}: {len(m['steps'])} steps" + (f", missing {missing}" if missing else ", all files present"))
        bad += bool(missing)
    return 1 if bad else 0


def agreement(a, b):
    """Max relative difference of -2lnL and of the gradient (relative to its largest component)."""
    dv = max(abs(x["nll"] / y["nll"] - 1) for x, y in zip(a, b))
    dg = 0.0
    for x, y in zip(a, b):
        k = sorted(x["grad"])
        ga, gb = np.array([x["grad"][i] for i in k]), np.array([y["grad"][i] for i in k])
        dg = max(dg, float(np.max(np.abs(ga - gb)) / np.max(np.abs(gb))))
    return dv, dg


def fmt(ms):
    return f"{ms:.3g} ms" if ms >= 0.01 else f"{ms * 1e3:.3g} µs"


def stage_table(w, profiles):
    """Per-stage times (benchmarks/profile_general.py) of each profiled device."""
    w("| stage | " + " | ".join(f"{lab}: value / value + grad" for lab, _ in profiles) + " |")
    w("|---" * (len(profiles) + 1) + "|")
    names = {"p_ee": "P_ee tables (production-zone average)", "spectra": "recoil spectra f_T (incl. P_ee)",
             "fold": "fold through the 9 kernels", "nll": "whole −2 ln L"}
    for k, lab in names.items():
        cells = [f"{fmt(p['ms'][k]['value'])} / {fmt(p['ms'][k]['value_and_grad'])}" for _, p in profiles]
        w(f"| {lab} | " + " | ".join(cells) + " |")
    w("")


def migrad_split(prof) -> str:
    """The fastest fit of a ``migrad_profile.py`` run, split into its calls' wall time and the rest."""
    f = min(prof["fits"], key=lambda r: r["s"])
    per = lambda k: f"{f[k + '_s'] / f[k + '_calls'] * 1e3:.3g} ms" if f[k + "_calls"] else "–"  # noqa: E731
    return (f"{f['s']:.3g} s = {f['value_calls']} values × {per('value')} + {f['grad_calls']} gradients × "
            f"{per('grad')} + {f['hessian_calls']} Hessian calls ({f['hessian_s']:.3g} s) + {f['rest_s']:.3g} s "
            f"rest (iminuit, the end-point test)")


def missed_profiles(w, cpu, gpu, gname):
    """One line per target missed on either device: where its time goes, against its floor."""
    lines = []
    for lab, r, machine, target in (("2-core CPU", cpu, CPU, 5.0), (gname, gpu, GPU, 0.2)):
        m, prof, probe = r["migrad_general_25"], load(machine, "migrad"), load(machine, "fitoverhead")
        if m["s"] > target and prof:
            n = m["nfcn"] + m["ngrad"]
            floor = n * r["floors"]["dispatch"]["median_ms"] * 1e-3
            loop = (f"; `NLLCost`'s calls with a new vector each, timed in a loop (`fit_overhead_probe.py`): value "
                    f"{fmt(probe['calls']['value_ms'])}, value + gradient {fmt(probe['calls']['value_and_grad_ms'])}"
                    if probe else "")
            lines.append(f"- MIGRAD on the {lab} ({m['s']:.3g} s in `run.py`): `migrad_profile.py`'s fastest fit "
                         f"{migrad_split(prof)}. Floor: its {n} calls × a trivial jitted call "
                         f"({fmt(r['floors']['dispatch']['median_ms'])}) = {floor:.3g} s{loop}.")
    for lab, r, target in (("2-core CPU", cpu, 1.0), (gname, gpu, 0.1)):
        v, d = r["fast_value"]["median_ms"], r["floors"]["dispatch"]["median_ms"]
        if v > target:
            lines.append(f"- Fast path value on the {lab}: {fmt(v)} = {v / d:.2f}× a trivial jitted call "
                         f"({fmt(d)}) in the same run: the call is host dispatch.")
    for lab, r, target in (("2-core CPU", cpu, 20.0), (gname, gpu, 0.5)):
        fl = r["floors"]["fold_value_and_grad"]["median_ms"]
        for key, what in (("value_and_grad_vector", "minimiser call"), ("value_and_grad", "parameter-dict call")):
            v = r[key]["median_ms"]
            if v > target:
                lines.append(f"- Value + gradient ({what}) on the {lab}: {fmt(v)} = {v / fl:.2f}× the fold floor; the "
                             f"stages in the next section (`profile_general.py`).")
    cli = load(CPU, "cli")
    if cli and cli["demo_uncached_s"] > 30 and "demo_uncached_stages" in cli:
        st = cli["demo_uncached_stages"]
        lines.append(f"- `nuejax demo` on the 2-core CPU, first run ({cli['demo_uncached_s']:.1f} s): model build "
                     f"{st['build_s']:.1f} s, MIGRAD fit {st['fit_s']:.1f} s, two profile scans {st['scans_s']:.1f} s, "
                     f"the rest of the demo (Asimov data, fast-path templates, timing, summary) "
                     f"{st['other_in_demo_s']:.1f} s, the process outside the demo (interpreter, imports, backend) "
                     f"{st['outside_demo_s']:.1f} s (`cli_times.py`).")
    if cli and max(cli["rates_s"]) >= 3 and "import_s" in cli:
        lines.append(f"- `nuejax rates` on the 2-core CPU ({max(cli['rates_s']):.2f} s): importing `nuejax.cli` "
                     f"alone takes {min(cli['import_s']):.2f} s of it (`cli_times.py`).")
    if lines:
        w("Where the missed targets' time goes (profiles; the analysis is in the notes below):\n")
        w("\n".join(lines) + "\n")


def main(argv=None):
    global RESULTS
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--manifest", action="append", type=Path, help="read only these manifests (repeat the option)")
    ap.add_argument("--check", action="store_true", help="check that the manifests' files exist; write nothing")
    a = ap.parse_args(argv)
    if a.check:
        return check(a.manifest or manifest_paths(include_archived=True))
    RESULTS = Results([read_manifest(p) for p in (a.manifest or manifest_paths())])
    cpu, gpu = load(CPU, "paper"), load(GPU, "paper")
    cpu32, gpu32 = load(CPU, "float32"), load(GPU, "float32")
    threads = sorted((int(p.stem.split("threads")[1].split("_")[0]), json.loads(p.read_text()))
                     for p in RESULTS.files(CPU, "threads") if p.suffix == ".json")
    gname = f"{gpu['device'].split(':')[-1]}"
    gpu_info = RESULTS.info_file(GPU, "paper")
    L = []
    w = L.append
    w("# Benchmarks\n")
    w("Generated by `python benchmarks/report.py` from the result files that the session manifests in")
    w("`benchmarks/results/` list (`benchmarks/session.py` runs a machine's steps and writes one;")
    w("commands at the end). Workload: the")
    w('"paper" configuration (the benchmark of G. Sun, X. Ding, L. Sun and X. Zhou, "GPU-accelerated\n'
      'spectrum reweighting for new-physics searches in solar neutrino–electron scattering"), built by\n'
      '`benchmarks/workload.py`:\n')
    d = cpu["dims"]
    w(f"- {d['n_sig']} reweighted signal spectra ({d['n_lines']} of them lines), each with its own response matrix of "
      f"n_T = {d['n_T']} recoil × n_obs = {d['n_obs']} observable bins;")
    w(f"- n_E = {d['n_E']} neutrino-energy points per continuum; P_ee recomputed every call from (sin²θ12, Δm²21), "
      f"averaged over the n_r = {d['n_r']} radial zones of the B16 production tables (the model evaluates the "
      "average with a 40-node Gauss rule of each production distribution, equal to the zone sum to 4 × 10⁻¹⁵);")
    w(f"- {d['n_bkg']} background templates; {d['n_free']} free parameters (ε^L_ee, ε^R_ee, ε^L_ττ, ε^R_ττ, μ_ν, "
      "sin²θ12, Δm²21, 9 signal normalisations, 9 background rates; ²¹⁴Pb is the ninth background);")
    w("- float64 unless stated; median over ≥ 50 calls after warm-up (batched: ≥ 10), 16th–84th percentile in brackets; "
      "compile time apart.\n")
    w(f"Devices: CPU = the 2-core machine of this workplace (JAX {cpu['jax_version']}, {cpu['date']}); "
      f"GPU = {gname} (JAX {gpu['jax_version']}, {gpu['date']}"
      + (f"; driver and memory in `{rel(gpu_info)}`" if gpu_info else "") + ").\n")
    w("One *call* is, as in the paper, one physics update + reweighting/fold + likelihood: the general path "
      "(`borexino_like_model`-style model, oscillation parameters free). The *fast path* (`fast_model`: the "
      "oscillation parameters fixed and baked in, the response fixed) combines 17 folded basis templates per "
      "spectrum.\n")
    w("## Against the paper\n")
    w("| device / configuration | one likelihood call | ratio to this row's paper counterpart |")
    w("|---|---|---|")
    for k, v in PAPER.items():
        w(f"| paper: {k} | {v:g} ms | |")
    g, c = gpu["value"], cpu["value"]
    w(f"| nuejax: {gname} | {fmt(g['median_ms'])} "
      f"[{fmt(g['p16_ms'])}–{fmt(g['p84_ms'])}] | {PAPER['A30X GPU'] / g['median_ms']:.0f}× faster than the A30X |")
    w(f"| nuejax: 2-core CPU | {fmt(c['median_ms'])} "
      f"[{fmt(c['p16_ms'])}–{fmt(c['p84_ms'])}] | {PAPER['Xeon 8358P, 1 thread'] / c['median_ms']:.0f}× faster than "
      f"1 Xeon thread, {PAPER['Xeon 8358P, 64 threads'] / c['median_ms']:.1f}× faster than 64 |")
    for t, r in threads:
        v = r["value"]
        w(f"| nuejax: CPU pinned to {t} thread{'s' if t > 1 else ''} | {fmt(v['median_ms'])} "
          f"[{fmt(v['p16_ms'])}–{fmt(v['p84_ms'])}] | {PAPER['Xeon 8358P, 1 thread'] / v['median_ms']:.0f}× faster "
          f"than 1 Xeon thread |")
    w("")
    w("## Targets\n")
    w("| measure | 2-core CPU: target → measured | one H100: target → measured |")
    w("|---|---|---|")

    def ok(v, t, lower_better):
        return "✓" if (v <= t if lower_better else v >= t) else "✗"

    def row(name, tc, vc, tg, vg, lower_better=True, extra_c="", extra_g=""):
        op = "≤" if lower_better else "≥"
        w(f"| {name} | {op} {tc:g} → {vc:.3g} {ok(vc, tc, lower_better)}{extra_c} | "
          f"{op} {tg:g} → {vg:.3g} {ok(vg, tg, lower_better)}{extra_g} |")

    fc, fg = cpu["floors"], gpu["floors"]
    flc, flg = fc["fold_value_and_grad"]["median_ms"], fg["fold_value_and_grad"]["median_ms"]

    def vs_floor(ms, floor):
        return f" ({ms / floor:.2f}× the fold floor)"

    vc, vg = cpu["value_and_grad_vector"]["median_ms"], gpu["value_and_grad_vector"]["median_ms"]
    row("one call, value + gradient, minimiser call (free parameters as one vector) [ms]", 20, vc, 0.5, vg,
        extra_c=vs_floor(vc, flc), extra_g=vs_floor(vg, flg))
    dc, dg = cpu["value_and_grad"]["median_ms"], gpu["value_and_grad"]["median_ms"]
    row("one call, value + gradient of `model.nll(params, data)` w.r.t. the parameter dict [ms]", 20, dc, 0.5, dg,
        extra_c=vs_floor(dc, flc), extra_g=vs_floor(dg, flg))
    def vs_dispatch(r):
        return f" ({r['fast_value']['median_ms'] / r['floors']['dispatch']['median_ms']:.2f}× a trivial jitted call)"

    row("one call, fast path (value) [ms]", 1, cpu["fast_value"]["median_ms"], 0.1, gpu["fast_value"]["median_ms"],
        extra_c=vs_dispatch(cpu), extra_g=vs_dispatch(gpu))
    row("batched evaluations per second (fast path)", 1e4, cpu["evals_per_s_batched"], 1e6, gpu["evals_per_s_batched"],
        lower_better=False)

    def calls(m):
        return f" ({m['nfcn']} calls, {m['ngrad']} gradients)"

    def vs_calls_floor(m, r):
        # each call at least the fold's own floor (value, or value + gradient), or a trivial call where that is more
        fl, d = r["floors"], r["floors"]["dispatch"]["median_ms"]
        floor = 1e-3 * (m["nfcn"] * max(fl["fold_value"]["median_ms"], d)
                        + m["ngrad"] * max(fl["fold_value_and_grad"]["median_ms"], d))
        return f" ({m['nfcn']} calls, {m['ngrad']} gradients; {m['s'] / floor:.2f}× their fold floors, {floor:.3g} s)"

    mg, mgg = cpu["migrad_general_25"], gpu["migrad_general_25"]
    row("full MIGRAD fit, all 25 parameters (general path) [s]", 5, mg["s"], 0.2, mgg["s"],
        extra_c=vs_calls_floor(mg, cpu), extra_g=vs_calls_floor(mgg, gpu))
    sc, scg = cpu["scan_fast"], gpu["scan_fast"]
    row(f"1-D profile scan, {sc['points']} points, {sc['n_profiled']} nuisances profiled (fast path) [s]", 5, sc["s"],
        0.5, scg["s"])
    bc, bg = load(CPU, "build"), load(GPU, "build")
    if bc and bg:
        cc = bc["median"]["cached"]
        w(f"| building the default model from the on-disk cache [s] | ≤ 5 → {cc['build_s']:.3g} "
          f"{ok(cc['build_s'], 5, True)}; first −2 ln L call (compile) {cc['first_nll_s']:.2f} s | no target: "
          f"{bg['median']['cached']['build_s']:.3g}; first call {bg['median']['cached']['first_nll_s']:.2f} s |")
        uc = bc["median"]["uncached"]
        w(f"| building the default model uncached [s] | ≤ 20 → {uc['build_s']:.3g} {ok(uc['build_s'], 20, True)}; "
          f"first call {uc['first_nll_s']:.2f} s | no target: {bg['median']['uncached']['build_s']:.3g}; first call "
          f"{bg['median']['uncached']['first_nll_s']:.2f} s |")
    cli = load(CPU, "cli")
    if cli:
        w(f"| `nuejax demo` [s] | ≤ 30 → {cli['demo_uncached_s']:.1f} uncached "
          f"{'✓' if cli['demo_uncached_s'] <= 30 else '✗'}, {cli['demo_cached_s']:.1f} cached ✓ "
          f"({cli['demo_cached_with_plots_s']:.1f} with the figures) | – |")
        w(f"| `nuejax rates` [s] | < 3 → {max(cli['rates_s']):.2f} {'✓' if max(cli['rates_s']) < 3 else '✗'} | – |")
    flo = [(lab, load(machine, "floating")) for lab, machine in (("CPU", CPU), (gname, GPU))]
    if all(d for _, d in flo):
        cells, stage = [], []
        for lab, d in flo:
            c = d["cases"]
            vg = {k: v["value_and_grad"]["median_ms"] for k, v in c.items()}
            # each floating path against the fixed-response call with the same stages after the fold
            ref = {k: vg["fixed_general+transform" if k.endswith("+transform") else "fixed_general"]
                   for k in vg if k.startswith("floating") and not k.endswith("_exact")}
            ratios = {k: vg[k] / r for k, r in ref.items()}
            worst = max(ratios, key=ratios.get)
            cells.append(f"≤ 2× → {ratios[worst]:.2f}× {'✓' if ratios[worst] <= 2 else '✗'} ({worst.replace('_', ' ')}; "
                         f"n_T = {d['dims']['n_T']}, {d['dims']['n_obs']} bins)")
            if "floating_general_exact" in vg:
                stage.append(f"{lab}: the exact fold {vg['floating_general_exact'] / vg['fixed_general']:.1f}×")
            if "fixed_general+transform" in vg:
                stage.append(f"{lab}: the response transform stage alone {vg['fixed_general+transform'] / vg['fixed_general']:.1f}×"
                             " the fixed call")
        w(f"| floating-response paths against the fixed-response call with the same later stages, value + gradient "
          f"(worst case) | {cells[0]} | {cells[1]} |")
        flo_note = "; ".join(stage)
    else:
        flo_note = ""
    mf, mfg = cpu["migrad_fast_23"], gpu["migrad_fast_23"]
    w(f"| (MIGRAD, 23 parameters, oscillations fixed: fast path) [s] | {mf['s']:.3g}{calls(mf)} | "
      f"{mfg['s']:.3g}{calls(mfg)} |")
    w("")
    if flo_note:
        w(f"Floating responses (`floating_response.py`, value + gradient against the fixed general call): {flo_note}.\n")
    missed_profiles(w, cpu, gpu, gname)
    w(f"Floors, measured in the same runs (`run.py`): the fold alone (f @ K over the stacked "
      f"{fc['fold_shape'][0]} × {fc['fold_shape'][1]} kernels with a Poisson-like loss) takes "
      f"{fmt(fc['fold_value']['median_ms'])} (value) and {fmt(flc)} (value + gradient) on the CPU, "
      f"{fmt(fg['fold_value']['median_ms'])} and {fmt(flg)} on the {gname}; a trivial jitted call "
      f"{fmt(fc['dispatch']['median_ms'])} and {fmt(fg['dispatch']['median_ms'])}.\n")
    w(f"Value alone (general path): CPU {fmt(cpu['value']['median_ms'])}, {gname} {fmt(gpu['value']['median_ms'])}. "
      f"Fast path value + gradient: CPU {fmt(cpu['fast_value_and_grad']['median_ms'])}, {gname} "
      f"{fmt(gpu['fast_value_and_grad']['median_ms'])}. Scan points flagged converged: CPU {sc['all_converged']}, "
      f"GPU {scg['all_converged']} (see below).\n")
    w(f"Compile times [s] (CPU / {gname}): " + ", ".join(
        f"{k} {cpu['compile_s'][k]:.2f} / {gpu['compile_s'][k]:.2f}" for k in cpu["compile_s"]) +
      f"; model build {cpu['build_s']:.0f} s / {gpu['build_s']:.0f} s.\n")
    w("## Where the time goes (general path, `benchmarks/timings/profile_general.py`)\n")
    profiles = [(lab, load(machine, "profile")) for lab, machine in (("2-core CPU", CPU), (gname, GPU))
                if load(machine, "profile")]
    stage_table(w, profiles)
    if threads:
        w("## CPU thread scaling (`benchmarks/timings/threads.py`)\n")
        w("Each count pinned with `taskset -c 0-(t-1)`; XLA flags as recorded in the JSON "
          f"(`{threads[0][1]['xla_flags']}` for 1 thread, `intra_op_parallelism_threads=t` and "
          "`--xla_cpu_multi_thread_eigen=true` above).\n")
        w("| threads | value | value + gradient | fast path | batched evals/s |")
        w("|---|---|---|---|---|")
        for t, r in threads:
            w(f"| {t} | {fmt(r['value']['median_ms'])} | {fmt(r['value_and_grad']['median_ms'])} | "
              f"{fmt(r['fast_value']['median_ms'])} | {r['evals_per_s_batched']:.3g} |")
        w("\n![time per call against threads](figures/bench_threads.png)\n")
    w("## Batched evaluation (fast path, one launch per batch)\n")
    w(f"| batch | CPU evals/s | {gname} evals/s |")
    w("|---|---|---|")
    for B in gpu["batched_fast"]:
        cb = cpu["batched_fast"].get(B)
        w(f"| {int(B):,} | {cb['evals_per_s']:.3g} | {gpu['batched_fast'][B]['evals_per_s']:.3g} |" if cb else
          f"| {int(B):,} | – | {gpu['batched_fast'][B]['evals_per_s']:.3g} |")
    w("\n![batched evaluations](figures/bench_batch.png)\n")
    w("## Correctness at speed\n")
    ref = cpu.get("agreement_points")
    if ref and gpu.get("agreement_points"):
        dv, dg = agreement(gpu["agreement_points"], ref)
        w(f"- {gname} vs CPU, float64, −2 ln L and gradient of the general path at 4 random parameter points: "
          f"max relative difference {dv:.1e} (value), {dg:.1e} (gradient, relative to its largest component).")
    if cpu32 and ref:
        dv, dg = agreement(cpu32["agreement_points"], ref)
        w(f"- float32 vs float64 on the CPU: {dv:.1e} (value), {dg:.1e} (gradient). float32 timings (CPU): value "
          f"{fmt(cpu32['value']['median_ms'])}, value + gradient {fmt(cpu32['value_and_grad']['median_ms'])}.")
    if gpu32 and ref:
        dv, dg = agreement(gpu32["agreement_points"], ref)
        w(f"- float32 on the {gname} vs float64 on the CPU: {dv:.1e} (value), {dg:.1e} (gradient). float32 timings "
          f"({gname}): value {fmt(gpu32['value']['median_ms'])}, value + gradient "
          f"{fmt(gpu32['value_and_grad']['median_ms'])}, fast {fmt(gpu32['fast_value']['median_ms'])}.")
    w("- The fast path equals the general path to 10⁻¹² on random points (tests; measured 2 × 10⁻¹⁵); the stacked, "
      "custom-derivative general path equals plain autodiff of the unstacked direct route (tests).")
    w("")
    notes = ROOT / "benchmarks" / "NOTES.md"
    if notes.exists():
        L.append(notes.read_text())
    (ROOT / "docs" / "benchmarks.md").write_text("\n".join(L) + "\n")
    try:
        from matplotlib.figure import Figure

        fig = Figure(figsize=(6.4, 4.4))
        ax = fig.add_subplot()
        for res, lab in ((cpu, "2-core CPU"), (gpu, gname)):
            Bs = sorted(int(b) for b in res["batched_fast"])
            ax.loglog(Bs, [res["batched_fast"][str(b)]["evals_per_s"] for b in Bs], "o-", label=lab)
        ax.set_xlabel("batch size (parameter points per launch)")
        ax.set_ylabel("−2 ln L evaluations per second (fast path)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(ROOT / "docs" / "figures" / "bench_batch.png", dpi=120)
        if threads:
            fig = Figure(figsize=(6.4, 4.4))
            ax = fig.add_subplot()
            ts = [t for t, _ in threads]
            for key, lab in (("value", "general path, value"), ("value_and_grad", "general path, value + gradient"),
                             ("fast_value", "fast path, value")):
                ax.semilogy(ts, [r[key]["median_ms"] for _, r in threads], "o-", label=lab)
            ax.set_xticks(ts)
            ax.set_xlabel("CPU threads (taskset)")
            ax.set_ylabel("time per call [ms]")
            ax.legend()
            fig.tight_layout()
            fig.savefig(ROOT / "docs" / "figures" / "bench_threads.png", dpi=120)
    except ImportError:
        pass


if __name__ == "__main__":
    sys.exit(main())
