"""Tiny models for the Neyman-construction tests: a few Poisson bins, compiled in seconds."""
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np

from nuejax.model import AbstractModel
from nuejax.model.parameters import Parameter, ParameterSet


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class CountingModel(AbstractModel):
    """mu_j = norm_b * b_j + s_j * signal(poi): ``power`` 1 (a signal strength) or 2 (a rate that
    grows like mu_nu^2); ``norm_b`` free with a Gaussian constraint of ``sigma_b`` (its auxiliary
    measurement), or fixed when ``sigma_b`` is 0."""

    b: jax.Array
    s: jax.Array
    parameters: ParameterSet = field(metadata=dict(static=True))
    power: int = field(metadata=dict(static=True), default=1)
    constraints: tuple = ()

    @classmethod
    def create(cls, b, s, *, poi="mu", power=1, sigma_b=0.0, poi_range=(0.0, 100.0)):
        ps = [Parameter(poi, 0.0, *poi_range)]
        ps.append(Parameter("norm_b", 1.0, 0.0, 10.0, fixed=not sigma_b,
                            constraint=(1.0, sigma_b) if sigma_b else None))
        return cls(jnp.asarray(b, dtype=float), jnp.asarray(s, dtype=float), ParameterSet(tuple(ps)), power)

    @property
    def n_obs(self):
        return int(self.b.shape[0])

    def expected(self, p):
        poi = p[self.parameters.names[0]]
        return p["norm_b"] * self.b + self.s * poi ** self.power


def gaussian_model(sigma_counts=1e3, background=1e6):
    """One bin whose count is Gaussian to about 1e-3 (skewness 1/sqrt(background)): mean background + sigma_counts * mu, width
    sqrt(background) = sigma_counts, so mu is measured in units of its standard deviation and
    the Feldman–Cousins construction is that of a Gaussian mean bounded at zero."""
    assert np.isclose(np.sqrt(background), sigma_counts)
    return CountingModel.create([background], [sigma_counts], poi_range=(0.0, 50.0))


def gaussian_counts(model, x0):
    """The observed count that measures mu = x0 (in units of sigma)."""
    return np.array([float(model.b[0] + model.s[0] * x0)])


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class MirrorModel(AbstractModel):
    """mu_j = b_j + mu * s_j + k_j (c + a)^2 + tilt * a * q_j: the nuisance ``a`` enters through
    (c + a)^2, so a -> -2c - a is a second branch of the conditional fit (declared in
    :meth:`symmetries`), broken only by the small ``tilt`` term, so that toys end on either branch."""

    b: jax.Array
    s: jax.Array
    k: jax.Array
    q: jax.Array
    parameters: ParameterSet = field(metadata=dict(static=True))
    c: float = field(metadata=dict(static=True), default=0.5)
    tilt: float = field(metadata=dict(static=True), default=0.0)
    constraints: tuple = ()

    @classmethod
    def create(cls, n=8, *, c=0.5, tilt=2.0):
        x = np.linspace(0.0, 1.0, n)
        ps = ParameterSet((Parameter("mu", 1.0, 0.0, 10.0), Parameter("a", 0.0, -3.0, 3.0)))
        return cls(jnp.asarray(50.0 + 10.0 * x), jnp.asarray(20.0 * np.exp(-3 * x)), jnp.asarray(40.0 * x),
                   jnp.asarray(1.0 - x), ps, float(c), float(tilt))

    @property
    def n_obs(self):
        return int(self.b.shape[0])

    def expected(self, p):
        a = p["a"]
        return self.b + p["mu"] * self.s + self.k * (self.c + a) ** 2 + self.tilt * a * self.q

    def symmetries(self):
        return (lambda v: {"a": -2.0 * self.c - v["a"]},)
