"""Analyses as data (nuejax.analyses.spec, `nuejax run`): a new experiment's analysis built from a
specification file and data files alone recovers injected parameters; bad specifications are
errors naming the file, the key and its line."""

import json
import textwrap
import warnings

import numpy as np
import pytest

from nuejax.analyses.spec import build_spec, load_spec, run_spec
from nuejax.cli import main
from nuejax.errors import InputError
from nuejax.model import NonIntegerCountsWarning

EDGES = [1.0, 3.0, 5.0, 7.0, 9.0, 11.0, 13.0, 15.0, 18.0, 21.0, 24.0, 27.0, 30.0]

SPEC = textwrap.dedent(f"""\
    version = 1
    name = "synthetic-xenon"

    [model]
    kind = "xenon"
    edges_kev = {EDGES}
    exposure_t_yr = 20.0
    efficiency_file = "efficiency.txt"
    background_file = "background.txt"

    [data]
    file = "counts.txt"

    [parameters]
    release = ["mu_nu"]

    [[questions]]
    name = "best"
    kind = "fit"

    [[questions]]
    name = "mu_nu_profile"
    kind = "profile"
    poi = "mu_nu"
    grid = {{start = 0.0, stop = 2.0, num = 21}}
    cl = 0.9

    [[questions]]
    name = "mu_nu_limit"
    kind = "upper_limit"
    poi = "mu_nu"
    grid = {{start = 0.0, stop = 2.0, num = 21}}
    """)


def _experiment(folder, spec=SPEC):
    """A synthetic xenon detector from files alone: an efficiency curve, a flat background, the spec."""
    e = np.linspace(0.5, 40.0, 60)
    np.savetxt(folder / "efficiency.txt", np.c_[e, 0.85 / (1.0 + np.exp(-(e - 2.0) / 0.4))],
               header="reconstructed energy [keV], efficiency")
    np.savetxt(folder / "background.txt", np.full(len(EDGES) - 1, 2.0), header="counts/(t yr) per bin")
    np.savetxt(folder / "counts.txt", np.zeros(len(EDGES) - 1))
    (folder / "analysis.toml").write_text(spec)
    return folder / "analysis.toml"


RANKING = textwrap.dedent("""
    [[questions]]
    name = "ranking"
    kind = "impacts"
    poi = "mu_nu"
    top = 4
    """)


