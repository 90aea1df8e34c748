"""An iminuit-compatible cost object for any nuejax model (iminuit's cost-function protocol).

``NLLCost(model, data)`` is -2 ln L (paper Eq. logL) as a function of the model's free parameters:
``errordef = 1`` (a change of 1 in -2 ln L is one standard deviation), ``ndata`` the number of
bins, ``grad`` the exact autodiff gradient, ``hessian`` the exact autodiff Hessian, ``_parameters``
the names with their limits, so ``Minuit(cost, *x0)`` works directly. A value-only call costs one
value (MIGRAD's line searches ask for values only); ``grad`` computes value and gradient in one
``value_and_grad`` pass and caches both per point, since MIGRAD then asks for the value at the same
point. Model, data, names, fixed values and auxiliary measurements are checked once, when the cost is made
(a :class:`~nuejax.inference.problem.FitProblem`).
"""

from __future__ import annotations

import functools
import types
from typing import Mapping

import jax
import jax.numpy as jnp
import numpy as np

from .fitting import compiled_value_grad_hessian, objective, problem_value_grad_hessian
from .problem import FitProblem

__all__ = ["NLLCost", "host_output_sharding"]


def _value(x, problem):
    return objective(x, (problem, jnp.zeros(0, dtype=problem.values.dtype)))


_FUNCTIONS = {"value": _value, "value_and_grad": jax.value_and_grad(_value),
              "value_grad_hessian": problem_value_grad_hessian}


def host_output_sharding(device):
    """Where a minimiser's call should write its results: the pinned host memory of ``device``
    where it has such memory apart from its own (a GPU), else None (the device's memory; on a
    CPU that is the host's).

    A minimiser reads every result on the host before its next call. On an H100 copying a
    scalar result there after the call took 0.48 ms against 0.34 ms for the same call writing
    it to pinned host memory itself (``benchmarks/probes/cost_call_probe.py``)."""
    if device.platform == "cpu":
        return None
    try:
        kinds = {m.kind for m in device.addressable_memories()}
    except Exception:  # noqa: BLE001 - a backend without memory kinds
        return None
    return jax.sharding.SingleDeviceSharding(device, memory_kind="pinned_host") if "pinned_host" in kinds else None


@functools.lru_cache(maxsize=None)
def _compiled(kind: str, out_sharding=None):
    """The module-level compiled call of ``kind`` (value, value_and_grad, value_grad_hessian), writing its
    results to ``out_sharding`` (None: the default placement). Cached, so a new cost object
    with the same problem structure reuses the compiled code."""
    if out_sharding is None and kind == "value_grad_hessian":  # the program fitting's reports run
        return compiled_value_grad_hessian
    placement = {} if out_sharding is None else {"out_shardings": out_sharding}
    return jax.jit(_FUNCTIONS[kind], **placement)


class NLLCost:
    """-2 ln L of ``model`` on ``data`` over the parameters ``names`` (default: the free ones).

    Parameters not in ``names`` take their values from ``fixed`` (default: the model defaults);
    ``aux``: the auxiliary measurements (default: nominal). ``model`` may be a checked
    :class:`~nuejax.inference.problem.FitProblem` instead (``data`` etc. then None).
    """

    errordef = 1.0

    def __init__(self, model, data=None, names=None, fixed: Mapping | None = None, aux=None):
        s = model if isinstance(model, FitProblem) else FitProblem.create(model, data, names=names, init=fixed, aux=aux)
        self.problem = s
        self.model = s.model
        self.data = s.data
        ps = s.model.parameters
        self.names = s.names
        self.base = types.MappingProxyType(s.host_params())
        self._parameters = {n: (ps[n].lower, ps[n].upper) for n in self.names}
        # The jitted functions are module-level, so a new cost object with the same problem
        # structure reuses the compiled code: a second fit does not recompile. The minimiser's
        # calls write their results where the host reads them (host_output_sharding);
        # device_value_and_grad keeps them on the device.
        out = host_output_sharding(next(iter(s.data.devices())))
        self._value = _compiled("value", out)
        self._vg_host = _compiled("value_and_grad", out)
        self._vg = _compiled("value_and_grad")
        self._vgh = _compiled("value_grad_hessian", out)
        self._cache_x = None
        self._cache = None
        self._hess_x = None
        self._hess_value = None
        self.n_value = 0
        self.n_grad = 0

    @property
    def ndata(self) -> int:
        return int(self.data.shape[-1])

    def params(self, x) -> dict:
        """The full parameter PyTree for the free-parameter vector ``x``."""
        return self.problem.params(jnp.asarray(x))

    @staticmethod
    def _vector(x):
        """iminuit calls ``cost(*values)``, or ``cost(array)`` after ``Minuit(cost, x0_array)``."""
        return np.asarray(x[0] if len(x) == 1 and np.ndim(x[0]) == 1 else x, dtype=float)

    def device_value_and_grad(self, x):
        """-2 ln L and its gradient at the vector ``x`` as device arrays (no host copy): the
        compiled call behind :meth:`grad`, for timing and for callers that stay on the device."""
        return self._vg(jnp.asarray(x), self.problem)

    def _eval(self, x):
        x = self._vector(x)
        if self._cache_x is None or not np.array_equal(x, self._cache_x):
            # the numpy vector goes to the compiled call as it is: on an H100 jnp.asarray first
            # added 0.28 ms per call (benchmarks/probes/cost_call_probe.py)
            v, g = jax.device_get(self._vg_host(x, self.problem))
            self._cache_x, self._cache = x.copy(), (float(v), np.asarray(g))
        return self._cache

    def __call__(self, *x) -> float:
        """-2 ln L at ``x`` (value only, unless the gradient at ``x`` is cached already)."""
        self.n_value += 1
        xv = self._vector(x)
        if self._cache_x is not None and np.array_equal(xv, self._cache_x):
            return self._cache[0]
        return float(self._value(xv, self.problem))

    def grad(self, *x) -> np.ndarray:
        self.n_grad += 1
        return self._eval(x)[1]

    def hessian(self, *x) -> np.ndarray:
        """Exact Hessian of -2 ln L (:func:`~nuejax.inference.fitting.value_grad_hessian`), at
        ``hessian(*values)`` (iminuit's convention, which MIGRAD and HESSE use when present) or
        ``hessian(array)``. The last one is kept: MIGRAD asks for G2 and then the Hessian at one
        point. The same call gives the value and gradient there, which are kept as :meth:`grad`'s."""
        xv = self._vector(x)
        if self._hess_x is None or not np.array_equal(xv, self._hess_x):
            v, g, H = jax.device_get(self._vgh(xv, self.problem))
            self._hess_x, self._hess_value = xv.copy(), np.asarray(H)
            self._cache_x, self._cache = xv.copy(), (float(v), np.asarray(g))
        return self._hess_value.copy()

    def value_grad_hessian(self, *x) -> tuple:
        """-2 ln L, its gradient and Hessian at ``x``, from the kept results where MIGRAD's last
        calls were at ``x`` (its final HESSE and gradient), else computed."""
        H = self.hessian(*x)
        v, g = self._eval(x)
        return v, g.copy(), H

    def g2(self, *x) -> np.ndarray:
        """Diagonal of the Hessian. iminuit 2.33 warns that it has no effect next to ``hessian``,
        but without it MIGRAD can call a missing G2 callback ("'NoneType' object is not callable")."""
        return np.diag(self.hessian(*x))
