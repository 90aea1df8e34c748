r"""Solar-neutrino components: fluxes, spectral shapes and production profiles.

Components (paper Sec. III.A): pp, pep (line), hep, ⁷Be (two lines), ⁸B, and
the CNO neutrinos ¹³N, ¹⁵O, ¹⁷F. Total fluxes and their fractional uncertainties are those of the
B16 standard solar models, GS98 and AGSS09met compositions (N. Vinyoles et al., ApJ 835, 202
(2017), arXiv:1611.09867). Spectral shapes are the tables shipped in ``nuejax/data/solar``
(Bahcall 1997 for pp and hep; Winter et al. 2006 for ⁸B; Bahcall & Ulrich 1988 for CNO), or, for
pp and CNO, the analytic allowed :math:`\beta^+` shape of :func:`allowed_beta_plus_shape`.

Everything in this module is host-side numpy: it runs once, when a model is built.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources

import numpy as np
from .beta import beta_kinetic_spectrum, fermi_function

__all__ = [
    "SolarComponent",
    "COMPONENTS",
    "COMPONENT_NAMES",
    "CNO_NAMES",
    "SUBCOMPONENT_NAMES",
    "split_subcomponent",
    "is_line_label",
    "SOLAR_MODELS",
    "get_component",
    "flux",
    "tabulated_shape",
    "allowed_beta_plus_shape",
    "fermi_function_positron",
    "spectrum_on_grid",
    "read_data_file",
]

SOLAR_MODELS = ("gs98", "agss09")
_FLUX_FILE = "fluxes_b16.dat"


@dataclass(frozen=True)
class SolarComponent:
    """Static description of one solar-neutrino component.

    ``lines`` holds ``(E_nu [MeV], branching ratio)`` for monoenergetic components; continuous
    components have ``endpoint`` [MeV] and a ``table`` file; ``beta`` is ``(Q [MeV], Z_daughter,
    A)`` where the analytic allowed shape applies. ``row`` is the line of ``fluxes_b16.dat`` and
    ``unit`` its multiplier; ``profile_column`` the column of the ``nudistr`` tables.
    """

    name: str
    row: int
    unit: float
    profile_column: int
    lines: tuple = ()
    table: str | None = None
    endpoint: float | None = None
    beta: tuple | None = None
    line_labels: tuple = ()

    @property
    def is_line(self) -> bool:
        return bool(self.lines)


COMPONENTS: dict[str, SolarComponent] = {
    c.name: c
    for c in (
        SolarComponent("pp", 0, 1e10, 4, table="pp_shape.csv", endpoint=0.42341, beta=(0.42341, 1, 2)),
        SolarComponent("pep", 1, 1e8, 5, lines=((1.442, 1.0),), line_labels=("pep",)),
        SolarComponent("hep", 2, 1e3, 6, table="hep_shape.csv", endpoint=18.784),
        # 7Be: 0.8613 MeV (ground state, 89.56 %) and 0.3843 MeV (excited state, 10.44 %).
        SolarComponent("7Be", 3, 1e9, 7, lines=((0.8613, 0.8956), (0.3843, 0.1044)),
                       line_labels=("7Be_862", "7Be_384")),
        # The Winter et al. table is cut at 15.2 MeV (next row 0 at 15.3 MeV).
        SolarComponent("8B", 4, 1e6, 8, table="8B_shape_Winter_et_al.csv", endpoint=15.3),
        SolarComponent("13N", 5, 1e8, 9, table="n13_shape.csv", endpoint=1.1990, beta=(1.1990, 6, 13)),
        SolarComponent("15O", 6, 1e8, 10, table="o15_shape.csv", endpoint=1.7320, beta=(1.7320, 7, 15)),
        SolarComponent("17F", 7, 1e6, 11, table="f17_shape.csv", endpoint=1.7400, beta=(1.7400, 8, 17)),
    )
}
COMPONENT_NAMES = tuple(COMPONENTS)
CNO_NAMES = ("13N", "15O", "17F")
#: The reweighted spectra of the paper's workload: every continuum, and every line on its own.
SUBCOMPONENT_NAMES = ("pp", "pep", "hep", "7Be_862", "7Be_384", "8B", "13N", "15O", "17F")


def split_subcomponent(label: str) -> tuple[str, int | None]:
    """``'7Be_384'`` -> ``('7Be', 1)``; ``'pp'`` -> ``('pp', None)``."""
    for comp in COMPONENTS.values():
        if label in comp.line_labels and len(comp.lines) > 1:
            return comp.name, comp.line_labels.index(label)
    get_component(label)
    return label, None


def is_line_label(label: str) -> bool:
    """Whether the spectrum ``label`` (a component or a line of one, :data:`SUBCOMPONENT_NAMES`)
    is a line: its programs differ from a continuum's."""
    return get_component(split_subcomponent(label)[0]).is_line


def get_component(name: str) -> SolarComponent:
    """Look up a component by name, with an error that lists the valid names."""
    try:
        return COMPONENTS[name]
    except KeyError:
        raise KeyError(f"unknown solar component {name!r}; valid: {', '.join(COMPONENT_NAMES)}") from None


def check_solar_model(solar_model: str) -> str:
    key = solar_model.lower()
    if key not in SOLAR_MODELS:
        raise ValueError(f"unknown solar model {solar_model!r}; valid: {', '.join(SOLAR_MODELS)}")
    return key