@pytest.mark.slow
def test_a_new_experiment_from_a_spec_and_files_recovers_injected_parameters(tmp_path, capsys):
    path = _experiment(tmp_path, SPEC + RANKING)
    model, _ = build_spec(load_spec(path))
    # the constrained parameters (solar rates, resolution) at their constraints' centres
    truth = model.parameters.values(mu_nu=1.0, bkg_scale=1.2)
    np.savetxt(tmp_path / "counts.txt", np.asarray(model.expected(truth)))  # Asimov data of the truth
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NonIntegerCountsWarning)
        res = run_spec(path, tmp_path / "out")
    fit = res["questions"]["best"]
    assert fit["valid"] and fit["n_at_minimum"] >= 1
    for name, v in (("mu_nu", 1.0), ("bkg_scale", 1.2), ("norm_pp", 1.0)):
        assert fit["values"][name] == pytest.approx(v, rel=1e-3, abs=1e-4), name
    prof = res["questions"]["mu_nu_profile"]
    assert prof["converged"] == 21 and min(prof["delta_chi2"]) < 1e-3
    # the fit's profile-likelihood errors sit where the profile question's Delta chi2 crosses 1
    # (interpolated in sqrt(Delta chi2), linear for a parabola: the grid step exceeds the error)
    lo, hi = fit["profile_errors"]["mu_nu"]
    x, d = np.asarray(prof["values"]), np.sqrt(np.maximum(np.asarray(prof["delta_chi2"]), 0.0))
    k = int(np.argmin(d))
    assert fit["values"]["mu_nu"] + lo == pytest.approx(np.interp(1.0, d[:k + 1][::-1], x[:k + 1][::-1]), abs=0.003)
    assert fit["values"]["mu_nu"] + hi == pytest.approx(np.interp(1.0, d[k:], x[k:]), abs=0.003)
    assert 0.0 < prof["interval"][0] < 1.0 < prof["interval"][1] < 2.0
    # the profile's minimum is at the grid point nearest the truth
    assert prof["values"][int(np.argmin(prof["delta_chi2"]))] == pytest.approx(1.0)
    lim = res["questions"]["mu_nu_limit"]
    assert lim["best"] == pytest.approx(1.0, rel=1e-3) and 1.0 < lim["upper"] < prof["interval"][1] and "q~" in lim["convention"]
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    assert saved["questions"]["best"] == fit
    # the fast path answered: the oscillation parameters baked in at their values
    assert saved["baked"] == pytest.approx({"sin2_theta12": 0.308, "dm2_21": 7.49, "sin2_theta13": 0.02215,
                                            "sin2_theta23": 0.47})
    # the ranking: every other free parameter, impacts of both signs about the best fit, a figure
    rank = res["questions"]["ranking"]
    assert rank["kind"] == "impacts" and rank["poi_value"] == pytest.approx(fit["values"]["mu_nu"])
    assert set(rank["names"]) == set(fit["values"]) - {"mu_nu"} and rank["n_failed"] == 0
    top = rank["names"][0]
    assert rank["postfit"][top][0] * rank["postfit"][top][1] < 0
    assert (tmp_path / "out" / "ranking.png").stat().st_size > 0
    # the command gives the same answers (its fit question alone: the others are the same code)
    fit_only = tmp_path / "fit_only.toml"
    fit_only.write_text(SPEC[:SPEC.index('[[questions]]\nname = "mu_nu_profile"')])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NonIntegerCountsWarning)
        capsys.readouterr()
        assert main(["run", str(fit_only), "--json", "--out", str(tmp_path / "cli")]) == 0
    printed = capsys.readouterr()
    # --json: the JSON object alone on stdout, the progress on stderr
    assert json.loads(printed.out)["questions"]["best"]["valid"] and "best: fit" in printed.err
    cli = json.loads((tmp_path / "cli" / "results.json").read_text())
    assert cli["questions"]["best"]["values"] == pytest.approx(fit["values"], rel=1e-9)


@pytest.mark.parametrize("change, where, what", [
    (("exposure_t_yr = 20.0", "exposure_t_y = 20.0"), "analysis.toml:7: model.exposure_t_y", "did you mean 'exposure_t_yr'?"),
    (('efficiency_file = "efficiency.txt"', 'efficiency_file = "eff.txt"'), "analysis.toml:8: model.efficiency_file",
     "no such file"),
    (('poi = "mu_nu"\ngrid = {start = 0.0, stop = 2.0, num = 21}\ncl', 'poi = "res_c"\ngrid = {start = 0.0, stop = 2.0, '
      'num = 21}\ncl'), "analysis.toml:24: questions[1].poi", "'res_c' is not a parameter of this model (did you mean"),
    (('kind = "upper_limit"', 'kind = "upper_limt"'), "analysis.toml:30: questions[2].kind", "is not one of"),
    (("version = 1\n", ""), "analysis.toml: (top level)", "'version' is a required property"),
    (('release = ["mu_nu"]', 'release = ["mu_nu", "mu_tau"]'), "analysis.toml:15: parameters.release",
     "'mu_tau' is not a parameter"),
    (('release = ["mu_nu"]', 'release = ["mu_nu", "bkg_scal"]'), "analysis.toml:15: parameters.release",
     "'bkg_scal' is not a parameter of this model (did you mean 'bkg_scale'?)"),
    (("cl = 0.9", "cl = 90"), "analysis.toml:26: questions[1].cl", "90"),
    (("[data]", "[data\n"), "analysis.toml", "not valid TOML"),
])
def test_bad_specifications_name_the_file_the_key_and_the_line(tmp_path, change, where, what):
    assert change[0] in SPEC
    path = _experiment(tmp_path, SPEC.replace(*change, 1))
    with pytest.raises(InputError) as err:
        spec = load_spec(path)
        model, counts = build_spec(spec)
        run_spec(path)
    msg = str(err.value)
    assert str(tmp_path / where) in msg or msg.startswith(str(tmp_path / where)), msg
    assert what in msg, msg


