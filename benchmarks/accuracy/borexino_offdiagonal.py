"""An off-diagonal NSI example on the Borexino Phase-III open data: the 2-D region of
(eps^L_ee, Re eps^L_etau) and the 1-D interval of Re eps^L_etau, at detection only.

Run: python benchmarks/accuracy/borexino_offdiagonal.py [--json out.json] [--figure docs/figures/borexino_eps_etau.png]
(about 6 minutes on 2 CPU cores)

The model is the one of `nuejax borexino` with Phase3Choices(general_nsi=("eps_etau_L_re",)): the
reweighted physics becomes a general-case model (the trace form of nuejax.model.flavour, on the
fast path), the solar rates are constrained to the SSM as in the analysis' NSI step, and
eps^L_ee, Re eps^L_etau are free (Im eps^L_etau = 0; eps^R = 0; NSI act at detection only).
"""

import argparse
import json
import time
import warnings

import numpy as np

EE_GRID = np.linspace(-1.75, 0.35, 22)
ETAU_GRID = np.linspace(-0.9, 0.9, 19)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", default=None, help="write the numbers to this file")
    ap.add_argument("--figure", default=None, help="write the 2-D region to this PNG")
    a = ap.parse_args(argv)

    import nuejax

    nuejax.enable_x64()
    warnings.simplefilter("ignore")
    from nuejax.analyses.borexino import Phase3Choices, borexino_phase3_model, ssm_constrained
    from nuejax.inference import newton_fit, profile_scan, profile_scan_2d

    t0 = time.perf_counter()
    model, data, _ = borexino_phase3_model(Phase3Choices(general_nsi=("eps_etau_L_re",)))
    counts = np.asarray(data.counts)
    m = ssm_constrained(model)
    m = m.with_parameters(m.parameters.release("eps_ee_L", "eps_etau_L_re"))
    t_build = time.perf_counter() - t0
    fit = newton_fit(m, counts, one_sided=False)
    s1 = profile_scan(m, counts, "eps_etau_L_re", ETAU_GRID, global_fit=fit, n_iter=40)
    s2 = profile_scan_2d(m, counts, ("eps_ee_L", "eps_etau_L_re"), EE_GRID, ETAU_GRID, global_fit=fit, n_iter=40,
                         chunk=38)
    iv = s1.interval(0.9)
    out = dict(
        best=dict(eps_ee_L=float(fit.params["eps_ee_L"]), eps_etau_L_re=float(fit.params["eps_etau_L_re"])),
        fit_valid=bool(fit.valid), twice_nll=float(fit.fval),
        eps_etau_L_re_interval_90=[iv.lower, iv.upper], eps_etau_L_re_regions_90=s1.regions(0.9),
        convention=iv.convention, scan_1d=dict(values=[float(v) for v in s1.values],
                                               delta_chi2=[float(v) for v in s1.delta_chi2]),
        region_2d_90=dict(x=[float(v) for v in EE_GRID], y=[float(v) for v in ETAU_GRID],
                          delta_chi2=np.asarray(s2.delta_chi2).tolist(), threshold=4.605,
                          converged=int(np.sum(s2.converged)), points=int(np.size(s2.converged))),
        seconds=dict(build=t_build, total=time.perf_counter() - t0))
    print(json.dumps({k: v for k, v in out.items() if k not in ("scan_1d", "region_2d_90")}, indent=1))
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(out, fh, indent=1)
    if a.figure:
        from matplotlib.figure import Figure

        fig = Figure(figsize=(5.2, 4.2))
        ax = fig.add_subplot()
        z = np.asarray(s2.delta_chi2).T
        ax.contourf(EE_GRID, ETAU_GRID, z, levels=[0, 2.279, 4.605], colors=["#3b7dd8", "#a8c8f0"])
        ax.contour(EE_GRID, ETAU_GRID, z, levels=[2.279, 4.605], colors="k", linewidths=0.8)
        ax.plot(out["best"]["eps_ee_L"], out["best"]["eps_etau_L_re"], "k+")
        ax.set_xlabel(r"$\varepsilon^L_{ee}$")
        ax.set_ylabel(r"Re $\varepsilon^L_{e\tau}$")
        ax.set_title("Borexino Phase III open data: 68 / 90 % CL (Wilks, 2 dof)", fontsize=9)
        fig.tight_layout()
        fig.savefig(a.figure, dpi=120)


if __name__ == "__main__":
    main()
