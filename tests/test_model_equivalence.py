"""The model pipeline equals the model classes it replaced (SpectralModel, FastModel,
FloatingResponseModel, TemplateModel): -2 ln L and its gradient at random parameter points, to
1e-12 relative, for every configuration that existed, against numbers recorded with those classes
(``tests/data/model_equivalence.json``, written by ``tests/record_model_equivalence.py`` at the
commit it names, before the redesign; the same builder calls make the same configurations now)."""
import functools
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nuejax.model import Model

FIXTURE = Path(__file__).parent / "data" / "model_equivalence.json"
#: every configuration that existed before the pipeline redesign (tests/record_model_equivalence.py)
NAMES = ("diagonal_general", "diagonal_fast", "general_nsi_general", "general_nsi_fast",
         "general_nsi_propagation_daynight", "floating_general", "floating_fast_transform", "floating_exact_midpoint",
         "phase3_fast", "phase3_general_nsi")
SMALL = dict(n_T=100, window=(150, 450), signals=("7Be_862", "pep", "13N"), backgrounds=("210Bi", "85Kr", "210Po"))
#: configurations whose test takes more than 5 s on 2 cores (a minute or more for the last three):
#: the slow job
SLOW = {"diagonal_general", "diagonal_fast", "general_nsi_fast", "floating_general",
        "general_nsi_propagation_daynight", "phase3_fast", "phase3_general_nsi"}
RTOL = 1e-12


@functools.cache
def _diag():
    from nuejax.model import borexino_like_model

    m = borexino_like_model(**SMALL)
    return m.with_parameters(m.parameters.release("eps_ee_L", "eps_ee_R", "eps_tautau_L", "mu_nu", "sin2_theta12",
                                                  "dm2_21"))


@functools.cache
def _general():
    from nuejax.model import borexino_like_model

    m = borexino_like_model(**SMALL, nsi=("eps_etau_L_re", "eps_etau_L_im", "eps_emu_R_re"), mediators=("zprime", "phi"))
    return m.with_parameters(m.parameters.release("eps_ee_L", "eps_etau_L_re", "eps_etau_L_im", "eps_emu_R_re",
                                                  "mu_nu", "zprime_coupling", "phi_coupling", "sin2_theta12"))


@functools.cache
def _phase3():
    from nuejax.analyses.borexino import Phase3Choices, borexino_phase3_model

    return borexino_phase3_model(Phase3Choices(n_T=60))


def build(name: str) -> Model:
    """The configuration ``name``, built as tests/record_model_equivalence.py built it."""
    from nuejax.detector.transforms import ResponseTransform
    from nuejax.model import Parameter, borexino_like_model, fast_model, floating_response_model

    fixed_osc = lambda m: m.with_parameters(m.parameters.fix("sin2_theta12", "dm2_21"))  # noqa: E731
    if name == "diagonal_general":
        return _diag()
    if name == "diagonal_fast":
        return fast_model(fixed_osc(_diag()))
    if name == "general_nsi_general":
        return _general()
    if name == "general_nsi_fast":
        g = _general()
        return fast_model(g.with_parameters(g.parameters.fix("sin2_theta12")))
    if name == "general_nsi_propagation_daynight":
        m = borexino_like_model(**SMALL, nsi=("eps_etau_L_re",), propagation_nsi=True, day_night="average")
        return m.with_parameters(m.parameters.release("eps_etau_L_re", "eps_ee_R"))
    if name == "floating_general":
        return floating_response_model(_diag(), fast=False)
    if name == "floating_fast_transform":
        edges = np.asarray(_diag().obs_edges)
        tr = ResponseTransform.create(edges, edges[20:-20:2], scale="np_scale", offset="np_offset")
        tp = (Parameter("np_scale", 1.0, 0.98, 1.02), Parameter("np_offset", 0.0, -3.0, 3.0))
        return floating_response_model(fixed_osc(_diag()), fast=True, transform=tr, transform_params=tp)
    if name == "floating_exact_midpoint":
        return floating_response_model(fixed_osc(_diag()), fast=False, fold="exact", quadrature="midpoint")
    if name == "phase3_fast":
        m = _phase3()[0]
        return m.with_parameters(m.parameters.release("eps_ee_L", "eps_ee_R", "mu_nu"))
    if name == "phase3_general_nsi":
        from nuejax.analyses.borexino import Phase3Choices, borexino_phase3_model

        m = borexino_phase3_model(Phase3Choices(n_T=60, general_nsi=("eps_etau_L_re",)), calibration=_phase3()[2],
                                  fast=False)[0]
        return m.with_parameters(m.parameters.release("eps_ee_L", "eps_etau_L_re", "mu_nu"))
    raise KeyError(name)


_vg = jax.jit(jax.value_and_grad(lambda m, p, d: m.nll(p, d), argnums=1))


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in NAMES])
def test_pipeline_equals_the_recorded_model_class(name):
    rec = json.loads(FIXTURE.read_text())["configurations"][name]
    model = build(name)
    assert list(model.parameters.names) == rec["names"] and list(model.parameters.free_names) == rec["free"]
    data = jnp.asarray(rec["data"])
    for row in rec["rows"]:
        v, g = _vg(model, model.parameters.values(row["point"]), data)
        assert abs(float(v) / row["nll"] - 1) < RTOL, (name, float(v), row["nll"])
        ref = np.array([row["grad"][k] for k in rec["free"]])
        got = np.array([float(g[k]) for k in rec["free"]])
        # relative to the gradient's scale: a component that cancels to ~0 has no relative precision
        assert np.max(np.abs(got - ref)) <= RTOL * np.max(np.abs(ref)) * 10, (name, got, ref)