def test_a_wrong_number_of_counts_names_the_data_file(tmp_path):
    path = _experiment(tmp_path)
    np.savetxt(tmp_path / "counts.txt", np.ones(5))
    with pytest.raises(InputError, match=r"analysis.toml:12: data.file: .*counts.txt: has 5 bins"):
        build_spec(load_spec(path))


def test_shipped_specs_validate_and_run_by_name():
    from nuejax.analyses.spec import shipped_specs

    names = shipped_specs()
    assert {"borexino_phase3_cno", "borexino_phase3_mu_nu", "borexino_phase3_nsi"} <= set(names)
    for name in names:
        spec = load_spec(name)  # a name, not a path: the shipped file
        assert spec["_file"].endswith(f"specs/{name}.toml") and spec["questions"]
    with pytest.raises(InputError, match="shipped specs: borexino_phase3_cno"):
        load_spec("borexino_phase3_cn")


def test_values_and_grid_are_exclusive(tmp_path):
    spec = SPEC.replace("grid = {start = 0.0, stop = 2.0, num = 21}\ncl", "values = [0.0, 1.0, 0.5]\ncl", 1)
    path = _experiment(tmp_path, spec)
    with pytest.raises(InputError, match=r"analysis.toml:25: questions\[1\].values: must increase"):
        run_spec(path)
    path = _experiment(tmp_path, SPEC.replace("cl = 0.9", "values = [0.0, 1.0]\ncl = 0.9", 1))
    with pytest.raises(InputError, match=r"analysis.toml:2\d: questions\[1\]: .*needs one of 'grid' or 'values'"):
        run_spec(path)


def test_a_key_of_a_sub_table_is_located_on_its_own_line(tmp_path):
    path = tmp_path / "bx.toml"
    path.write_text('version = 1\n\n[model]\nkind = "borexino_phase3"\n\n[model.choices]\nrebin = 4\nrebinn = 2\n\n'
                    '[data]\npackaged = "borexino_phase3"\n\n[[questions]]\nname = "fit"\nkind = "fit"\n')
    with pytest.raises(InputError, match=r"bx.toml:8: model.choices.rebinn: not a choice of the Phase-III analysis"):
        build_spec(load_spec(path))


def _rounded_asimov(tmp_path, spec=SPEC):
    path = _experiment(tmp_path, spec)
    model, _ = build_spec(load_spec(path))
    truth = model.parameters.values(mu_nu=1.0, bkg_scale=1.2)
    np.savetxt(tmp_path / "counts.txt", np.round(np.asarray(model.expected(truth))))  # integer counts
    return path, model


@pytest.mark.parametrize("argv, message", [
    (["--toys", "5"], "--poi NAME names the parameter of interest"),
    (["--poi", "mu_nu", "--grid", "2", "1", "5"], "--grid takes N"),
    (["--poi", "mu_nu", "--grid", "2"], "an automatic grid needs --grid N with N >= 3"),
    (["--poi", "mu_nu", "--data", "x.txt"], "a specification names its own data"),
])
def test_limits_of_a_spec_refuses_bad_options(tmp_path, argv, message, capsys):
    path = _experiment(tmp_path)
    with pytest.raises(SystemExit, match=message):
        main(["limits", str(path), *argv])


def test_limits_of_a_spec_names_a_parameter_that_is_not_free(tmp_path, capsys):
    path = _experiment(tmp_path)
    assert main(["limits", str(path), "--poi", "res_c", "--toys", "5", "--out", str(tmp_path / "o")]) == 2
    # the name came from the command line, not from a line of the file
    assert "nuejax limits --poi res_c: 'res_c' is not a parameter of this model" in capsys.readouterr().err
    assert main(["limits", str(path), "--poi", "eps_ee_L", "--toys", "5", "--out", str(tmp_path / "o")]) == 2
    assert "'eps_ee_L' is fixed by default: release it under [parameters]" in capsys.readouterr().err


