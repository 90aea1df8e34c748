"""A fitted parameter on which -2 ln L does not depend: the invalid fit's reason names it and
says what to do, and fit warns; a well-posed fit, and one ending at a bound with a vanishing
curvature (Asimov data at a mu^2 signal's zero), report nothing."""
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


def test_flat_parameters_reads_the_hessian_rows():
    H = np.array([[4.0, 0.0, 1.0], [0.0, 0.0, 0.0], [1.0, 0.0, 2.0]])
    assert flat_parameters(("a", "b", "c"), H) == ["b"]
    H[1, 1] = 1e-18  # small, not zero: a parameter that acts
    assert flat_parameters(("a", "b", "c"), H) == []
    assert flat_parameters(("a",), np.zeros((1, 1))) == []  # nothing to compare with


def test_a_parameter_without_effect_is_named():
    model = TwoRates(jnp.asarray(B), jnp.asarray(S), jnp.zeros(3), PARAMS)  # x multiplies nothing
    with pytest.warns(FlatParameterWarning, match=r"does not depend on x .*model\.fix\('x'\)"):
        res = fit(model, np.array([7.0, 13.0, 3.0]))
    assert not res.valid and "does not depend on x" in res.reason
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
    assert "does not depend" not in res.reason
    assert not [w for w in recwarn if issubclass(w.category, FlatParameterWarning)]
