"""A fitted parameter on which -2 ln L is flat: the invalid fit's reason names it and says what
to do, and fit warns; a well-posed fit, and one ending at a bound with a vanishing curvature
(Asimov data at a mu^2 signal's zero), report nothing; the test is independent of units."""
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nuejax.inference import FlatParameterWarning, fit
from nuejax.inference.fitting import flat_parameters
from nuejax.model import AbstractModel, Parameter, ParameterSet


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class TwoRates(AbstractModel):
    """mu_j = b_j + mu^power s_j + x t_j."""

    b: jax.Array
    s: jax.Array
    t: jax.Array
    parameters: ParameterSet = dataclasses.field(metadata=dict(static=True))
    power: int = dataclasses.field(metadata=dict(static=True), default=1)

    def expected(self, p):
        return self.b + p["mu"] ** self.power * self.s + p["x"] * self.t


B, S = np.array([5.0, 10.0, 3.0]), np.array([1.0, 2.0, 0.5])
PARAMS = ParameterSet((Parameter("mu", 1.0, 0.0, 50.0), Parameter("x", 1.0, 0.0, 10.0)))


def test_flat_parameters_is_unit_free():
    """Flat: gradient x range and curvature x range^2 below FLAT_CHI2. A magnetic moment in units
    of mu_B (curvature 1e24, range 1e-10) beside a rate is not flat; a zero row is."""
    g = np.zeros(3)
    lo, hi = np.array([0.0, 0.0, 0.0]), np.array([1e-10, 10.0, 10.0])
    H = np.diag([1e24, 2.0, 0.0])
    assert flat_parameters(("mu", "rate", "x"), g, H, lo, hi) == ["x"]
    H[2, 2] = 1e-13  # -2 ln L moves by 1e-11 over x's range: flat
    assert flat_parameters(("mu", "rate", "x"), g, H, lo, hi) == ["x"]
    H[2, 2] = 1e-9  # by 1e-7: not flat
    assert flat_parameters(("mu", "rate", "x"), g, H, lo, hi) == []
    g[2] = 1e-3  # a slope is an effect
    assert flat_parameters(("mu", "rate", "x"), g, np.diag([1e24, 2.0, 0.0]), lo, hi) == []
    # unbounded: flat only where both are exactly zero
    assert flat_parameters(("a",), [0.0], [[1e-30]], [-np.inf], [np.inf]) == []
    assert flat_parameters(("a",), [0.0], [[0.0]], [-np.inf], [np.inf]) == ["a"]


def test_a_parameter_without_effect_is_named():
    model = TwoRates(jnp.asarray(B), jnp.asarray(S), jnp.zeros(3), PARAMS)  # x multiplies nothing
    with pytest.warns(FlatParameterWarning, match=r"flat in x .*model = model\.fix\('x'\)"):
        res = fit(model, np.array([7.0, 13.0, 3.0]))
    assert not res.valid and "flat in x" in res.reason
    # mu itself is still fitted: the root of the score sum_j s_j (n_j / (b_j + mu s_j) - 1)
    from scipy.optimize import brentq

    n = np.array([7.0, 13.0, 3.0])
    mu_hat = brentq(lambda m: float(np.sum(S * (n / (B + m * S) - 1.0))), 0.0, 10.0, xtol=1e-14)
    assert res.values["mu"] == pytest.approx(mu_hat, rel=1e-5)


@pytest.mark.parametrize("power", [1, 2])
def test_well_posed_fits_report_nothing(power, recwarn):
    model = TwoRates(jnp.asarray(B), jnp.asarray(S), jnp.array([0.5, 0.0, 2.0]), PARAMS, power)
    data = np.asarray(model.expected({"mu": 0.0, "x": 1.0}))  # Asimov at mu = 0: mu^2 gives a zero row there
    res = fit(model, data)
    assert res.valid, res.reason
    assert "flat in" not in res.reason
    assert not [w for w in recwarn if issubclass(w.category, FlatParameterWarning)]