def read_data_file(name: str, **loadtxt_kwargs) -> np.ndarray:
    """Load a numeric table from ``nuejax/data/solar`` with ``numpy.loadtxt``.

    Raises ``FileNotFoundError`` / ``ValueError`` naming the file when it is missing, unreadable or
    holds non-finite numbers.
    """
    ref = resources.files("nuejax") / "data" / "solar" / name
    if not ref.is_file():
        raise FileNotFoundError(f"nuejax data file missing: {ref}")
    with resources.as_file(ref) as path:
        try:
            data = np.loadtxt(path, comments="#", **loadtxt_kwargs)
        except ValueError as err:
            raise ValueError(f"cannot parse nuejax data file {path}: {err}") from err
    if not np.all(np.isfinite(data)):
        raise ValueError(f"nuejax data file {name} holds non-finite values")
    return data


@functools.lru_cache(maxsize=None)
def _flux_table() -> np.ndarray:
    table = read_data_file(_FLUX_FILE)
    if table.shape != (8, 4):
        raise ValueError(f"{_FLUX_FILE}: expected 8 rows x 4 columns, found {table.shape}")
    return table


def flux(name: str, solar_model: str = "gs98") -> tuple[float, float]:
    """Total flux [cm^-2 s^-1] and its fractional 1σ uncertainty, B16 (Vinyoles et al. 2017).

    For ⁷Be this is the sum of both lines; multiply by the branching ratios in
    ``COMPONENTS['7Be'].lines`` for each line.
    """
    comp = get_component(name)
    col = 0 if check_solar_model(solar_model) == "gs98" else 2
    row = _flux_table()[comp.row]
    return float(row[col] * comp.unit), float(row[col + 1])


@functools.lru_cache(maxsize=None)
def tabulated_shape(name: str) -> tuple[np.ndarray, np.ndarray]:
    """The tabulated spectrum ``(E [MeV], dN/dE)`` of a continuous component, unit-normalised.

    A point (0, 0) is prepended where the table starts above zero (all shapes vanish at E = 0);
    the normalisation is the trapezoid integral, i.e. exact for the linear interpolant.
    """
    comp = get_component(name)
    if comp.table is None:
        raise ValueError(f"component {name!r} is a line and has no tabulated continuum shape")
    data = read_data_file(comp.table, delimiter=",")
    E, dens = data[:, 0], data[:, 1]
    if np.any(np.diff(E) <= 0):
        raise ValueError(f"{comp.table}: energies are not strictly increasing")
    if np.any(dens < 0):
        raise ValueError(f"{comp.table}: negative spectral density")
    if E[0] > 0:
        E = np.concatenate([[0.0], E])
        dens = np.concatenate([[0.0], dens])
    keep = E <= comp.endpoint + 1e-12
    E, dens = E[keep], dens[keep]
    if E[-1] < comp.endpoint:
        E = np.concatenate([E, [comp.endpoint]])
        dens = np.concatenate([dens, [0.0]])
    norm = np.trapezoid(dens, E)
    return E, dens / norm


def fermi_function_positron(Z: int, W, A: int):
    """Fermi function for a positron (see :func:`nuejax.physics.beta.fermi_function`)."""
    return fermi_function(Z, W, A, positron=True)


def allowed_beta_plus_shape(E, Q: float, Z_daughter: int, A: int):
    r"""Allowed :math:`\beta^+` neutrino spectrum, unit-normalised on the given grid.

    :math:`dN/dE_\nu \propto E_\nu^2\, W p\, F(Z_d, W)` with the positron total energy
    :math:`W = Q - E_\nu + m_e` and momentum :math:`p = \sqrt{W^2 - m_e^2}`; zero for
    :math:`E_\nu \ge Q`. ``Q`` is the neutrino end point [MeV]. Normalised by the trapezoid rule on
    ``E`` (which must span [0, Q]).
    """
    E = np.asarray(E, dtype=float)
    # E_nu^2 W p F = (q^2 W p F) at positron kinetic energy T = Q - E_nu, in m_e units up to m_e^2
    dens = beta_kinetic_spectrum(Q - E, Q, Z_daughter, A, positron=True) * np.where(E > 0, 1.0, 0.0)
    return dens / np.trapezoid(dens, E)


def spectrum_on_grid(name: str, E, source: str = "table") -> np.ndarray:
    """Unit-normalised spectrum of a continuous component on the grid ``E`` (spanning its support).

    ``source='table'`` linearly interpolates the shipped table; ``source='analytic'`` uses
    :func:`allowed_beta_plus_shape` (pp and CNO only). The result is renormalised by the trapezoid
    rule on ``E``, so it integrates to one on this grid.
    """
    comp = get_component(name)
    E = np.asarray(E, dtype=float)
    if source == "table":
        Et, dt = tabulated_shape(name)
        dens = np.interp(E, Et, dt, left=0.0, right=0.0)
    elif source == "analytic":
        if comp.beta is None:
            raise ValueError(f"no analytic beta shape for component {name!r} (pp, 13N, 15O, 17F have one)")
        dens = allowed_beta_plus_shape(E, *comp.beta)
    else:
        raise ValueError(f"shape source must be 'table' or 'analytic', not {source!r}")
    return dens / np.trapezoid(dens, E)