def test_a_feldman_cousins_question_takes_only_its_keys(tmp_path):
    spec = SPEC + '\n[[questions]]\nname = "fc"\nkind = "feldman_cousins"\npoi = "mu_nu"\npoints = 5\nvalues = [0.0, 1.0]\n'
    with pytest.raises(InputError, match=r"questions\[3\].points: is the size of the automatic grid"):
        run_spec(_experiment(tmp_path, spec))
    spec = SPEC.replace('kind = "fit"', 'kind = "fit"\ntoys = 10')
    with pytest.raises(InputError, match=r"questions\[0\].toys: a question of kind 'fit' takes no 'toys'"):
        run_spec(_experiment(tmp_path, spec))


@pytest.mark.slow
def test_nuejax_limits_of_any_parameter_of_a_spec(tmp_path, capsys):
    """`nuejax limits SPEC --poi NAME`: a Feldman-Cousins interval on the spec's own model and
    data, equal to feldman_cousins called directly, close to the Wilks interval of the profile
    (integer counts of a 2700-event experiment: nearly Gaussian)."""
    from nuejax.inference import feldman_cousins, newton_fit, profile_scan

    path, _ = _rounded_asimov(tmp_path)
    capsys.readouterr()
    assert main(["limits", str(path), "--poi", "mu_nu", "--toys", "60", "--grid", "9", "--seed", "3", "--json",
                 "--out", str(tmp_path / "out")]) == 0
    res = json.loads(capsys.readouterr().out)
    fc = res["questions"]["mu_nu_feldman_cousins"]
    assert res["questions"]["fit"]["valid"] and fc["n_toys"] == 60 and len(fc["values"]) == 9
    lo, hi = fc["interval"]
    assert lo < fc["best"] < hi and lo < 1.0 < hi and fc["regions"] == [fc["interval"]]
    # the automatic grid spans the profile's Delta chi2 < 9 range: its ends are rejected
    assert not fc["accepted"][0] and not fc["accepted"][-1]
    # the same construction called directly
    model, counts = build_spec(load_spec(path))
    direct = feldman_cousins(model, counts, "mu_nu", np.asarray(fc["values"]), 60, key=3)
    np.testing.assert_allclose(fc["t_crit"], direct.t_crit, rtol=0, atol=1e-9)
    np.testing.assert_allclose(fc["interval"], direct.interval, rtol=0, atol=1e-9)
    # near the asymptotic (Wilks) interval: within a grid step (the critical values' Monte Carlo
    # error with 60 toys, about 0.5-1 in t, moves an end by ~0.03: t_obs rises by ~35 per unit of
    # mu_nu there; and the linear interpolation between grid points)
    best = newton_fit(model, counts, one_sided=False)
    wilks = profile_scan(model, counts, "mu_nu", np.linspace(fc["values"][0], fc["values"][-1], 81),
                         global_fit=best).interval(0.9)
    step = fc["values"][1] - fc["values"][0]
    assert abs(lo - wilks.lower) < step and abs(hi - wilks.upper) < step, (fc["interval"], wilks)
    # printed form
    assert main(["limits", str(path), "--poi", "mu_nu", "--toys", "60", "--grid", "9", "--seed", "3",
                 "--out", str(tmp_path / "out"), "--resume"]) == 0
    assert "90% CL Feldman-Cousins interval" in capsys.readouterr().out


def test_nuejax_run_prints_every_kind_of_answer(capsys):
    """`nuejax run` and `nuejax limits SPEC` print answers with one printer, a Feldman-Cousins
    answer included (it has no 'upper' of an upper limit)."""
    from nuejax.cli import _print_answer

    fc = {"kind": "feldman_cousins", "poi": "mu_nu", "cl": 0.9, "values": [0.5, 1.0, 1.5], "interval": [0.8, 1.2],
          "regions": [[0.8, 1.2]], "convention": "Feldman-Cousins (test)", "n_toys": 10, "best": 1.0}
    _print_answer("fc", fc)
    out = capsys.readouterr().out
    assert "fc: mu_nu 90% CL Feldman-Cousins interval [0.8, 1.2]" in out and "10 toys at each of 3 points" in out


