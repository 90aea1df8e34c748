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


def test_a_new_experiment_from_a_spec_and_files_recovers_injected_parameters(tmp_path, capsys):
    path = _experiment(tmp_path)
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
    assert 0.0 < prof["interval"][0] < 1.0 < prof["interval"][1] < 2.0
    # the profile's minimum is at the grid point nearest the truth
    assert prof["values"][int(np.argmin(prof["delta_chi2"]))] == pytest.approx(1.0)
    lim = res["questions"]["mu_nu_limit"]
    assert lim["best"] == pytest.approx(1.0, rel=1e-3) and 1.0 < lim["upper"] < prof["interval"][1] and "q~" in lim["convention"]
    assert json.loads((tmp_path / "out" / "results.json").read_text())["questions"]["best"] == fit
    # the command gives the same answers
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NonIntegerCountsWarning)
        capsys.readouterr()
        assert main(["run", str(path), "--json", "--out", str(tmp_path / "cli")]) == 0
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
      'num = 21}\ncl'), "analysis.toml:24: questions[1].poi", "'res_c' is not a free parameter"),
    (('kind = "upper_limit"', 'kind = "upper_limt"'), "analysis.toml:30: questions[2].kind", "is not one of"),
    (("version = 1\n", ""), "analysis.toml: (top level)", "'version' is a required property"),
    (('release = ["mu_nu"]', 'release = ["mu_nu", "mu_tau"]'), "analysis.toml:15: parameters.release",
     "'mu_tau' is not a parameter"),
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
