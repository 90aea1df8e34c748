"""`nuejax rates`: JSON contract, options, errors, and the SM rates against the literature."""

import json
import subprocess
import sys

import pytest

import nuejax
from nuejax.cli import DEFAULT_OUT, build_parser, main
from nuejax.physics import NewPhysics, binned_recoil_spectrum, build_source, component_rates, uniform_recoil_edges
from nuejax.physics.spectra import rate_per_day_factor

KEYS = ["pp", "pep", "hep", "7Be", "8B", "13N", "15O", "17F", "CNO"]

# Borexino, Nature 562, 505 (2018), Table 1: expected rates [cpd/100 t] for B16 and MSW-LMA,
# high (GS98) and low (AGSS09met) metallicity, with their quoted uncertainties.
BOREXINO_EXPECTED = {
    "gs98": {"pp": (131.1, 1.4), "7Be": (47.9, 2.8), "pep": (2.74, 0.04), "CNO": (4.92, 0.78)},
    "agss09": {"pp": (132.2, 1.4), "7Be": (43.7, 2.5), "pep": (2.78, 0.04), "CNO": (3.52, 0.52)},
}


@pytest.fixture(scope="module")
def sm_rates():
    return {m: component_rates(solar_model=m) for m in ("gs98", "agss09")}


@pytest.mark.parametrize("model", ["gs98", "agss09"])
def test_sm_rates_agree_with_borexino_expectations(sm_rates, model):
    for key, (expected, sigma) in BOREXINO_EXPECTED[model].items():
        assert abs(sm_rates[model][key] - expected) < sigma, (model, key, sm_rates[model][key])


def test_cno_is_sum_and_json_contract(capsys, sm_rates):
    assert main(["rates", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert list(out) == KEYS
    assert out["CNO"] == pytest.approx(out["13N"] + out["15O"] + out["17F"], rel=1e-14)
    assert out == pytest.approx(sm_rates["gs98"], rel=1e-12)


@pytest.mark.slow
def test_options_change_rates_in_the_expected_direction(capsys):
    main(["rates", "--json", "--tree"])
    tree = json.loads(capsys.readouterr().out)
    main(["rates", "--json", "--eps-ee-L", "0.1"])
    nsi = json.loads(capsys.readouterr().out)
    main(["rates", "--json", "--threshold", "0.2"])
    th = json.loads(capsys.readouterr().out)
    main(["rates", "--json", "--threshold", "0.2", "--mu-nu", "3"])  # 3e-11 mu_B
    mm = json.loads(capsys.readouterr().out)
    base = component_rates()
    assert tree["7Be"] > base["7Be"]  # BKS corrections lower the nu_e rate by ~3 %
    assert nsi["7Be"] > base["7Be"]  # eps_ee^L > 0 raises g_L^e
    # threshold: equals the binned-spectrum route summed over 1 keV bins above 0.2 MeV
    pp = build_source("pp")
    bins = binned_recoil_spectrum(pp, uniform_recoil_edges(0.4, 400))
    assert th["pp"] == pytest.approx(float(rate_per_day_factor(pp) * bins[200:].sum()), rel=1e-5)
    assert th["7Be"] < base["7Be"]
    assert all(mm[k] > th[k] for k in KEYS)
    expected = component_rates(NewPhysics(mu_nu=3.0), threshold=0.2)
    assert mm == pytest.approx(expected, rel=1e-12)
    # 3e-11 mu_B (not 3 mu_B): a visible but modest increase above 0.2 MeV (~5 % for 7Be)
    assert 1.01 < mm["7Be"] / th["7Be"] < 1.2


def test_table_output_and_errors(capsys):
    assert main(["rates"]) == 0
    text = capsys.readouterr().out
    assert "counts/(day·100 t)" in text and "CNO" in text and "B16-GS98" in text
    assert main(["rates", "--mu-nu", "3"]) == 2
    assert "infinite rate at zero threshold" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["rates", "--solar-model", "bp05"])


def test_console_script_runs():
    out = subprocess.run([sys.executable, "-m", "nuejax.cli", "rates", "--json"], capture_output=True, text=True, check=True)
    assert set(json.loads(out.stdout)) == set(KEYS)


def test_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"nuejax {nuejax.__version__}"


BAD_INPUTS = [
    (["rates", "--threshold", "nan"], "--threshold", "must be a finite number, got 'nan'"),
    (["rates", "--threshold", "inf"], "--threshold", "must be a finite number"),
    (["rates", "--threshold", "-0.1"], "--threshold", "must be >= 0"),
    (["rates", "--threshold", "abc"], "--threshold", "expected a number, got 'abc'"),
    (["rates", "--mu-nu", "nan"], "--mu-nu", "must be a finite number"),
    (["rates", "--mu-nu", "-3"], "--mu-nu", "must be >= 0"),
    (["rates", "--threshold", "0.2", "--mu-nu", "3e-11"], "--mu-nu",
     "looks like a value in Bohr magnetons; --mu-nu is in units of 1e-11 mu_B (did you mean --mu-nu 3?)"),
    (["rates", "--eps-ee-L", "nan"], "--eps-ee-L", "must be a finite number"),
    (["rates", "--eps-tautau-R=-inf"], "--eps-tautau-R", "must be a finite number"),
    (["demo", "--n-T", "0"], "--n-T", "must be a positive integer, got '0'"),
    (["demo", "--n-T", "-5"], "--n-T", "must be a positive integer"),
    (["injection", "--n-T", "nan"], "--n-T", "expected a positive integer, got 'nan'"),
    (["injection", "--n-T", "2.5"], "--n-T", "expected a positive integer"),
    (["closure", "--n-T", "25,33"], "--n-T", "each recoil binning must divide 8000, got 33"),
    (["closure", "--n-T", "25,0"], "--n-T", "must be a positive integer"),
]


@pytest.mark.parametrize("argv, flag, message", BAD_INPUTS, ids=[" ".join(a) for a, _, _ in BAD_INPUTS])
def test_bad_numeric_options_are_argparse_errors_naming_the_flag(capsys, argv, flag, message):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}: " in err and message in err, err