def test_nuejax_run_prints_an_impacts_answer(capsys):
    from nuejax.cli import _print_answer
    from nuejax.inference import ImpactsResult

    r = ImpactsResult("mu_nu", 1.0, 0.2, ("bkg_scale", "norm_pp"), {"bkg_scale": None, "norm_pp": 0.5},
                      {"bkg_scale": None, "norm_pp": 0.9}, {"bkg_scale": None, "norm_pp": (-0.01, 0.02)},
                      {"bkg_scale": (-0.1, 0.08), "norm_pp": (-0.011, 0.019)}, {}, 10.0, 6, 0)
    _print_answer("ranking", {**r.to_dict(), "kind": "impacts", "figure": "out/ranking.png"})
    out = capsys.readouterr().out
    assert "ranking: impacts on mu_nu = 1 ± 0.2" in out and "figure: out/ranking.png" in out
    assert out.index("bkg_scale") < out.index("norm_pp") and "+0.08" in out and "+0.5" in out


# the synthetic experiment of SPEC (model, data, parameters) with other questions
MORE = SPEC[:SPEC.index("[[questions]]")].replace('name = "synthetic-xenon"', 'name = "synthetic-xenon-more"') + textwrap.dedent("""\
    [[questions]]
    name = "best"
    kind = "fit"

    [[questions]]
    name = "gof"
    kind = "goodness_of_fit"

    [[questions]]
    name = "mu_nu_profile"
    kind = "profile"
    poi = "mu_nu"
    grid = {start = 0.0, stop = 2.5, num = 51}

    [[questions]]
    name = "mu_nu_cls"
    kind = "cls"
    poi = "mu_nu"
    grid = {start = 0.1, stop = 4.0, num = 40}

    [[questions]]
    name = "region"
    kind = "region_2d"
    poi = "mu_nu"
    grid = {start = 0.0, stop = 2.5, num = 11}
    poi_y = "bkg_scale"
    values_y = [0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5]
    """)


@pytest.mark.slow
def test_goodness_of_fit_cls_and_2d_region_questions(tmp_path, capsys):
    path, model = _rounded_asimov(tmp_path, MORE)
    res = run_spec(path, tmp_path / "out")["questions"]
    best = res["best"]
    assert best["valid"]
    # the deviance, against a direct evaluation at the best fit (Baker & Cousins 1984)
    n = np.loadtxt(tmp_path / "counts.txt")
    mu = np.asarray(model.expected(model.parameters.values(**best["values"])))
    safe = np.where(n > 0, n, 1.0)
    dev = 2.0 * np.sum(mu - n + np.where(n > 0, n * np.log(safe / mu), 0.0))
    gof = res["gof"]
    assert gof["deviance"] == pytest.approx(dev, rel=1e-6) and gof["ndof"] == len(n) - len(best["values"])
    assert 0.0 < gof["p_chi2"] <= 1.0 and gof["p_toys"] is None
    # CLs: above the best fit, inside the grid, the expected band ordered
    cls = res["mu_nu_cls"]
    assert cls["method"] == "asymptotic" and best["values"]["mu_nu"] < cls["limit"] < 4.0
    band = [cls["expected"][k] for k in ("-2", "-1", "0", "1", "2")]
    assert all(a <= b for a, b in zip(band, band[1:]))
    # the 2-D region (2 dof) holds the best fit's neighbourhood and is wider in mu_nu than the
    # 1-D 90 % interval (threshold 4.605 against 2.706)
    reg, prof = res["region"], res["mu_nu_profile"]
    assert reg["converged"] == 11 * 7 and reg["ndof"] == 2 and reg["threshold"] == pytest.approx(4.605, abs=1e-3)
    d = np.array([[np.inf if v is None else v for v in row] for row in reg["delta_chi2"]])
    assert np.array_equal(np.asarray(reg["inside"]), d < reg["threshold"])
    assert reg["extent"][0][0] <= prof["interval"][0] + 0.25 and reg["extent"][0][1] >= prof["interval"][1] - 0.25
    ix = int(np.argmin(np.abs(np.asarray(reg["values_x"]) - best["values"]["mu_nu"])))
    iy = int(np.argmin(np.abs(np.asarray(reg["values_y"]) - best["values"]["bkg_scale"])))
    assert reg["inside"][ix][iy]
    # the grid starts at mu_nu's lower bound 0: nothing lies beyond that edge, so it is never open
    assert "x_low" not in reg["open_at"]
    assert set(reg["open_at"]) <= {"x_high", "y_low", "y_high"}
    # a Delta chi2 of the 2-D scan is a profile: at the grid's mu_nu values on the 1-D grid it is
    # never below the 1-D profile there (the 1-D profile minimises over bkg_scale too)
    p1 = dict(zip(np.round(prof["values"], 9), prof["delta_chi2"]))
    for i, x in enumerate(reg["values_x"]):
        assert np.nanmin(d[i]) >= p1[round(x, 9)] - 1e-6
    # printed
    from nuejax.cli import _print_answer

    for k in ("gof", "mu_nu_cls", "region"):
        _print_answer(k, res[k])
    out = capsys.readouterr().out
    assert "degrees of freedom" in out and "CLs (asymptotic)" in out and "2 dof" in out


