r"""Neutrino–electron scattering on atoms: electrons per tonne and the stepping approximation.

A xenon (or other) target scatters neutrinos on its atomic electrons. Below a few tens of keV the
recoil energy T is comparable to the binding energies, and an electron of a shell with binding
energy :math:`B_i > T` cannot be ionised. The **stepping approximation** keeps the free-electron
cross section per electron and counts, at each T, only the electrons of shells with
:math:`B_i \le T`:

.. math::
    \frac{d\sigma_{\rm atom}}{dT}(T, E) = \sum_i n_i\,\Theta(T - B_i)\,\frac{d\sigma_{\rm free}}{dT}(T, E),

with :math:`n_i` the occupancy of shell i (Kopeikin, Mikaelyan and Sinev, Phys. At. Nucl. 60 (1997)
1859; compared with ab-initio (RRPA) xenon cross sections in J.-W. Chen et al., Phys. Lett. B 774
(2017) 656, arXiv:1610.04177, and C.-C. Hsieh et al., Phys. Rev. D 100 (2019) 073001,
arXiv:1903.06085: within a few per cent above about 1 keV for the weak interaction). It acts the
same way on every interaction the package has (weak with radiative corrections, general NSI, the
magnetic moment, light mediators): the factor depends on T alone. ``stepping=False`` gives the
free-electron case (all Z electrons at every T).

Binding energies: G. P. Williams, "Electron binding energies", Table 1-1 of the X-Ray Data Booklet
(LBNL, 2009 edition), values for the element in its natural (gas) form relative to the vacuum
level; the tests compare them with the independent compilation of T. A. Carlson, *Photoelectron
and Auger Spectroscopy* (Plenum, 1975), as tabulated in Geant4's ``G4AtomicShells``.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from ..constants import N_A

__all__ = ["AtomicTarget", "DAYS_PER_YEAR", "SOLAR_COMPONENTS", "XENON", "active_electrons", "atoms_per_tonne",
           "electrons_per_tonne", "solar_recoil_rate"]


@dataclass(frozen=True)
class AtomicTarget:
    """A target element: ``Z`` electrons per atom in ``shells`` (name, binding energy [keV],
    occupancy), natural molar mass ``molar_mass`` [g/mol]; ``source`` cites the binding energies."""

    name: str
    Z: int
    molar_mass: float
    shells: tuple
    source: str

    def __post_init__(self):
        n = sum(occ for _, _, occ in self.shells)
        if n != self.Z:
            raise ValueError(f"{self.name}: shell occupancies add up to {n} electrons, not Z = {self.Z}")
        if any(b <= 0 for _, b, _ in self.shells):
            raise ValueError(f"{self.name}: binding energies must be positive (keV)")

    @property
    def binding_energies_mev(self) -> np.ndarray:
        """The shells' binding energies in MeV (the package's energy unit)."""
        return np.array([b for _, b, _ in self.shells]) * 1e-3

    @property
    def occupancies(self) -> np.ndarray:
        return np.array([occ for _, _, occ in self.shells], dtype=float)


#: Natural xenon: Z = 54, molar mass 131.293 g/mol (IUPAC 2021 standard atomic weight), the 17
#: subshells of [Kr] 4d¹⁰ 5s² 5p⁶ with the X-Ray Data Booklet's binding energies (Table 1-1).
XENON = AtomicTarget(
    name="Xe", Z=54, molar_mass=131.293,
    shells=(("K", 34.561, 2),
            ("L1", 5.453, 2), ("L2", 5.107, 2), ("L3", 4.786, 4),
            ("M1", 1.1487, 2), ("M2", 1.0021, 2), ("M3", 0.9406, 4), ("M4", 0.6890, 4), ("M5", 0.6764, 6),
            ("N1", 0.2132, 2), ("N2", 0.1467, 2), ("N3", 0.1455, 4), ("N4", 0.0695, 4), ("N5", 0.0675, 6),
            ("O1", 0.0233, 2), ("O2", 0.0134, 2), ("O3", 0.0121, 4)),
    source="G. P. Williams, X-Ray Data Booklet (LBNL, 2009), Table 1-1",
)


def atoms_per_tonne(target: AtomicTarget = XENON) -> float:
    """Atoms in one tonne (10⁶ g) of the natural element: :math:`10^6 N_A / M`."""
    return 1e6 * N_A / target.molar_mass


def electrons_per_tonne(target: AtomicTarget = XENON) -> float:
    """Electrons in one tonne: Z times :func:`atoms_per_tonne` (2.477 × 10²⁹ for xenon)."""
    return target.Z * atoms_per_tonne(target)


def active_electrons(T, target: AtomicTarget = XENON, *, stepping: bool = True):
    r"""Electrons per atom that can scatter at recoil energy ``T`` [MeV]: :math:`\sum_i n_i
    \Theta(T - B_i)` (stepping approximation, module docstring; a shell counts from T = B_i on),
    or Z at every T (``stepping=False``, free electrons). Same shape as ``T``.

    Raises:
        ValueError: a concrete ``T`` that is negative or not finite.
    """
    if not isinstance(T, jax.core.Tracer):  # a traced T has no value to check
        t = np.asarray(T, dtype=float)
        if t.size and (not np.all(np.isfinite(t)) or np.any(t < 0)):
            raise ValueError(f"recoil energies must be finite and >= 0 MeV; got {int(np.sum(t < 0))} negative and "
                             f"{int(np.sum(~np.isfinite(t)))} non-finite value(s)")
    T = jnp.asarray(T)
    if not stepping:
        return jnp.full(T.shape, float(target.Z), dtype=T.dtype)
    b = jnp.asarray(target.binding_energies_mev, dtype=T.dtype)
    n = jnp.asarray(target.occupancies, dtype=T.dtype)
    return jnp.sum(jnp.where(T[..., None] >= b, n, 0.0), axis=-1)



#: Days per year of an exposure in tonne-years (the Julian year).
DAYS_PER_YEAR = 365.25
#: The solar components (:func:`~nuejax.physics.spectra.build_source` names; ⁷Be both lines).
SOLAR_COMPONENTS = ("pp", "pep", "hep", "7Be", "8B", "13N", "15O", "17F")


def solar_recoil_rate(T, physics=None, osc=None, *, target: AtomicTarget = XENON, stepping: bool = True,
                      components=SOLAR_COMPONENTS, solar_model: str = "gs98", radiative: bool = True,
                      n_quad: int = 48) -> dict:
    r"""Solar-neutrino electron-recoil rate on ``target`` at recoil energies ``T`` [MeV], in
    events/(t·yr·keV) (year: :data:`DAYS_PER_YEAR` days), per component and ``"total"``:

    .. math:: \frac{dR}{dT} = N_{\rm atoms}\,\Phi_k \int dE\,\lambda_k(E)\sum_\alpha \bar P_{e\alpha}(E)
              \,\frac{d\sigma_\alpha}{dT}\;\times\;\sum_i n_i\Theta(T - B_i),

    the free-electron spectrum per electron (:func:`~nuejax.physics.spectra.differential_rate`,
    or :func:`~nuejax.physics.spectra.recoil_spectrum_general` for a
    :class:`~nuejax.physics.general_nsi.GeneralPhysics`) times :func:`active_electrons`.
    ``physics`` defaults to the Standard Model, ``osc`` to the default oscillation parameters."""
    from .cross_section import NewPhysics
    from .general_nsi import GeneralPhysics
    from .oscillation import OscillationParams
    from .spectra import build_source, rate_per_day_factor, recoil_spectrum, recoil_spectrum_general

    physics = NewPhysics() if physics is None else physics
    osc = OscillationParams() if osc is None else osc
    T = jnp.asarray(T, dtype=float)
    steps = active_electrons(T, target, stepping=stepping)
    per = atoms_per_tonne(target) * DAYS_PER_YEAR * 1e-3  # per atom-day-MeV -> per tonne-year-keV
    out, total = {}, 0.0
    for name in components:
        src = build_source(name, solar_model=solar_model)
        if isinstance(physics, GeneralPhysics):
            f = recoil_spectrum_general(src, T, physics, osc, radiative=radiative, n_quad=n_quad, in_sigma0_units=True)
        else:
            f = recoil_spectrum(src, T, physics, osc, radiative=radiative, n_quad=n_quad, in_sigma0_units=True)
        rate = rate_per_day_factor(src, 1.0, in_sigma0_units=True) * f * steps * per
        out[name] = rate
        total = total + rate
    out["total"] = total
    return out
