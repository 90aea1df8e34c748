r"""Observable-level response transforms: energy scale, offset, non-linearity and extra resolution.

A transform acts *after* the fold, on a histogram of expected counts :math:`x_i` in bins
:math:`[x_{i}, x_{i+1})` of an input axis (N_p, keV, N_h: any), and returns expected counts in the
bins :math:`[e_j, e_{j+1})` of an output axis (the data's). The counts of input bin :math:`i` are
taken as uniformly spread over the bin (the same assumption as the histogram itself), moved by the
energy map

.. math:: g(E) = c + s\,E + k\,E^2/E_{\rm ref}

(offset :math:`c`, scale :math:`s`, non-linearity :math:`k`; :math:`g` must increase over the
input range) onto :math:`[u_i, u_{i+1}) = [g(x_i), g(x_{i+1}))`, and smeared by an extra Gaussian
of variance

.. math:: \sigma^2(E) = a^2 E + b^2 E^2 + c_\sigma^2

evaluated at the mapped bin centre :math:`E = (u_i + u_{i+1})/2`. The fraction of bin :math:`i`
that lands in output bin :math:`j` is then the exact integral of a uniform density convolved with
a Gaussian,

.. math::
    M_{ij} = \frac{R_\sigma(e_{j+1}-u_i) - R_\sigma(e_{j+1}-u_{i+1}) - R_\sigma(e_j-u_i)
                   + R_\sigma(e_j-u_{i+1})}{u_{i+1}-u_i},
    \qquad R_\sigma(d) = d\,\Phi(d/\sigma) + \sigma\,\varphi(d/\sigma),

the Gaussian-smoothed ramp (:math:`R_0(d) = \max(d, 0)`: without smearing :math:`M_{ij}` is the
overlap fraction of the mapped bin with the output bin, the exact rebinning). Hence

* counts are conserved: :math:`\sum_j M_{ij} = 1` whenever the smeared bin lies inside the output
  range; counts that move or spill past the first or last output edge are lost, as in a detector
  with an analysis window (and an input axis must extend beyond the output range for the
  counts that spill *in* to be there: see :func:`check_transform_axes`);
* with identical input and output binnings, :math:`s = 1`, :math:`c = k = 0` and no smearing,
  :math:`M` is the identity;
* everything is ``jax.numpy`` and differentiable in all six parameters. As :math:`\sigma \to 0`
  the resolution enters only through :math:`e^{-d^2/2\sigma^2}`, so the likelihood is flat to
  all orders there (exactly zero gradient and curvature at :math:`\sigma = 0`): a plateau on
  which a fit can stop. Give floating resolution terms a lower bound that keeps the smallest
  :math:`\sigma` a sizeable fraction of a bin width (``nuejax borexino``: :math:`a \ge 0.2\,\sqrt{\rm keV}`).

The fixed-kernel reweighting of the paper stays exact underneath: a transform only moves the
already folded counts between observable bins.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_derivatives import SymbolicZero

from .._internal.pytree import static_field
from ..errors import InputError
from .checks import check_edges, describe_edges

__all__ = ["smoothed_ramp", "energy_map", "resolution_sigma", "transform_matrix", "migration_matrix", "migrate", "migrate_width",
           "ResponseTransform",
           "check_transform_axes", "TRANSFORM_TERMS"]

_SQRT2 = math.sqrt(2.0)
_INV_SQRT2PI = 1.0 / math.sqrt(2.0 * math.pi)

#: the terms a :class:`ResponseTransform` may float, with their nominal (identity) values
TRANSFORM_TERMS = {"scale": 1.0, "offset": 0.0, "nonlin": 0.0, "res_a": 0.0, "res_b": 0.0, "res_c": 0.0}


def smoothed_ramp(d, sigma):
    r""":math:`R_\sigma(d) = \int_{-\infty}^{d} \Phi(t/\sigma)\,dt = d\,\Phi(d/\sigma) + \sigma\varphi(d/\sigma)`
    (the ramp :math:`\max(d, 0)` convolved with a Gaussian of width ``sigma``); ``sigma`` = 0 gives the ramp."""
    pos = sigma > 0
    s = jnp.where(pos, sigma, 1.0)
    z = d / s
    smooth = d * 0.5 * jax.scipy.special.erfc(-z / _SQRT2) + s * _INV_SQRT2PI * jnp.exp(-0.5 * z * z)
    return jnp.where(pos, smooth, jnp.maximum(d, 0.0))


def energy_map(x, scale=1.0, offset=0.0, nonlin=0.0, e_ref: float = 1000.0):
    """:math:`g(E) = c + sE + kE^2/E_{ref}` (module docstring)."""
    return offset + scale * x + nonlin * x * x / e_ref


def resolution_sigma(E, res_a=0.0, res_b=0.0, res_c=0.0, form: str = "quadrature"):
    r""":math:`\sigma(E) = \sqrt{a^2E + b^2E^2 + c^2}` with :math:`E` clipped at 0 (module docstring);
    ``form="linear"``: :math:`\sigma(E) = a\sqrt{E} + bE + c` (the form XENON1T fitted to its
    calibration lines, E. Aprile et al., Phys. Rev. D 102, 072004 (2020), arXiv:2006.09721, Eq. 1)."""
    E = jnp.maximum(E, 0.0)
    if form == "linear":
        pos = E > 0
        return res_a * jnp.where(pos, jnp.sqrt(jnp.where(pos, E, 1.0)), 0.0) + res_b * E + res_c
    if form != "quadrature":
        raise InputError(f"resolution form must be 'quadrature' or 'linear', got {form!r}")
    var = res_a * res_a * E + res_b * res_b * E * E + res_c * res_c
    pos = var > 0
    return jnp.where(pos, jnp.sqrt(jnp.where(pos, var, 1.0)), 0.0)


def transform_matrix(in_edges, out_edges, mapped_edges, sigma):
    """:math:`M_{ij}` of the module docstring, shape (n_in, n_out).

    Args:
        in_edges: (n_in + 1,) input edges (only their number is used; kept for symmetry).
        out_edges: (n_out + 1,) output edges.
        mapped_edges: (n_in + 1,) increasing :math:`u_i = g(x_i)`.
        sigma: (n_in,) extra Gaussian width of each input bin (0: none).
    """
    del in_edges
    u0, u1 = mapped_edges[:-1, None], mapped_edges[1:, None]
    s = sigma[:, None]
    d = out_edges[None, :]
    r = smoothed_ramp(d - u0, s) - smoothed_ramp(d - u1, s)  # (n_in, n_out + 1): content below each edge
    return (r[:, 1:] - r[:, :-1]) / (u1 - u0)


def _phis(u0, u1, sigma, out_edges):
    """Standardised distances of every output edge from both mapped edges of every input bin, and
    the Gaussian cdf/pdf there ((n_in, n_out + 1) each); ``sigma`` = 0 gives the step and 0."""
    pos = (sigma > 0)[:, None]
    s = jnp.where(pos, sigma[:, None], 1.0)
    d0, d1 = out_edges[None, :] - u0[:, None], out_edges[None, :] - u1[:, None]
    z0, z1 = d0 / s, d1 / s
    Phi0 = jnp.where(pos, 0.5 * jax.scipy.special.erfc(-z0 / _SQRT2), (d0 > 0).astype(d0.dtype))
    Phi1 = jnp.where(pos, 0.5 * jax.scipy.special.erfc(-z1 / _SQRT2), (d1 > 0).astype(d1.dtype))
    phi0 = jnp.where(pos, _INV_SQRT2PI * jnp.exp(-0.5 * z0 * z0), 0.0)
    phi1 = jnp.where(pos, _INV_SQRT2PI * jnp.exp(-0.5 * z1 * z1), 0.0)
    inv_s = jnp.where(pos, 1.0 / s, 0.0)
    return d0, d1, z0, z1, Phi0, Phi1, phi0, phi1, inv_s


def _cumulative_derivatives(phis, sigma, order: int):
    r"""A(e) = R_σ(e - u0) - R_σ(e - u1) at the output edges of ``phis`` (:func:`_phis`), and its
    derivatives with respect to the local variables v = (u0, u1, σ) up to ``order`` (module
    docstring): a list of lists of arrays (n_in, n_edges): [[A], [A_u0, A_u1, A_σ], [the six second
    derivatives A_00, A_11, A_ss, A_01, A_0s, A_1s]][: order + 1]."""
    d0, d1, z0, z1, Phi0, Phi1, phi0, phi1, inv_s = phis
    s = sigma[:, None]
    out = [[d0 * Phi0 + s * phi0 - d1 * Phi1 - s * phi1]]
    if order >= 1:
        out.append([-Phi0, Phi1, phi0 - phi1])
    if order >= 2:
        out.append([phi0 * inv_s, -phi1 * inv_s, (z0 * z0 * phi0 - z1 * z1 * phi1) * inv_s, jnp.zeros_like(d0),
                    z0 * phi0 * inv_s, -z1 * phi1 * inv_s])
    return out


def _bin_differences(u0, u1, sigma, out_edges, order: int):
    """:func:`_cumulative_derivatives` up to ``order``, differenced between the upper and lower
    edge of every output bin: [[N], [N_u0, N_u1, N_σ], [...]] of (n_in, n_out) arrays.

    Why two routes (measured on XLA:CPU, 861 x 775 bins, ``benchmarks/NOTES.md``): the value alone
    is evaluated once at the upper and once at the lower edges, because XLA does not vectorise the
    erfc of a fusion that feeds two shifted slices of one all-edges array (22 ms against 6.7 ms);
    with derivatives, the all-edges array sliced is the faster one (value + gradient 32 ms against
    47 ms, Hessian 74 ms against 126 ms), as the split route's many consumers each recompute the
    Gaussian integrals.
    """
    if order == 0:
        hi = _cumulative_derivatives(_phis(u0, u1, sigma, out_edges[1:]), sigma, order)
        lo = _cumulative_derivatives(_phis(u0, u1, sigma, out_edges[:-1]), sigma, order)
        return [[a - b for a, b in zip(h, l)] for h, l in zip(hi, lo)]
    A = _cumulative_derivatives(_phis(u0, u1, sigma, out_edges), sigma, order)
    return [[a[:, 1:] - a[:, :-1] for a in x] for x in A]


def _pairs():
    """(a, b) -> index into the six second derivatives of :func:`_cumulative_derivatives`."""
    return {(0, 0): 0, (1, 1): 1, (2, 2): 2, (0, 1): 3, (1, 0): 3, (0, 2): 4, (2, 0): 4, (1, 2): 5, (2, 1): 5}


def _quotient(u0, u1):
    """q = 1/(u1 - u0) and its first and second derivatives with respect to (u0, u1, σ)."""
    q = 1.0 / (u1 - u0)
    z = jnp.zeros_like(q)
    dq = [q * q, -q * q, z]
    ddq = {(0, 0): 2 * q**3, (1, 1): 2 * q**3, (0, 1): -2 * q**3}
    return q, dq, ddq


def _matrix_terms(u0, u1, sigma, out_edges, order: int):
    """M and its derivatives with respect to (u0, u1, σ) up to ``order`` from one evaluation of
    the Gaussian integrals: [M (n_in, n_out)], + G (3, n_in, n_out), + H (3, 3, n_in, n_out)."""
    N = _bin_differences(u0, u1, sigma, out_edges, order)
    q, dq, ddq = _quotient(u0, u1)
    out = [jnp.maximum(N[0][0] * q[:, None], 0.0)]
    if order >= 1:
        out.append(jnp.stack([N[1][a] * q[:, None] + N[0][0] * dq[a][:, None] for a in range(3)]))
    if order >= 2:
        idx = _pairs()
        rows = []
        for a in range(3):
            row = []
            for b in range(3):
                h = N[2][idx[(a, b)]] * q[:, None] + N[1][a] * dq[b][:, None] + N[1][b] * dq[a][:, None]
                qab = ddq.get((a, b), ddq.get((b, a)))
                if qab is not None:
                    h = h + N[0][0] * qab[:, None]
                row.append(h)
            rows.append(jnp.stack(row))
        out.append(jnp.stack(rows))
    return out


def _tangent_stack(u0, tangents):
    return jnp.stack([jnp.broadcast_to(tangents[k], u0.shape) for k in range(3)])  # (3, n_in); edges: constant


@jax.custom_jvp
def _matrix_and_grad(u0, u1, sigma, out_edges):
    """(M, G): the matrix and its first derivatives with respect to (u0, u1, σ), (3, n_in, n_out)."""
    return tuple(_matrix_terms(u0, u1, sigma, out_edges, 1))


@_matrix_and_grad.defjvp
def _matrix_and_grad_jvp(primals, tangents):
    t = _tangent_stack(primals[0], tangents)
    M, G, H = _matrix_terms(*primals, 2)
    return (M, G), (jnp.einsum("aij,ai->ij", G, t), jnp.einsum("abij,bi->aij", H, t))


@jax.custom_jvp
def migration_matrix(u0, u1, sigma, out_edges):
    r""":math:`M_{ij}` (module docstring) from the mapped lower/upper edges ``u0``, ``u1`` (n_in,)
    and widths ``sigma`` (n_in,) of the input bins, on ``out_edges`` (n_out + 1,): (n_in, n_out).

    Its derivatives are analytic (first and second order are precomputed arrays contracted with
    the tangents), so a Hessian over many model parameters costs a few contractions, not one pass
    of Gaussian integrals per parameter. ``out_edges`` is a constant: its tangent is ignored.
    """
    return _matrix_terms(u0, u1, sigma, out_edges, 0)[0]


@migration_matrix.defjvp
def _migration_matrix_jvp(primals, tangents):
    M, G = _matrix_and_grad(*primals)
    return M, jnp.einsum("aij,ai->ij", G, _tangent_stack(primals[0], tangents))


@jax.custom_jvp
def migrate(x, u0, u1, sigma, out_edges):
    r"""``x @ migration_matrix(u0, u1, sigma, out_edges)``: counts ``x`` (..., n_in) moved into the
    output bins, (..., n_out).

    The same numbers as the product, with derivatives that never form the matrix's tangent: the
    tangent is :math:`\dot x M + \sum_a (x\,\dot v_a) G_a` (:math:`v = (u_0, u_1, \sigma)`,
    :math:`G` as in :func:`migration_matrix`), one contraction however many directions a batched
    derivative carries (the Jacobian of a batched Hessian, :func:`~nuejax.inference.fitting.value_grad_hessian`,
    no longer forms ``d`` tangent matrices of (n_in, n_out): the XENONnT toy fits, 9 parameters on
    462 x 74 bins, held 9.1 MB of temporaries per fit through the matrix product and 7.5 MB through
    this, on 2 CPU cores; ``benchmarks/NOTES.md``).
    """
    return x @ _matrix_terms(u0, u1, sigma, out_edges, 0)[0]


@migrate.defjvp
def _migrate_jvp(primals, tangents):
    x, u0, u1, sigma, out_edges = primals
    M, G = _matrix_and_grad(u0, u1, sigma, out_edges)
    t = _tangent_stack(u0, tangents[1:4])  # (3, n_in)
    dy = tangents[0] @ M + jnp.einsum("...ai,aij->...j", x[..., None, :] * t, G)
    return x @ M, dy


def _width_terms(u0, u1, sigma, out_edges, order: int):
    """M and its derivatives with respect to σ alone up to ``order`` (the mapped edges held
    fixed): [M, G_σ, H_σσ][: order + 1], each (n_in, n_out). The other derivatives of
    :func:`_bin_differences` are not outputs, and XLA drops them."""
    N = _bin_differences(u0, u1, sigma, out_edges, order)
    q = (1.0 / (u1 - u0))[:, None]
    out = [jnp.maximum(N[0][0] * q, 0.0)]
    if order >= 1:
        out.append(N[1][2] * q)
    if order >= 2:
        out.append(N[2][2] * q)
    return out


@jax.custom_jvp
def _width_matrix_and_grad(u0, u1, sigma, out_edges):
    """(M, G_σ) of :func:`_width_terms`; the tangents of the edges are not read."""
    return tuple(_width_terms(u0, u1, sigma, out_edges, 1))


@_width_matrix_and_grad.defjvp
def _width_matrix_and_grad_jvp(primals, tangents):
    M, G, H = _width_terms(*primals, 2)
    ts = tangents[2][:, None]
    return (M, G), (G * ts, H * ts)


@jax.custom_jvp
def migrate_width(x, u0, u1, sigma, out_edges):
    r""":func:`migrate` where only the widths vary: the mapped edges ``u0``, ``u1`` are constants
    (no scale, offset or non-linearity floated), so the derivatives are taken with respect to
    ``x`` and ``sigma`` alone (where the edges carry a tangent after all, the rule of
    :func:`migrate` takes over). The matrix's derivatives are then
    :math:`G_\sigma` and :math:`H_{\sigma\sigma}` (2 arrays of (n_in, n_out)) instead of the 3 + 9 of
    (u0, u1, σ), and the tangent is two contractions instead of a batched product over the
    three variables. On the XENONnT SR0 model's μ_ν toy fits (resolution a, b floated; 462 x 74
    bins) a launch of 8192 toys' first pass took 0.61 s against 3.16 s on one H200, and the value,
    gradient and exact Hessian 12.2 ms against 14.9 ms on 2 CPU cores (``benchmarks/NOTES.md``).
    Same numbers as :func:`migrate` (tests/test_transforms.py)."""
    return x @ _width_terms(u0, u1, sigma, out_edges, 0)[0]


def _migrate_width_jvp(primals, tangents):
    x, u0, u1, sigma, out_edges = primals
    tx, tu0, tu1, ts, _ = tangents
    zero = [isinstance(t, SymbolicZero) for t in (tx, tu0, tu1, ts)]
    if not (zero[1] and zero[2]):  # the edges move after all (a caller's transform): the general rule
        return _migrate_jvp(primals, tuple(jnp.zeros(t.shape, t.dtype) if isinstance(t, SymbolicZero) else t
                                           for t in tangents))
    M, G = _width_matrix_and_grad(u0, u1, sigma, out_edges)
    y = x @ M
    dy = jnp.zeros_like(y)
    if not zero[0]:
        dy = dy + tx @ M
    if not zero[3]:
        dy = dy + (x * ts) @ G
    return y, dy


migrate_width.defjvp(_migrate_width_jvp, symbolic_zeros=True)


def check_transform_axes(in_edges, out_edges, what: str = "response transform") -> tuple[np.ndarray, np.ndarray]:
    """Eager checks of a transform's axes: both valid edge arrays, and the output range inside the
    input range (so that counts can spill in from both sides). Returns them as float arrays.

    Raises:
        InputError: bad edges (names the edge), or an output range not inside the input range
            (names both ranges).
    """
    x = check_edges(in_edges, what, "input")
    e = check_edges(out_edges, what, "output")
    if e[0] < x[0] or e[-1] > x[-1]:
        raise InputError(f"{what}: the output range [{e[0]:g}, {e[-1]:g}] is not inside the input range "
                         f"[{x[0]:g}, {x[-1]:g}] ({describe_edges(x)}); the counts that would spill into "
                         "the output bins from outside the input range are missing")
    return x, e



@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class ResponseTransform:
    """A linear stage that moves folded counts between bins: ``x (n_in,) -> x @ M(p) (n_out,)``.

    ``names`` maps each floated term of :data:`TRANSFORM_TERMS` (``scale``, ``offset``,
    ``nonlin``, ``res_a``, ``res_b``, ``res_c``) to the model parameter that holds it; terms not
    named keep their nominal value (identity). Build with :meth:`create`, which checks the axes.
    Units: ``offset``, ``res_c`` in input-axis units, ``res_a`` in √unit, ``scale``, ``res_b``,
    ``nonlin`` dimensionless (``nonlin`` per ``e_ref``).
    """

    in_edges: jax.Array
    out_edges: jax.Array
    names: tuple = static_field()  # ((term, parameter name), ...)
    e_ref: float = static_field(default=1000.0)
    resolution_form: str = static_field(default="quadrature")  # resolution_sigma's form

    @classmethod
    def create(cls, in_edges, out_edges, *, e_ref: float = 1000.0, dtype=None, resolution_form: str = "quadrature",
               **names) -> "ResponseTransform":
        """``ResponseTransform.create(in_edges, out_edges, scale="e_scale", res_a="e_res_a")``.

        Raises:
            InputError: an unknown term (names the valid ones), a term named twice, bad axes
                (:func:`check_transform_axes`), ``e_ref`` not finite and > 0.
        """
        bad = [t for t in names if t not in TRANSFORM_TERMS]
        if bad:
            raise InputError(f"response transform: unknown term(s) {bad}; valid: {', '.join(TRANSFORM_TERMS)}")
        params = [n for n in names.values() if n is not None]
        if len(set(params)) != len(params):
            raise InputError(f"response transform: a parameter name is used for two terms: {names}")
        if not (math.isfinite(e_ref) and e_ref > 0):
            raise InputError(f"response transform: e_ref must be finite and > 0, got {e_ref}")
        x, e = check_transform_axes(in_edges, out_edges)
        dt = dtype or jnp.result_type(float)
        if resolution_form not in ("quadrature", "linear"):
            raise InputError(f"response transform: resolution_form must be 'quadrature' or 'linear', got "
                             f"{resolution_form!r}")
        return cls(jnp.asarray(x, dtype=dt), jnp.asarray(e, dtype=dt),
                   tuple((t, n) for t, n in names.items() if n is not None), float(e_ref), resolution_form)

    @property
    def parameter_names(self) -> tuple:
        return tuple(n for _, n in self.names)

    def terms(self, p) -> dict:
        """The six terms at parameter values ``p`` (nominal where not floated)."""
        out = {t: jnp.asarray(v, dtype=self.in_edges.dtype) for t, v in TRANSFORM_TERMS.items()}
        for t, n in self.names:
            out[t] = p[n]
        return out

    def mapped_edges_and_sigma(self, p) -> tuple:
        """The mapped input edges u (n_in + 1,) and the extra widths σ (n_in,) at ``p``, evaluated
        at the mapped bin centres (module docstring): what every form of the transform reads."""
        t = self.terms(p)
        u = energy_map(self.in_edges, t["scale"], t["offset"], t["nonlin"], self.e_ref)
        return u, resolution_sigma(0.5 * (u[1:] + u[:-1]), t["res_a"], t["res_b"], t["res_c"], self.resolution_form)

    def matrix(self, p) -> jax.Array:
        """(n_in, n_out) bin-migration matrix at ``p``."""
        u, sigma = self.mapped_edges_and_sigma(p)
        return migration_matrix(u[:-1], u[1:], sigma, self.out_edges)

    def reference_matrix(self, p) -> jax.Array:
        """:meth:`matrix` through plain autodiff of :func:`transform_matrix` (the tests' reference)."""
        u, sigma = self.mapped_edges_and_sigma(p)
        return transform_matrix(self.in_edges, self.out_edges, u, sigma)

    @property
    def fixed_edges(self) -> bool:
        """Whether the mapped edges are constants (no scale, offset or non-linearity floated):
        then only the widths move the counts (:func:`migrate_width`)."""
        return not any(t in ("scale", "offset", "nonlin") for t, _ in self.names)

    def __call__(self, p, x):
        u, sigma = self.mapped_edges_and_sigma(p)
        move = migrate_width if self.fixed_edges else migrate
        return move(x, u[:-1], u[1:], sigma, self.out_edges)
