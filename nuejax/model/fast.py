r"""Fast path: the expected spectrum as a fixed linear combination of folded basis templates.

With the oscillation and response parameters fixed, the only parameter dependence of a signal
spectrum is through the cross section, which is a quadratic polynomial in the NSI couplings of
each flavour plus a term in :math:`\mu_\nu^2` (paper Eqs. xs_nsi, xs_total; for the BKS cross
section the couplings :math:`g_{L,R}(T)` only change the polynomial's coefficients):

.. math::
    f_T(T; \varepsilon, \mu) = B_0(T) + \sum_{\alpha}\big[\varepsilon^L_\alpha B^L_\alpha
      + \varepsilon^R_\alpha B^R_\alpha + (\varepsilon^L_\alpha)^2 B^{LL}_\alpha
      + (\varepsilon^R_\alpha)^2 B^{RR}_\alpha + \varepsilon^L_\alpha\varepsilon^R_\alpha B^{LR}_\alpha\big]
      + \mu_\nu^2 B^{\mu}(T).

Folding each of these 17 basis spectra through the component's kernel once gives templates
:math:`F_{kb}(j)`; a parameter point then costs :math:`\sum_k a_k \sum_b c_b(\varepsilon,\mu)F_{kb}(j)`,
O(17 × n_sig × n_obs) operations instead of a cross-section evaluation on the (T, E_ν) grid.

The basis spectra are *extracted from the general path* (the model's own recoil spectra,
:func:`~nuejax.physics.precomputed.group_recoil_spectra`; the independent check of that route
against :func:`~nuejax.physics.recoil_spectrum` is the model's ``expected_direct`` test) by
evaluating it at unit couplings and taking exact differences (for a quadratic,
:math:`c_1 = [f(1) - f(-1)]/2`, :math:`c_2 = [f(1) + f(-1)]/2 - f(0)`), so both paths share one
implementation of the physics; the tests check that they agree to 1e-12. With a flavour-vector
magnetic moment the fast path is not available (the model then uses the general path).

The general case (:mod:`nuejax.model.flavour`) is a quadratic polynomial too, in the real and
imaginary parts of every NSI entry, :math:`\mu_\nu` and the mediator couplings, at fixed
oscillations, mediator masses and state (:math:`\rho` does not depend on the couplings unless
NSI act in propagation, which the fast path refuses). With :math:`n` such parameters
:math:`\theta` in the model, the spectrum of each signal is
:math:`f = f_0 + \sum_i\theta_i J_i + \sum_{i\le j}\theta_i\theta_j H_{ij}`, with :math:`f_0`,
:math:`J` and :math:`H` taken exactly by forward-mode autodiff of the trace form at
:math:`\theta = 0`; monomials whose templates vanish identically (e.g. :math:`\mu_\nu\varepsilon`,
:math:`\varepsilon^L_{ee}\varepsilon^L_{\mu\tau}`) are dropped. At most
:math:`1 + n + n(n+1)/2` templates: with all 18 NSI parameters and :math:`\mu_\nu`, 143 remain
of 210, 164 of 253 with both mediators (:attr:`FastModel.monomials` lists them).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np

from ..physics.precomputed import group_probe_coefficients, nsi_coefficients
from ..errors import ModelProtocolError, ParameterError
from ..physics.general_nsi import trace_form
from .likelihood import poisson_nll
from .flavour import GENERAL_NSI_NAMES, NONLINEAR_PHYSICS, general_physics_from_params, state_sums
from .parameters import ParameterSet, unknown_name_message
from .spectral_model import ModelMethods, SpectralModel, osc_from_params, physics_from_params

__all__ = ["FastModel", "fast_model", "fast_components", "basis_coefficients", "model_coefficients", "baked_values", "N_BASIS",
           "OSC_PARAMS"]

OSC_PARAMS = ("sin2_theta12", "dm2_21", "sin2_theta13", "sin2_theta23")
N_BASIS = 1 + 5 * 3 + 1


def basis_coefficients(params) -> jax.Array:
    """Coefficients c_b(ε, μ) of the basis, in the order of
    :func:`~nuejax.physics.precomputed.coefficients_from_probes`; μ in 1e-11 μ_B."""
    phys = physics_from_params(params)
    mu = jnp.asarray(params.get("mu_nu", 0.0))
    nsi = nsi_coefficients(phys.eps_L, phys.eps_R).ravel()
    return jnp.concatenate([jnp.ones(1, dtype=nsi.dtype), nsi, (mu**2)[None]])


def model_coefficients(model, params) -> jax.Array:
    """The basis coefficients of ``model`` at ``params``: :func:`basis_coefficients`, or the
    monomials of the general case."""
    if not model.monomials:
        return basis_coefficients(params)
    theta = jnp.stack([jnp.ones(())] + [jnp.asarray(params[n]) for n in model.poly_names])
    i = np.array([m[0] + 1 for m in model.monomials])
    j = np.array([m[1] + 1 for m in model.monomials])
    return theta[i] * theta[j]


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class FastModel(ModelMethods):
    """Fast-path model: folded basis templates (n_sig, N_BASIS, n_obs), background templates, mask.

    Its parameter set is the full model's without the oscillation parameters, which are baked in
    at the values the templates were built with (``osc_values``).
    """

    basis: jax.Array
    templates: jax.Array
    mask: jax.Array
    obs_edges: jax.Array
    exposure: float = field(metadata=dict(static=True))
    norms: tuple = field(metadata=dict(static=True))
    background_names: tuple = field(metadata=dict(static=True))
    parameters: ParameterSet = field(metadata=dict(static=True))
    osc_values: tuple = field(metadata=dict(static=True))
    #: Gaussian pulls of the baked-in oscillation parameters at ``osc_values`` (a constant of
    #: -2 ln L that the general path carries as well): fast == general everywhere, off-centre too.
    baked_pulls: jax.Array = 0.0
    #: General case: the polynomial parameters and the monomials (i, j) of the basis, index -1
    #: meaning 1 ((-1, -1) is the constant, (i, -1) the linear term of parameter i). Empty: the
    #: 17-template flavour-diagonal basis of :func:`basis_coefficients`.
    poly_names: tuple = field(metadata=dict(static=True), default=())
    monomials: tuple = field(metadata=dict(static=True), default=())

    @property
    def n_obs(self) -> int:
        return int(self.obs_edges.shape[0] - 1)

    def expected(self, params) -> jax.Array:
        """Expected counts (fast path); checked front door (see :class:`~nuejax.model.spectral_model.ModelMethods`)."""
        self._check_call(params)
        return fast_expected(self, params)

    def nll(self, params, data) -> jax.Array:
        """-2 ln L (fast path), including the pulls of the baked-in oscillation parameters; checked front door."""
        self._check_call(params, data)
        return fast_nll(self, params, data)


@jax.jit
def fast_expected(model: FastModel, params) -> jax.Array:
    """Expected counts on the fast path (same as :func:`nuejax.model.expected` at fixed oscillations)."""
    a = jnp.stack([params[n] for n in model.norms])
    sig = jnp.einsum("k,b,kbj->j", a, model_coefficients(model, params), model.basis)
    total = sig
    if model.background_names:
        total = total + jnp.stack([params["rate_" + b] for b in model.background_names]) @ model.templates
    return model.exposure * model.mask * total


def fast_components(model: FastModel, params) -> dict:
    """Expected counts per observable bin of every signal norm group and background (for plots).

    Signals sharing a normalisation parameter (the ⁷Be lines, CNO) are summed under its name.
    """
    c = model_coefficients(model, params)
    scale = model.exposure * model.mask
    out = {}
    for k, n in enumerate(model.norms):
        out[n] = out.get(n, 0.0) + scale * params[n] * (c @ model.basis[k])
    for i, b in enumerate(model.background_names):
        out["rate_" + b] = scale * params["rate_" + b] * model.templates[i]
    return {k: np.asarray(v) for k, v in out.items()}


@jax.jit
def fast_nll(model: FastModel, params, data) -> jax.Array:
    """-2 ln L on the fast path."""
    return poisson_nll(fast_expected(model, params), data) + model.parameters.pulls(params) + model.baked_pulls


def baked_values(model, osc_params):
    """The model's defaults with the oscillation parameters ``osc_params`` put in: the values a fast
    path bakes in. An unknown name is a ParameterError naming the closest one."""
    base = model.parameters.defaults()
    if osc_params:
        for k in osc_params:
            if k not in OSC_PARAMS:
                raise ParameterError(unknown_name_message(k, OSC_PARAMS, "oscillation parameter"))
        base = model.parameters.values({k: v for k, v in osc_params.items() if k in model.parameters})
        base.update({k: jnp.asarray(v) for k, v in osc_params.items() if k not in model.parameters})
    return base


def _fast_from_rows(model, rows, base, baked_names, **general) -> FastModel:
    """A FastModel from its folded basis rows (one (n_basis, n_obs) per signal), the parameters
    ``baked_names`` fixed at their ``base`` values (their pulls kept as a constant)."""
    params = ParameterSet(tuple(p for p in model.parameters.parameters if p.name not in baked_names))
    osc_values = tuple((k, float(base[k])) for k in baked_names if k in base)
    baked = ParameterSet(tuple(p for p in model.parameters.parameters if p.name in baked_names))
    baked_pulls = baked.pulls({k: base[k] for k in baked.names}).astype(rows[0].dtype)
    return FastModel(jnp.stack(rows), model.templates, model.mask, model.obs_edges, model.exposure,
                     tuple(s.norm for s in model.signals), model.background_names, params, osc_values, baked_pulls,
                     **general)


def fast_model(model: SpectralModel, osc_params: dict | None = None) -> FastModel:
    """Precompute the fast path of ``model`` at the oscillation parameters ``osc_params``
    (default: the parameter set's values). Errors if the model has a per-flavour magnetic moment.

    A general-case model (:mod:`nuejax.model.flavour`) bakes in its mediator masses too, and
    refuses NSI in propagation (the state then depends on the couplings: not a polynomial)."""
    base = baked_values(model, osc_params)
    if model.flavour is not None:
        return _general_fast_model(model, base)
    osc = osc_from_params(base)
    rows = [None] * len(model.signals)
    for group, members in zip(model.groups, model.group_members):
        c = group_probe_coefficients(group, osc)  # (17, g, n_T)
        for j, i in enumerate(members):
            rows[i] = c[:, j] @ model.signals[i].kernel
    return _fast_from_rows(model, rows, base, OSC_PARAMS)


#: The polynomial parameters of the general case, in basis order.
POLY_PARAMS = GENERAL_NSI_NAMES + ("mu_nu", "zprime_coupling", "phi_coupling")


def _general_fast_model(model: SpectralModel, base) -> FastModel:
    """Fast path of a general-case model (module docstring): exact polynomial templates by autodiff."""
    if model.flavour.propagation:
        raise ModelProtocolError("the fast path needs NSI in propagation off (propagation_nsi=False): with it the "
                                 "flavour state depends on the couplings and the spectrum is not a polynomial in them; "
                                 "use the general path (the model itself)")
    osc = osc_from_params(base)
    poly = tuple(n for n in POLY_PARAMS if n in model.parameters)
    n = len(poly)
    pairs = [(-1, -1)] + [(i, -1) for i in range(n)] + [(i, j) for i in range(n) for j in range(i, n)]

    @jax.jit
    def polynomial(sig, nodes, earth):
        R = state_sums(sig.source, sig.pre, nodes, osc, exposure=earth, period=model.flavour.period)

        def f(theta):
            p = dict(base)
            p.update({k: theta[i] for i, k in enumerate(poly)})
            return trace_form(R, nodes.gL, nodes.gR, sig.t_mid, general_physics_from_params(p))

        zero = jnp.zeros(n, dtype=sig.t_mid.dtype)
        f0, J, H = f(zero), jax.jacfwd(f)(zero), jax.jacfwd(jax.jacfwd(f))(zero)
        rows = [f0] + [J[:, i] for i in range(n)]
        rows += [0.5 * H[:, i, i] if i == j else H[:, i, j] for i in range(n) for j in range(i, n)]
        return jnp.stack(rows) @ sig.kernel

    rows = [polynomial(s, nd, model.earth) for s, nd in zip(model.signals, model.state_nodes)]
    keep = np.flatnonzero(np.any(np.stack([np.asarray(r) != 0.0 for r in rows]), axis=(0, 2)))
    rows = [r[keep] for r in rows]
    return _fast_from_rows(model, rows, base, OSC_PARAMS + NONLINEAR_PHYSICS, poly_names=poly,
                           monomials=tuple(pairs[k] for k in keep))