@pytest.mark.parametrize("change, what", [
    (('poi_y = "bkg_scale"\n', ''), "needs 'poi_y'"),
    (('poi_y = "bkg_scale"', 'poi_y = "mu_nu"'), "must differ from 'poi'"),
    (('values_y = [0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5]', 'values_y = [1.0, 0.9]'), "values_y: must increase"),
    (('kind = "goodness_of_fit"', 'kind = "goodness_of_fit"\npoi = "mu_nu"'), "takes no 'poi'"),
])
def test_new_question_kinds_refuse_bad_keys(tmp_path, change, what):
    path = _experiment(tmp_path, MORE.replace(*change))
    with pytest.raises(InputError, match=what):
        run_spec(path)


@pytest.mark.parametrize("change, what", [
    (("grid = {start = 0.0, stop = 2.0, num = 21}\ncl = 0.9", "grid = {start = -1.0, stop = 2.0, num = 21}\ncl = 0.9"),
     r"questions\[1\].grid: mu_nu = -1 lies outside its bounds \[0, 100\]"),
    (('kind = "upper_limit"', 'kind = "cls"'), r"questions\[2\].grid: CLs tests values above the background-only point"),
    (('release = ["mu_nu"]', 'release = ["mu_nu"]\nfix = {bkg_scale = 1.0}'), None),
])
def test_questions_are_checked_before_anything_runs(tmp_path, change, what):
    spec = SPEC.replace(*change)
    if what is None:  # a parameter fixed by the spec itself is named as such
        spec += '\n[[questions]]\nname = "b"\nkind = "profile"\npoi = "bkg_scale"\nvalues = [0.5, 1.0]\n'
        what = r"questions\[3\].poi: 'bkg_scale' is fixed under \[parameters\] fix"
    with pytest.raises(InputError, match=what):
        run_spec(_experiment(tmp_path, spec), tmp_path / "out")
    assert not (tmp_path / "out" / "results.json").exists()  # nothing was fitted


