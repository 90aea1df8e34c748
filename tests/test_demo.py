"""The main job: `nuejax demo --json` (reduced recoil grid to keep the test quick), and its plots."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from nuejax.plotting import parameter_label, plot_spectrum


@pytest.mark.slow
def test_demo_json_recovers_injection_and_writes_outputs(tmp_path):
    # in a fresh process, as a user runs it: twice in CI, XLA:CPU aborted while compiling the demo's
    # scan inside a test worker that had run the slow tests before it (never in a fresh process)
    run = subprocess.run([sys.executable, "-m", "nuejax", "demo", "--json", "--n-T", "200", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=1800)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout)
    for key in ("eps_ee_L_hat", "eps_ee_L_interval_90", "mu_nu_hat", "mu_nu_interval_90", "ms_per_call", "device"):
        assert key in out
    assert out["eps_ee_L_hat"] == pytest.approx(0.05, abs=0.01 * out["eps_ee_L_error"])
    assert out["mu_nu_hat"] == pytest.approx(3.0, abs=0.01 * out["mu_nu_error"])
    lo, hi = out["eps_ee_L_interval_90"]
    assert lo < 0.05 < hi
    lo, hi = out["mu_nu_interval_90"]
    assert out["mu_nu_regions_90"] == [[lo, hi]] and out["eps_ee_L_regions_90"] == [out["eps_ee_L_interval_90"]]
    # small mu_nu is fitted by the other eps_ee_L branch (g_L + eps ~ -g_L) within the 90 % level:
    # the profile has a second local minimum below mu_nu = 1.5 (the fit's second minimum), and the
    # region reaches the bound mu_nu = 0
    (best, *others) = out["mu_nu_branches"]
    assert best["value"] == pytest.approx(3.0, abs=0.1) and best["delta_chi2"] < 0.01
    assert len(others) == 1 and 0.0 <= others[0]["value"] < 1.5 and 1.0 < others[0]["delta_chi2"] < 2.706
    assert lo is None and 3.0 < hi and "lower end open" in out["mu_nu_interval_convention"]
    # one-sided limit (Delta chi^2 = 1.642) lies between the best fit and the two-sided upper end (2.706)
    assert out["mu_nu_unit"] == "1e-11 mu_B"
    assert out["mu_nu_hat"] < out["mu_nu_upper_limit_90"] < hi
    # the printed errors of mu_nu are the profile's: asymmetric (its signal goes as mu_nu^2), the
    # Hessian's symmetric error between them
    plo, phi = out["profile_errors"]["mu_nu"]
    assert -plo > out["mu_nu_error"] > phi > 0
    assert "two-sided" in out["eps_ee_L_interval_convention"] and "2.706" in out["mu_nu_interval_convention"]
    assert "1.642" in out["mu_nu_upper_limit_convention"]
    assert out["fast_vs_general_max_rel_diff"] < 1e-12
    assert out["ms_per_call"] > 0 and out["device"].startswith("cpu")
    assert json.loads((tmp_path / "summary.json").read_text())["eps_ee_L_hat"] == out["eps_ee_L_hat"]
    for f in ("spectrum.png", "profile_eps_ee_L.png", "profile_mu_nu.png"):
        assert (tmp_path / f).stat().st_size > 10_000


def test_parameter_labels():
    assert parameter_label("eps_ee_L") == r"$\varepsilon^L_{ee}$"
    assert parameter_label("eps_tautau_R") == r"$\varepsilon^R_{\tau\tau}$"
    assert parameter_label("mu_nu") == parameter_label("mu_nu", "1e-11 mu_B") == r"$\mu_\nu$ [$10^{-11}\mu_B$]"
    assert parameter_label("rate_210Bi", "cpd/100t") == r"$^{210}$Bi rate [cpd/100 t]"
    assert parameter_label("something_else") == "something_else"


def _components(n, n_bins=40):
    x = np.linspace(1.0, 2.0, n_bins)
    return {f"c{i}": (100.0 + 10 * i) * x ** (-i % 3) for i in range(n)}


def test_spectrum_plot_colours_and_asimov_pulls(tmp_path):
    import matplotlib

    edges = np.arange(41.0)
    comps = _components(14)
    total = sum(comps.values())
    fig = plot_spectrum(edges, comps, total * (1 + 1e-12), min_fraction=0.0)
    top, pulls = fig.axes
    colours = [tuple(np.round(c.get_facecolor()[0], 6)) for c in top.collections if c.get_label() in comps]
    assert len(colours) == 14 and len(set(colours)) == 14  # every component its own colour
    assert pulls.get_ylim() == pytest.approx((-3.0, 3.0))  # Asimov rounding noise lies flat at 0
    data = total.copy()
    data[5] += 8 * np.sqrt(total[5])  # an 8 sigma bin: the range grows to show it, symmetric
    lo, hi = plot_spectrum(edges, comps, data).axes[1].get_ylim()
    assert lo == -hi and hi >= 8
    path = tmp_path / "s.png"
    fig = plot_spectrum(edges, comps, data, path=path)
    assert path.stat().st_size > 10_000
    assert not matplotlib.pyplot.fignum_exists(fig.number)  # saved figures are closed
    matplotlib.pyplot.close("all")


def test_plotting_never_switches_the_backend():
    code = ("import matplotlib, numpy as np, nuejax.plotting as p; "
            "p.plot_spectrum(np.arange(4.0), {'a': np.ones(3)}, np.ones(3)); print(matplotlib.get_backend())")
    env = dict(os.environ, MPLBACKEND="pdf")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "pdf"
