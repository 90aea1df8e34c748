r"""A JAX-native minimiser for -2 ln L that runs under ``jit`` and ``vmap`` (batched fits).

Damped Newton (Levenberg-Marquardt) on the exact autodiff Hessian: each iteration solves
:math:`(H + \lambda\,\mathrm{diag}|H|)\,\delta = -g`, accepts the step if the function decreases
(then :math:`\lambda \to 0.3\lambda`) and otherwise rejects it (:math:`\lambda \to 10\lambda`).
The diagonal (Marquardt) damping makes the iteration invariant to the parameters' scales (a
normalisation ~1 next to a ¹⁴C rate ~10⁶). Bounds are handled by reparametrisation: a parameter
with two finite bounds is :math:`x = l + (u - l)\,\sigma(t)`, one with a lower bound only
:math:`x = l + \mathrm{softplus}(t)`, and Newton runs in :math:`t`. The loop has a fixed number
of iterations (converged points stop moving), so a batch of fits is one XLA program.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["NewtonResult", "newton_minimize", "to_unbounded", "from_unbounded"]


class NewtonResult(NamedTuple):
    x: jax.Array
    fun: jax.Array
    converged: jax.Array
    n_iter: jax.Array


def _kinds(lower, upper):
    lower, upper = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
    both = np.isfinite(lower) & np.isfinite(upper)
    low = np.isfinite(lower) & ~np.isfinite(upper)
    return both, low, np.where(np.isfinite(lower), lower, 0.0), np.where(np.isfinite(upper), upper, 1.0)


def from_unbounded(t, lower, upper):
    """Map unbounded ``t`` to the box [lower, upper] (module docstring)."""
    both, low, lo, hi = _kinds(lower, upper)
    return jnp.where(both, lo + (hi - lo) * jax.nn.sigmoid(t), jnp.where(low, lo + jax.nn.softplus(t), t))


def to_unbounded(x, lower, upper, eps: float = 1e-12):
    """Inverse of :func:`from_unbounded` (points on a bound are moved ``eps`` inside)."""
    both, low, lo, hi = _kinds(lower, upper)
    s = jnp.clip((x - lo) / (hi - lo), eps, 1 - eps)
    d = jnp.maximum(x - lo, eps)
    soft_inv = jnp.where(d > 30.0, d, jnp.log(jnp.expm1(jnp.minimum(d, 30.0))))
    return jnp.where(both, jnp.log(s) - jnp.log1p(-s), jnp.where(low, soft_inv, x))


def newton_minimize(f, x0, lower, upper, *, n_iter: int = 60, tol: float = 1e-10) -> NewtonResult:
    """Minimise ``f(x)`` (scalar, jax-traceable) from ``x0`` within [lower, upper].

    Converged when the Newton decrement |g·δ| (the predicted decrease of f) falls below
    ``tol`` x (1 + |f|); a run that ends with the damping at its ceiling is not converged. ``vmap`` this function over ``x0`` or over data closed into ``f``.
    """
    g_of_t = lambda t: f(from_unbounded(t, lower, upper))  # noqa: E731
    vg = jax.value_and_grad(g_of_t)
    hess = jax.hessian(g_of_t)
    t0 = to_unbounded(jnp.asarray(x0), lower, upper)
    f0 = g_of_t(t0)

    def body(_, state):
        t, fval, lam, done, it = state
        _, g = vg(t)
        H = hess(t)
        d = jnp.abs(jnp.diag(H))
        damp = lam * jnp.where(d > 0, d, 1.0)
        delta = jnp.linalg.solve(H + jnp.diag(damp), -g)
        t_new = t + delta
        f_new = g_of_t(t_new)
        ok = jnp.isfinite(f_new) & (f_new <= fval) & ~done
        # Newton decrement g.delta: the predicted decrease; at a minimum it is ~0 even when
        # roundoff makes the step itself be rejected.
        converged_here = jnp.abs(g @ delta) <= tol * (1.0 + jnp.abs(fval))
        t = jnp.where(ok, t_new, t)
        f_out = jnp.where(ok, f_new, fval)
        lam = jnp.where(done, lam, jnp.clip(jnp.where(ok, lam * 0.3, lam * 10.0), 1e-12, 1e12))
        done = done | converged_here | (lam >= 1e12)
        return t, f_out, lam, done, it + jnp.where(done, 0, 1)

    init = (t0, f0, jnp.asarray(1e-3, dtype=f0.dtype), jnp.asarray(False), jnp.asarray(0))
    t, fval, lam, done, it = jax.lax.fori_loop(0, n_iter, body, init)
    return NewtonResult(from_unbounded(t, lower, upper), fval, done & (lam < 1e12), it)