def test_a_misspelt_key_is_named_before_the_required_one_it_hides(tmp_path):
    """'center' for 'centre' also leaves the required 'centre' missing: the unknown key is reported
    (with its did-you-mean), not the missing one."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from test_spec_templates import _write

    path, _ = _write(tmp_path, False)
    path.write_text(path.read_text().replace("gaussian = {centre = 1.0", "gaussian = {center = 1.0"))
    with pytest.raises(InputError, match=r"model.templates\[1\].gaussian.center: .*did you mean 'centre'"):
        load_spec(path)


def test_feldman_cousins_answers_warn_where_the_grid_is_too_coarse():
    from types import SimpleNamespace

    from nuejax.analyses.spec import _fc_warnings
    from nuejax.model import Parameter

    grid = np.array([0.0, 0.473, 0.946, 1.419, 1.892])
    fc = SimpleNamespace(accepted=[False, False, True, False, False], interval=(0.946, 0.946),
                         t_obs=[9.0, 2.91, 0.1, 4.0, 9.0], t_crit=[2.0, 1.93, 2.0, 2.1, 2.0],
                         t_crit_err=[0.1, 2.5, 0.1, 0.1, 0.1])
    w = " | ".join(_fc_warnings(fc, grid, 0.8641, Parameter("mu", 1.0, 0.0, 10.0)))
    assert "best fit 0.8641 lies outside the interval" in w and "rests on 1 grid point" in w
    assert "within the critical value's Monte Carlo error (e.g. 0.473)" in w
    fine = SimpleNamespace(accepted=[True, True, True, False, False], interval=(0.0, 0.946), t_obs=[1, 1, 0, 9, 9],
                           t_crit=[2, 2, 2, 2, 2], t_crit_err=[0.1] * 5)
    assert _fc_warnings(fine, grid, 0.5, Parameter("mu", 1.0, 0.0, 10.0)) == []  # grid[0] is the bound


PHYSICS = textwrap.dedent("""\
    [model.physics]
    nsi = ["eps_etau_L_re"]
    mediators = ["phi"]
    day_night = "night"
    latitude = "xenonnt"
    """)
LINES = 'signals = ["7Be_862", "pep"]\n'  # two lines: the general night-time evaluation is quick


@pytest.mark.parametrize("propagation", [False, True])
@pytest.mark.slow
def test_new_physics_in_a_spec_gives_the_model_built_in_python(tmp_path, propagation):
    """[model.physics] of a xenon spec: the same -2 ln L as xenon_model with the same options on the
    general path, at a point where every added parameter acts; the spec takes the fast path where
    it exists (not with NSI in propagation)."""
    from nuejax.model.xenon import xenon_model

    physics = PHYSICS + ("propagation_nsi = true\n" if propagation else "")
    spec = SPEC.replace("[data]", physics + "\n[data]", 1).replace('background_file = "background.txt"\n',
                                                                    'background_file = "background.txt"\n' + LINES)
    path = _experiment(tmp_path, spec)
    model, counts = build_spec(load_spec(path))
    e = np.loadtxt(tmp_path / "efficiency.txt")
    direct = xenon_model(EDGES, 20.0, efficiency=lambda x: np.interp(x, e[:, 0], e[:, 1]),
                         background=np.loadtxt(tmp_path / "background.txt"), signals=("7Be_862", "pep"),
                         nsi=("eps_etau_L_re",), mediators=("phi",), propagation_nsi=propagation, day_night="night",
                         latitude=42.45)
    baked = {p.name for p in model.baked}
    assert baked == (set() if propagation else {"sin2_theta12", "dm2_21", "sin2_theta13", "sin2_theta23", "phi_mass"})
    assert set(model.parameters.names) == set(direct.parameters.names) - baked
    assert {"eps_etau_L_re", "phi_coupling"} <= set(model.parameters.names)
    point = dict(eps_etau_L_re=0.4, eps_ee_L=0.1, phi_coupling=3e-6, mu_nu=0.5)
    counts = np.arange(len(EDGES) - 1, dtype=float) + 3.0
    a = float(model.nll(model.parameters.values(**point), counts))
    b = float(direct.nll(direct.parameters.values(**point), counts))
    assert np.isfinite(a) and a == pytest.approx(b, rel=1e-11)
    # the options act: without them -2 ln L differs at this point
    plain = xenon_model(EDGES, 20.0, efficiency=lambda x: np.interp(x, e[:, 0], e[:, 1]),
                        background=np.loadtxt(tmp_path / "background.txt"), signals=("7Be_862", "pep"))
    assert abs(a - float(plain.nll(plain.parameters.values(eps_ee_L=0.1, mu_nu=0.5), counts))) > 1e-3
    if propagation:  # no fast path to insist on
        with pytest.raises(InputError, match=r"model.fast: no fast path: NSI in propagation"):
            build_spec(load_spec(_experiment(tmp_path, spec.replace("[model.physics]", "fast = true\n\n[model.physics]"))))


@pytest.mark.parametrize("change, where, what", [
    ('nsi = ["eps_etau_L_re"]', "model.physics.nsi", "is not valid under any of the given schemas"),
    ('latitude = "xenonnt"', "model.physics", "unknown detector 'lngs'"),
    ('day_night = "night"', "model.physics.latitude", "needs day_night = 'night' or 'average'"),
    ('mediators = ["phi"]', "model.physics.mediators", "is not one of"),
])
def test_bad_physics_in_a_spec_names_the_key(tmp_path, change, where, what):
    wrong = {'nsi = ["eps_etau_L_re"]': 'nsi = ["eps_etau_L"]', 'latitude = "xenonnt"': 'latitude = "lngs"',
             'day_night = "night"': 'day_night = "day"', 'mediators = ["phi"]': 'mediators = ["scalar"]'}[change]
    spec = SPEC.replace("[data]", PHYSICS.replace(change, wrong) + "\n[data]", 1)
    path = _experiment(tmp_path, spec)
    with pytest.raises(InputError) as err:
        build_spec(load_spec(path))
    assert where in str(err.value) and what in str(err.value), str(err.value)


@pytest.mark.slow
def test_a_scintillator_spec_with_new_physics_gives_the_model_built_in_python(tmp_path):
    """kind = "scintillator": the paper's Borexino-like model with [model.physics]."""
    from nuejax.model.borexino_like import borexino_like_model

    kw = dict(exposure=500.0, window=(200, 400), n_T=100, signals=("pp", "7Be_862"), backgrounds=("210Bi", "85Kr"))
    (tmp_path / "scint.toml").write_text(textwrap.dedent("""\
        version = 1
        name = "scintillator"
        [model]
        kind = "scintillator"
        exposure_day_100t = 500.0
        window = [200, 400]
        n_T = 100
        signals = ["pp", "7Be_862"]
        backgrounds = ["210Bi", "85Kr"]
        [model.physics]
        mediators = ["zprime"]
        day_night = "night"
        [data]
        file = "counts.txt"
        [[questions]]
        name = "best"
        kind = "fit"
        """))
    np.savetxt(tmp_path / "counts.txt", np.full(201, 7.0))
    model, counts = build_spec(load_spec(tmp_path / "scint.toml"))
    direct = borexino_like_model(mediators=("zprime",), day_night="night", **kw)
    baked = {p.name for p in model.baked}  # the fast path
    assert baked == {"sin2_theta12", "dm2_21", "sin2_theta13", "sin2_theta23", "zprime_mass"}
    assert set(model.parameters.names) == set(direct.parameters.names) - baked
    point = dict(zprime_coupling=2e-6, eps_ee_R=0.2)
    a = float(model.nll(model.parameters.values(**point), counts))
    assert np.isfinite(a) and a == pytest.approx(float(direct.nll(direct.parameters.values(**point), counts)), rel=1e-12)


