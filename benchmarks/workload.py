"""The "paper" benchmark workload (the paper's Sec. on performance; the targets' table in
docs/benchmarks.md), and reduced variants of it.

9 reweighted signal spectra (pp, pep, hep, 7Be 384, 7Be 862, 8B, 13N, 15O, 17F), each with its
own response matrix of n_T recoil bins x n_obs observable bins; a neutrino-energy grid of n_E
points per continuum; P_ee recomputed every call from (sin2_theta12, dm2_21) with production-region
averaging over n_r radial zones; 9 background templates; 25 free parameters:
eps_ee_L, eps_ee_R, eps_tautau_L, eps_tautau_R, mu_nu, sin2_theta12, dm2_21, 9 signal
normalisations (one per reweighted spectrum) and 9 background rates.
"""

from __future__ import annotations

from nuejax.detector.backgrounds import BACKGROUNDS as BACKGROUND_KINDS
from nuejax.detector.backgrounds import background_template
from nuejax.detector.response import ResponseParams, quenching_table, unit_bin_edges
from nuejax.io.borexino import packaged_borexino_shape
from nuejax.model import AddTemplates, Exposure, KernelFold, Model, SolarSignals
from nuejax.model.borexino_like import DEFAULT_BACKGROUND_RATES, default_parameters, signal_component
from nuejax.physics.solar import SUBCOMPONENT_NAMES, flux, split_subcomponent

import jax.numpy as jnp
import numpy as np

BACKGROUNDS = tuple(DEFAULT_BACKGROUND_RATES) + ("214Pb",)
FREE = ("eps_ee_L", "eps_ee_R", "eps_tautau_L", "eps_tautau_R", "mu_nu", "sin2_theta12", "dm2_21")
PAPER_DIMS = dict(n_T=2000, n_obs=1000, n_E=1000)
QUICK_DIMS = dict(n_T=200, n_obs=200, n_E=200)
#: The injected point of the benchmarks' Asimov data, and the displaced start of their fits.
INJECTED = dict(eps_ee_L=0.05, mu_nu=3.0)
FIT_START = {"eps_ee_L": 0.0, "mu_nu": 1.0, "norm_pp": 0.98, "norm_7Be_862": 1.04, "rate_210Bi": 15.0,
             "sin2_theta12": 0.30, "dm2_21": 7.3}


def _template(b, obs_edges, response, table):
    kind, args = BACKGROUND_KINDS[b]
    return background_template(b, obs_edges, response, table,
                               shape=packaged_borexino_shape(args[0]) if kind == "file" else None)


def build(n_T: int, n_obs: int, n_E: int, dtype=None) -> Model:
    obs_edges = unit_bin_edges(50, 50 + n_obs - 1, dtype=dtype)
    table = quenching_table(dtype=dtype)
    response = ResponseParams()
    norms = {s: "norm_" + s for s in SUBCOMPONENT_NAMES}
    sigs = tuple(signal_component(s, obs_edges, norm=norms[s], response=response, table=table, n_T=n_T, n_E=n_E,
                                  dtype=dtype) for s in SUBCOMPONENT_NAMES)
    templates = np.stack([_template(b, obs_edges, response, table) for b in BACKGROUNDS])
    params = default_parameters(SUBCOMPONENT_NAMES, BACKGROUNDS, norms).release(*FREE)
    for label in SUBCOMPONENT_NAMES:  # each spectrum's normalisation carries its B16 flux uncertainty
        params = params.update("norm_" + label, fixed=False, constraint=(1.0, flux(split_subcomponent(label)[0])[1]))
    dt = sigs[0].kernel.dtype
    stages = (SolarSignals.create(sigs, params), KernelFold.create(sigs),
              AddTemplates(jnp.asarray(templates, dtype=dt), tuple("rate_" + b for b in BACKGROUNDS)),
              Exposure(jnp.ones(n_obs, dtype=dt), 1431.6 * 0.713))
    model = Model.create(stages, params, obs_edges=obs_edges, check_shape=False)
    assert len(model.parameters.free_names) == 25, model.parameters.free_names
    return model


def dims(model: Model) -> dict:
    sigs = model.signals
    return {
        "n_sig": len(sigs),
        "n_lines": sum(1 for s in sigs if s.source.is_line),
        "n_T": int(sigs[0].t_mid.shape[0]),
        "n_obs": model.n_obs,
        "n_E": int(next(s.source.energies.shape[0] for s in sigs if not s.source.is_line)),
        "n_bkg": len(model.stage(AddTemplates).names),
        "n_r": int(sigs[0].source.profile.n_e.shape[0]),
        "n_free": len(model.parameters.free_names),
    }


def toy_parser(description: str, n_toys: int):
    """The command-line options the toy benchmarks share: --n-toys, --n-T, --seed, --json."""
    import argparse

    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--n-toys", type=int, default=n_toys)
    ap.add_argument("--n-T", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", default=None, help="write the numbers to this file")
    return ap


def mu_free_fast_model(n_T: int):
    """The default model on ``n_T`` recoil bins with mu_nu released (it can sit on its bound), fast path."""
    from nuejax.model import borexino_like_model, fast_model

    m = borexino_like_model(n_T=n_T)
    return fast_model(m.with_parameters(m.parameters.release("mu_nu")))
