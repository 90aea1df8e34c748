"""XENONnT SR0 electronic-recoil open data (E. Aprile et al. (XENON), Phys. Rev. Lett. 129, 161805
(2022), arXiv:2207.11330), as shipped in ``nuejax/data/xenonnt_sr0/`` (its ``FORMAT.md`` says what
each file holds and what was checked): the events, the best-fit background model B0 and the total
efficiency, read and checked once."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

import numpy as np

from ..errors import DataError

__all__ = ["XENONNT_SR0_EXPOSURE", "XenonntSR0", "packaged_xenonnt_sr0"]

#: The SR0 exposure [t·yr]: the abstract's 1.16, and the binned data file's counts/1.16 (FORMAT.md).
XENONNT_SR0_EXPOSURE = 1.16


@dataclass(frozen=True)
class XenonntSR0:
    """The released SR0 data: ``events`` (433,) reconstructed energies [keV], sorted; ``b0_energy``,
    ``b0_rate`` (300,) the background model B0 at reconstructed energy [keV], events/(t·yr·keV),
    efficiency included, on 0.1-keV steps; ``eff_energy``, ``efficiency`` (787,) the total efficiency
    at reconstructed energy; ``window`` (1, 30) keV; ``exposure`` [t·yr]."""

    events: np.ndarray
    b0_energy: np.ndarray
    b0_rate: np.ndarray
    eff_energy: np.ndarray
    efficiency: np.ndarray
    window: tuple = (1.0, 30.0)
    exposure: float = XENONNT_SR0_EXPOSURE

    def efficiency_at(self, energy_kev) -> np.ndarray:
        """The total efficiency at reconstructed energies [keV], linear in energy between the
        tabulated points; above the last point (29.88 keV) it is held at its last value (0.815),
        an assumption (FORMAT.md); below the first (0.1 keV), 0.

        Raises:
            DataError: an energy that is negative or not finite.
        """
        e = np.asarray(energy_kev, dtype=float)
        if not np.all(np.isfinite(e)) or np.any(e < 0):
            raise DataError(f"efficiency_at: energies must be finite and >= 0 keV, got min {np.nanmin(e)!r}")
        return np.interp(e, self.eff_energy, self.efficiency, left=0.0, right=self.efficiency[-1])


def _table(name: str, columns: int) -> np.ndarray:
    path = resources.files("nuejax") / "data" / "xenonnt_sr0" / name
    a = np.loadtxt(str(path), ndmin=2)
    if a.shape[1] != columns or not np.all(np.isfinite(a)):
        raise DataError(f"nuejax/data/xenonnt_sr0/{name}: expected {columns} finite column(s), got shape {a.shape}")
    return a


def packaged_xenonnt_sr0() -> XenonntSR0:
    """The SR0 data shipped with nuejax (``nuejax/data/xenonnt_sr0/``), checked: 433 sorted
    events inside (1, 30) keV, B0 ≥ 0 on 300 steps, efficiency in [0, 1] on increasing energies."""
    ev = _table("data_unbinned_1to30kev.txt", 1)[:, 0]
    b0 = _table("bkg_model.txt", 2)
    eff = _table("efficiency.txt", 2)
    if ev.size != 433 or np.any(np.diff(ev) < 0) or ev.min() < 1.0 or ev.max() > 30.0:
        raise DataError("nuejax/data/xenonnt_sr0/data_unbinned_1to30kev.txt: expected 433 sorted energies in (1, 30) keV")
    if b0.shape[0] != 300 or np.any(b0[:, 1] < 0):
        raise DataError("nuejax/data/xenonnt_sr0/bkg_model.txt: expected 300 rows of non-negative rates")
    if np.any(np.diff(eff[:, 0]) <= 0) or np.any((eff[:, 1] < 0) | (eff[:, 1] > 1)):
        raise DataError("nuejax/data/xenonnt_sr0/efficiency.txt: energies must increase and efficiencies lie in [0, 1]")
    return XenonntSR0(ev, b0[:, 0], b0[:, 1], eff[:, 0], eff[:, 1])
