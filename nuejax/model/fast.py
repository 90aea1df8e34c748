r"""The fast path: the signal stage evaluated as a polynomial in the new-physics couplings.

With the oscillation parameters (and mediator masses) fixed, the only parameter dependence of a
signal spectrum is through the cross section, a quadratic polynomial in the NSI couplings of each
flavour plus a term in :math:`\mu_\nu^2` (paper Eqs. xs_nsi, xs_total; for the BKS cross section
the couplings :math:`g_{L,R}(T)` only change the polynomial's coefficients):

.. math::
    f_T(T; \varepsilon, \mu) = B_0(T) + \sum_{\alpha}\big[\varepsilon^L_\alpha B^L_\alpha
      + \varepsilon^R_\alpha B^R_\alpha + (\varepsilon^L_\alpha)^2 B^{LL}_\alpha
      + (\varepsilon^R_\alpha)^2 B^{RR}_\alpha + \varepsilon^L_\alpha\varepsilon^R_\alpha B^{LR}_\alpha\big]
      + \mu_\nu^2 B^{\mu}(T).

:func:`fast_model` replaces a model's :class:`~nuejax.model.signals.SolarSignals` stage by this
evaluation: where the next stage is a fixed kernel fold, each of the 17 basis spectra is folded
once into templates :math:`F_{kb}(j)` and the two stages become one
:class:`~nuejax.model.signals.FoldedPolynomial` (a call costs
:math:`\sum_k a_k \sum_b c_b(\varepsilon,\mu)F_{kb}(j)`, O(17 × n_sig × n_obs) operations instead of
a cross-section evaluation on the (T, E_ν) grid); before any other fold (a floating response) the
stage becomes :class:`~nuejax.model.signals.PolynomialSignals` (the unfolded basis at the recoil
bins). Every other stage is kept.

The basis spectra are *extracted from the general path* (the model's own recoil spectra,
:func:`~nuejax.physics.precomputed.group_recoil_spectra`) by evaluating it at unit couplings and
taking exact differences (for a quadratic, :math:`c_1 = [f(1) - f(-1)]/2`,
:math:`c_2 = [f(1) + f(-1)]/2 - f(0)`), so both paths share one implementation of the physics; the
tests check that they agree to 1e-12. With a flavour-vector magnetic moment the fast path is not
available.

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
of 210, 164 of 253 with both mediators (the stage's ``monomials`` lists them).

The parameters that the fast path fixes (the oscillation parameters, and the mediator masses of
the general case) leave the parameter set and are recorded as the model's ``baked`` values; their
Gaussian constraints stay as terms evaluated at those values, so the fast path's −2 ln L equals the
general path's everywhere, off-centre too.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import ModelProtocolError, ParameterError
from ..physics.general_nsi import trace_form
from ..physics.precomputed import group_probe_coefficients
from .flavour import state_sums
from .folds import DiagonalFold, KernelFold
from .parameters import ParameterSet, unknown_name_message
from .physics_params import GENERAL_NSI_NAMES, NONLINEAR_PHYSICS, OSC_PARAMS, general_physics_from_params, osc_from_params
from .pipeline import Model
from .signals import N_BASIS, FoldedPolynomial, PolynomialSignals, SolarSignals

__all__ = ["fast_model", "baked_values", "polynomial_basis", "POLY_PARAMS", "N_BASIS", "OSC_PARAMS"]

#: The polynomial parameters of the general case, in basis order.
POLY_PARAMS = GENERAL_NSI_NAMES + ("mu_nu", "zprime_coupling", "phi_coupling")


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


def _diagonal_basis(stage: SolarSignals, base) -> list:
    """The 17 unfolded basis spectra of every signal, (17, n_T_k) each."""
    osc = osc_from_params(base)
    rows = [None] * len(stage.signals)
    for group, members in zip(stage.groups, stage.group_members):
        c = group_probe_coefficients(group, osc)  # (17, g, n_T)
        for j, i in enumerate(members):
            rows[i] = c[:, j]
    return rows


def _general_basis(stage: SolarSignals, base, poly: tuple, kernels) -> tuple:
    """The general case's polynomial basis of every signal (module docstring), folded through
    ``kernels`` where given: rows (n_monomials, n_T_k or n_obs) per signal, and the monomials."""
    if stage.flavour.propagation:
        raise ModelProtocolError("the fast path needs NSI in propagation off (propagation_nsi=False): with it the "
                                 "flavour state depends on the couplings and the spectrum is not a polynomial in them; "
                                 "use the general path (the model itself)")
    osc = osc_from_params(base)
    n = len(poly)
    pairs = [(-1, -1)] + [(i, -1) for i in range(n)] + [(i, j) for i in range(n) for j in range(i, n)]

    @jax.jit
    def polynomial(sig, nodes, earth, kernel):
        R = state_sums(sig.source, sig.pre, nodes, osc, exposure=earth, period=stage.flavour.period)

        def f(theta):
            p = dict(base)
            p.update({k: theta[i] for i, k in enumerate(poly)})
            return trace_form(R, nodes.gL, nodes.gR, sig.t_mid, general_physics_from_params(p))

        zero = jnp.zeros(n, dtype=sig.t_mid.dtype)
        f0, J, H = f(zero), jax.jacfwd(f)(zero), jax.jacfwd(jax.jacfwd(f))(zero)
        rows = [f0] + [J[:, i] for i in range(n)]
        rows += [0.5 * H[:, i, i] if i == j else H[:, i, j] for i in range(n) for j in range(i, n)]
        out = jnp.stack(rows)
        return out if kernel is None else out @ kernel

    ks = [None] * len(stage.signals) if kernels is None else kernels
    rows = [polynomial(s, nd, stage.earth, k) for s, nd, k in zip(stage.signals, stage.state_nodes, ks)]
    keep = np.flatnonzero(np.any(np.stack([np.asarray(r) != 0.0 for r in rows]), axis=(0, 2)))
    return [r[keep] for r in rows], tuple(pairs[k] for k in keep)


def polynomial_basis(stage: SolarSignals, base, parameters: ParameterSet, kernels=None) -> tuple:
    """The fast path's basis of a signal stage at the baked values ``base``: ``(rows, poly_names,
    monomials)``, rows a list of (n_basis, n_T_k) arrays per signal, or (n_basis, n_obs) folded
    through ``kernels`` (one (n_T_k, n_obs) per signal) when given."""
    if stage.flavour is not None:
        poly = tuple(n for n in POLY_PARAMS if n in parameters)
        rows, monomials = _general_basis(stage, base, poly, kernels)
        return rows, poly, monomials
    rows = _diagonal_basis(stage, base)
    if kernels is not None:
        rows = [r @ k for r, k in zip(rows, kernels)]
    return rows, (), ()


def fast_model(model: Model, osc_params: dict | None = None) -> Model:
    """The fast path of ``model`` (module docstring) at the oscillation parameters ``osc_params``
    (default: the parameter set's values).

    A general-case model bakes in its mediator masses too, and refuses NSI in propagation (the
    state then depends on the couplings: not a polynomial).

    Raises:
        ModelProtocolError: a model without a general signal stage, or with NSI in propagation.
        ParameterError: a parameter that the fast path would bake in is free in ``model`` (fix it
            first, at the value to bake in), an unknown name in ``osc_params``.
    """
    if not isinstance(model, Model):
        raise ModelProtocolError(f"fast_model needs a nuejax Model, got {type(model).__name__}")
    stage = model.stage(SolarSignals)
    if stage is None:
        raise ModelProtocolError("fast_model: the model has no general signal stage (SolarSignals) to evaluate fast; "
                                 "is it a fast path already?")
    baked_names = OSC_PARAMS + (NONLINEAR_PHYSICS if stage.flavour is not None else ())
    released = [n for n in baked_names if n in model.parameters and not model.parameters[n].fixed]
    if released:
        raise ParameterError(f"fast_model: {', '.join(released)} free in the model, but the fast path bakes "
                             f"{'it' if len(released) == 1 else 'them'} in at "
                             + ", ".join(f"{n} = {model.parameters[n].value:g}" for n in released)
                             + ": fix them first (model.parameters.fix(...), at the value to bake in) or fit on the "
                             "general path")
    base = baked_values(model, osc_params)
    i = model.stages.index(stage)
    fold = model.stages[i + 1] if i + 1 < len(model.stages) else None
    parameters = ParameterSet(tuple(p for p in model.parameters.parameters if p.name not in baked_names))
    if isinstance(fold, (KernelFold, DiagonalFold)):
        rows, poly, monomials = polynomial_basis(stage, base, model.parameters, fold.kernel_list())
        new = FoldedPolynomial(jnp.stack(rows), fold.norms, poly, monomials)
        stages = model.stages[:i] + (new,) + model.stages[i + 2:]
    else:
        rows, poly, monomials = polynomial_basis(stage, base, model.parameters)
        n_T = max(r.shape[1] for r in rows)
        basis = jnp.stack([jnp.pad(r, ((0, 0), (0, n_T - r.shape[1]))) for r in rows])
        if not monomials:
            assert basis.shape[1] == N_BASIS
        stages = model.stages[:i] + (PolynomialSignals(basis, poly, monomials),) + model.stages[i + 1:]
    baked = tuple(model.baked) + tuple(dataclasses.replace(p, value=float(base[p.name]))
                                       for p in model.parameters.parameters if p.name in baked_names)
    return Model.create(stages, parameters, obs_edges=model.obs_edges, constraints=model.constraints, baked=baked,
                        check_shape=False, likelihood=model.likelihood)