def test_negative_couplings_and_zero_mu_nu_are_accepted():
    args = build_parser().parse_args(["rates", "--eps-ee-L", "-0.1", "--eps-mumu-R=-1e-3", "--mu-nu", "0"])
    assert (args.eps_ee_L, args.eps_mumu_R, args.mu_nu) == (-0.1, -1e-3, 0.0)


@pytest.mark.parametrize("command", ["closure", "demo", "injection"])
def test_outputs_go_to_nuejax_output_or_out(command):
    parse = build_parser().parse_args
    assert DEFAULT_OUT == "nuejax_output"
    assert parse([command]).out == "nuejax_output"
    assert parse([command, "--out", "elsewhere"]).out == "elsewhere"
    assert parse([command, "--outdir", "elsewhere"]).out == "elsewhere"  # alias kept


@pytest.mark.parametrize("command, module, function", [("demo", "nuejax.demo", "run_demo"),
                                                       ("injection", "nuejax.validation.injection",
                                                        "run_injection_recovery")])
def test_model_commands_hand_the_output_folder_on(monkeypatch, command, module, function):
    """The commands pass ./nuejax_output (or --out) to the code that writes (run stubbed: no model build)."""
    import importlib

    seen = []

    def stub(outdir, **kw):
        seen.append(outdir)
        raise RuntimeError("stub")

    monkeypatch.setattr(importlib.import_module(module), function, stub)
    for argv, expected in (([command], "nuejax_output"), ([command, "--out", "x/y"], "x/y")):
        with pytest.raises(RuntimeError, match="stub"):
            main(argv + ["--json"])
        assert seen[-1] == expected


def test_mu_nu_help_states_the_unit(capsys):
    with pytest.raises(SystemExit):
        main(["rates", "--help"])
    assert "units of 1e-11 Bohr magnetons" in " ".join(capsys.readouterr().out.split())
