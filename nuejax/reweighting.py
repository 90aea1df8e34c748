r"""The paper's spectrum reweighting (Sec. III), equation by equation, and its fixed kernel.

For component :math:`k` with recoil bins :math:`T_i` and observable bins :math:`j`:

* Eq. (Rij): :math:`R_{ij} = \dfrac{N_{ij}/M_j}{\sum_{i'j'} N_{i'j'}/M_{j'}}\, s`, with the
  live-time mask :math:`M_j` and the scale :math:`s` that matches the integral of :math:`R` to the
  component's 1-D PDF in the region of interest -- here the fraction of all generated events that
  fall in the observable window (:attr:`ResponseHistogram.efficiency`), so that
  :math:`\sum_j f_{N_p}(j)` is that fraction and ``rate_k`` is the component's total rate;
* Eq. (fT_norm): :math:`\hat f_T^{SM}(T_l) = f_T^{SM}(T_l)/\sum_{l'} f_T^{SM}(T_{l'})`;
* Eq. (reweight_factor): :math:`r(T_l) = f_T(T_l;\varepsilon)/\hat f_T^{SM}(T_l)`;
* Eq. (fNp_reweight): :math:`f_{N_p}(j;\varepsilon) = \dfrac{1}{\sum_l f_T(T_l;\varepsilon)}
  \sum_i \dfrac{R_{ij}}{\hat f_T^{SM}(T_i)} f_T(T_i;\varepsilon)`, which equals
  :math:`\sum_i R_{ij}` at :math:`\varepsilon = 0` by construction.

In the expected spectrum (Eq. mu_total) the rate of a signal component is
:math:`\text{rate}_k(\varepsilon) = a_k R_k^{SM} \sum_l f_T(T_l;\varepsilon)/\sum_l f_T^{SM}(T_l)`
(flux normalisation :math:`a_k` times the SM rate, times the change of the integrated cross
section), and the product multiplies out to one fixed kernel,

.. math::
    \text{rate}_k(\varepsilon)\, f_{N_p}^{(k)}(j;\varepsilon)
      = a_k \sum_i G_{ij}\, f_T(T_i;\varepsilon), \qquad
    G_{ij} = R_k^{SM}\, \frac{R_{ij}}{f_T^{SM}(T_i)},

computed once (:func:`transfer_kernel`). The kernel form is what the model evaluates: it is the
same number, needs no division per call, and stays finite where the separate factors do not
(the magnetic-moment :math:`\sum_l f_T(T_l)` grows like :math:`1/T_1`). ``tests/test_reweighting.py``
checks the two forms against each other.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .detector.montecarlo import ResponseHistogram
from .errors import InputError

__all__ = [
    "response_matrix",
    "normalized_reference",
    "reweight_factor",
    "reweighted_spectrum",
    "transfer_kernel",
]


def response_matrix(hist: ResponseHistogram, mask=None, scale=None):
    r"""Paper Eq. (Rij): the globally normalised joint response :math:`R_{ij}` (numpy, fixed).

    ``mask`` :math:`M_j` (n_obs,) defaults to ones and must be finite, >= 0, and > 0 where the
    histogram has entries; ``scale`` :math:`s` defaults to the window efficiency of ``hist``
    and must be finite and > 0. ``hist`` was checked when it was built
    (:meth:`~nuejax.detector.montecarlo.ResponseHistogram.validate`).

    Raises:
        InputError: ``hist`` is not a :class:`ResponseHistogram`, or a bad mask or scale; the
            message names the histogram and the observable bin.
    """
    if not isinstance(hist, ResponseHistogram):
        raise InputError(f"response_matrix needs a ResponseHistogram, got {type(hist).__name__}")
    what = f"response histogram {hist.name!r}"
    N = np.asarray(hist.counts, dtype=float)
    M = np.ones(N.shape[1]) if mask is None else np.asarray(mask, dtype=float)
    if M.shape != (N.shape[1],):
        raise InputError(f"{what}: live-time mask has shape {M.shape}, expected ({N.shape[1]},)")
    bad = np.nonzero(~np.isfinite(M) | (M < 0))[0]
    if bad.size:
        raise InputError(f"{what}: live-time mask is {M[bad[0]]} in observable bin {int(bad[0])}; "
                         "it must be finite and >= 0")
    bad = np.nonzero((M <= 0) & (N.sum(axis=0) > 0))[0]
    if bad.size:
        raise InputError(f"{what}: live-time mask is <= 0 in observable bin(s) {bad[:5].tolist()} "
                         "that hold entries")
    NM = np.where(M > 0, N / np.where(M > 0, M, 1.0), 0.0)
    total = NM.sum()
    if not total > 0:
        raise InputError(f"{what}: no entries left after the live-time mask")
    s = hist.efficiency if scale is None else float(scale)
    if not (np.isfinite(s) and s > 0):
        raise InputError(f"{what}: scale s = {s:g}; it must be finite and > 0")
    return NM / total * s


def normalized_reference(f_sm):
    r"""Paper Eq. (fT_norm): :math:`\hat f_T^{SM} = f_T^{SM}/\sum_l f_T^{SM}(T_l)`."""
    return f_sm / jnp.sum(f_sm)


def reweight_factor(f, f_hat_sm):
    r"""Paper Eq. (reweight_factor): :math:`r = f_T(\varepsilon)/\hat f_T^{SM}` (zero where
    :math:`\hat f_T^{SM} = 0`)."""
    safe = jnp.where(f_hat_sm > 0, f_hat_sm, 1.0)
    return jnp.where(f_hat_sm > 0, f / safe, 0.0)


def reweighted_spectrum(R, f_hat_sm, f):
    r"""Paper Eq. (fNp_reweight): :math:`f_{N_p}(j) = \sum_i R_{ij}\, r_i / \sum_l f_T(T_l)`."""
    return reweight_factor(f, f_hat_sm) @ R / jnp.sum(f)


def transfer_kernel(R, f_sm, rate_sm: float, *, name: str = ""):
    r"""Fixed kernel :math:`G_{ij} = R^{SM}\,R_{ij}/f_T^{SM}(T_i)` (module docstring), numpy.

    ``f_sm`` are the SM recoil-spectrum values at the representative energies :math:`T_i`.
    A recoil bin with response entries but a vanishing SM spectrum cannot be reweighted: that is
    an error naming the component and the bin.

    Raises:
        InputError: ``f_sm`` of the wrong shape, negative or not finite, or zero in a recoil bin
            that holds response entries.
    """
    R = np.asarray(R, dtype=float)
    f_sm = np.asarray(f_sm, dtype=float)
    if f_sm.shape != (R.shape[0],):
        raise InputError(f"{name}: SM spectrum has {f_sm.shape} values for {R.shape[0]} recoil bins")
    bad = np.nonzero(~np.isfinite(f_sm) | (f_sm < 0))[0]
    if bad.size:
        raise InputError(f"{name}: SM recoil spectrum is {f_sm[bad[0]]:g} in recoil bin {int(bad[0])} "
                         "(negative or not finite)")
    bad = np.nonzero((f_sm <= 0) & (R.sum(axis=1) > 0))[0]
    if bad.size:
        raise InputError(f"{name}: recoil bin(s) {bad[:5].tolist()} hold response entries but the SM spectrum "
                         "vanishes there; the reweighting factor is undefined")
    inv = np.where(f_sm > 0, 1.0 / np.where(f_sm > 0, f_sm, 1.0), 0.0)
    return rate_sm * R * inv[:, None]
