"""`nuejax rates`: JSON contract, options, errors, and the SM rates against the literature."""

import json
import subprocess
import sys

import pytest

from nuejax.cli import main
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


def test_options_change_rates_in_the_expected_direction(capsys):
    main(["rates", "--json", "--tree"])
    tree = json.loads(capsys.readouterr().out)
    main(["rates", "--json", "--eps-ee-L", "0.1"])
    nsi = json.loads(capsys.readouterr().out)
    main(["rates", "--json", "--threshold", "0.2"])
    th = json.loads(capsys.readouterr().out)
    main(["rates", "--json", "--threshold", "0.2", "--mu-nu", "3e-11"])
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
    expected = component_rates(NewPhysics(mu_nu=3e-11), threshold=0.2)
    assert mm == pytest.approx(expected, rel=1e-12)


def test_table_output_and_errors(capsys):
    assert main(["rates"]) == 0
    text = capsys.readouterr().out
    assert "counts/(day·100 t)" in text and "CNO" in text and "B16-GS98" in text
    assert main(["rates", "--mu-nu", "3e-11"]) == 2
    assert "infinite rate at zero threshold" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["rates", "--solar-model", "bp05"])


def test_console_script_runs():
    out = subprocess.run([sys.executable, "-m", "nuejax.cli", "rates", "--json"], capture_output=True, text=True, check=True)
    assert set(json.loads(out.stdout)) == set(KEYS)