def test_a_scintillator_data_file_of_the_wrong_length_fails_before_the_model_is_built(tmp_path, monkeypatch):
    """The window fixes the bins: a data file of the wrong length is named before the slow build."""
    import nuejax.model.borexino_like as bl

    def never(**kw):
        raise AssertionError("the model was built")

    monkeypatch.setattr(bl, "borexino_like_model", never)
    (tmp_path / "s.toml").write_text(textwrap.dedent("""\
        version = 1
        [model]
        kind = "scintillator"
        window = [200, 400]
        [data]
        file = "counts.txt"
        [[questions]]
        name = "best"
        kind = "fit"
        """))
    np.savetxt(tmp_path / "counts.txt", np.ones(200))
    with pytest.raises(InputError, match=r"s.toml:6: data.file: .*has 200 bins.*201.*window \[200, 400\], ends included"):
        build_spec(load_spec(tmp_path / "s.toml"))


@pytest.mark.slow
def test_a_latitude_of_zero_reaches_the_model(tmp_path):
    """latitude = 0 (the equator) is a latitude, not a missing one: the night-time state differs from
    the default's (an earlier filter of falsy values dropped it)."""
    def nll_at(latitude):
        physics = PHYSICS.replace('latitude = "xenonnt"', f"latitude = {latitude}")
        spec = SPEC.replace("[data]", physics + "\n[data]", 1).replace('background_file = "background.txt"\n',
                                                                        'background_file = "background.txt"\n' + LINES)
        folder = tmp_path / str(latitude)
        folder.mkdir()
        model, _ = build_spec(load_spec(_experiment(folder, spec)))
        return float(model.nll(model.parameters.values(), np.arange(len(EDGES) - 1, dtype=float) + 3.0))

    equator, lngs = nll_at(0.0), nll_at(42.45)
    assert np.isfinite(equator) and equator != pytest.approx(lngs, rel=1e-9, abs=0.0)
