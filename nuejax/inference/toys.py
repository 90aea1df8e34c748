r"""Pseudo-experiments (toys) with resampled auxiliary measurements, and the batched kernel that
fits them under a tested hypothesis and under the alternative.

**Toys.** A toy drawn at the parameter point :math:`\theta_{\rm gen}` is a Poisson draw of every
bin, :math:`n_j \sim \mathrm{Pois}(\mu_j(\theta_{\rm gen}))`, *and* a new value of every auxiliary
measurement that constrains a fitted parameter: the constraint centres are data too (Cowan,
Cranmer, Gross, Vitells, EPJC 71 (2011) 1554, Sec. 2; the "unconditional ensemble" of the LHC
Higgs combination, ATL-PHYS-PUB-2011-011, Sec. 3.1):

* a Gaussian constraint :math:`C = \lVert L^{-1}(x - c)\rVert^2` (a parameter's ``constraint``
  or a :class:`~nuejax.model.constraints.GaussianConstraint`) gets :math:`c \sim
  \mathcal N(x_{\rm gen}, LL^{\mathsf T})`;
* a :class:`~nuejax.model.constraints.LogNormalConstraint` gets :math:`\ln m \sim \mathcal N(\ln
  x_{\rm gen}, \sigma_{\ln}^2)`.

The toy's −2 ln L is the model's with every such term moved to its toy centre:
:math:`-2\ln L_{\rm toy}(\theta) = -2\ln L(\theta; n) - \sum_k C_k(\theta; c_k) + \sum_k
C_k(\theta; c_k^{\rm toy})`, so any model of the fitting protocol works unchanged. Constraints of
fixed parameters are constants and are not resampled; half-Gaussian and custom penalty terms
have no auxiliary measurement to resample and are refused (``resample_aux=False`` keeps every
centre fixed, the "conditional ensemble").

**Reproducible.** Toy ``i`` of a run with key ``k`` comes from ``jax.random.fold_in(k, i)``
alone, wherever and in whatever batch it is generated, so a run split over devices, chunks or
processes draws the same toys as one uninterrupted run; :func:`toy` redraws one, given the run's
auxiliary measurements and number of Poisson parts.

**The kernel** (:func:`toy_fits`) takes rows (generating point, tested point, toy index), draws the
toy on the device and fits it twice with the bound-constrained Newton solver
(:func:`~nuejax.inference.newton.minimize_bounded`): with the parameters of interest free inside
their bounds (the global fit) and fixed at the tested values (the conditional fit), the nuisance
parameters profiled in both. All rows are one ``vmap``-ped program.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import InputError
from ..model.constraints import GaussianConstraint, LogNormalConstraint
from ..model.likelihood import poisson_draw, poisson_parts
from .newton import minimize_bounded

__all__ = ["AuxMeasurements", "WithAuxCentres", "aux_measurements", "draw_parts", "toy", "toy_fits", "TOY_FIT_KEYS"]

#: Output arrays of :func:`toy_fits` per row.
TOY_FIT_KEYS = ("t", "f_global", "f_cond", "poi_hat", "nuis_hat", "conv_global", "conv_cond")


def _static(**kw):
    return field(metadata={"static": True}, **kw)


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class AuxMeasurements:
    """The auxiliary measurements of a model that a toy resamples, as one flat vector.

    Gaussian blocks (names, nominal centre, Cholesky factor of the covariance) and log-normal
    terms (name, nominal median, width in ln); ``offsets`` places each in the flat vector of
    :meth:`nominal` / :meth:`sample` (Gaussian blocks first, then log-normal medians).
    """

    gauss_centres: tuple  # of (n_k,) arrays
    gauss_chols: tuple  # of (n_k, n_k) lower-triangular arrays
    logn_medians: jax.Array  # (n_logn,)
    logn_sigmas: jax.Array  # (n_logn,)
    gauss_names: tuple = _static(default=())
    logn_names: tuple = _static(default=())

    @property
    def size(self) -> int:
        return sum(len(n) for n in self.gauss_names) + len(self.logn_names)

    def nominal(self) -> jax.Array:
        """The model's own centres (medians), flat."""
        parts = [jnp.atleast_1d(c) for c in self.gauss_centres] + [jnp.atleast_1d(self.logn_medians)]
        return jnp.concatenate(parts) if self.size else jnp.zeros(0)

    def sample(self, key, p) -> jax.Array:
        """Toy centres drawn about the generating point ``p`` (module docstring), flat."""
        parts = []
        keys = jax.random.split(key, len(self.gauss_names) + 1)
        for k, names, chol in zip(keys, self.gauss_names, self.gauss_chols):
            x = jnp.stack([jnp.asarray(p[n]) for n in names])
            parts.append(x + chol @ jax.random.normal(k, x.shape, dtype=chol.dtype))
        if self.logn_names:
            x = jnp.stack([jnp.asarray(p[n]) for n in self.logn_names])
            z = jax.random.normal(keys[-1], x.shape, dtype=self.logn_sigmas.dtype)
            parts.append(jnp.exp(jnp.log(x) + self.logn_sigmas * z))
        return jnp.concatenate(parts) if parts else jnp.zeros(0)

    def at(self, p) -> jax.Array:
        """Centres equal to the parameter values ``p`` (the auxiliary data of an Asimov data set), flat."""
        names = [n for block in self.gauss_names for n in block] + list(self.logn_names)
        return jnp.stack([jnp.asarray(p[n], dtype=jnp.result_type(float)) for n in names]) if names else jnp.zeros(0)

    def terms(self, p, centres) -> jax.Array:
        """Σ_k C_k(p; centres_k): every term at the given flat centres."""
        total = jnp.zeros((), dtype=jnp.result_type(float))
        at = 0
        for names, chol in zip(self.gauss_names, self.gauss_chols):
            c = centres[at:at + len(names)]
            at += len(names)
            r = jnp.stack([jnp.asarray(p[n]) for n in names]) - c
            z = jax.scipy.linalg.solve_triangular(chol, r, lower=True)
            total = total + z @ z
        if self.logn_names:
            m = centres[at:]
            x = jnp.stack([jnp.asarray(p[n]) for n in self.logn_names])
            safe = jnp.where(x > 0, x, 1.0)
            v = ((jnp.log(safe) - jnp.log(m)) / self.logn_sigmas) ** 2
            total = total + jnp.sum(jnp.where(x > 0, v, jnp.inf))
        return total

    def shift(self, p, centres) -> jax.Array:
        """What moving every term from its nominal centre to ``centres`` adds to −2 ln L (+inf,
        not NaN, where a log-normal parameter is <= 0: both terms are infinite there)."""
        if not self.size:
            return jnp.zeros((), dtype=jnp.result_type(float))
        a, b = self.terms(p, centres), self.terms(p, self.nominal())
        return jnp.where(jnp.isinf(a) | jnp.isinf(b), jnp.inf, a - b)


def aux_measurements(model, fitted, *, resample_aux: bool = True) -> AuxMeasurements:
    """The auxiliary measurements of ``model`` on the parameters in ``fitted`` (module docstring).

    Reads the Gaussian ``constraint`` of each parameter (:class:`~nuejax.model.parameters.Parameter`)
    and the model's ``constraints`` terms, if it has any. Raises
    :class:`~nuejax.errors.InputError` for a term on a fitted parameter that cannot be resampled
    (half-Gaussian, penalty), unless ``resample_aux`` is false (then nothing is resampled).
    """
    dt = jnp.result_type(float)
    empty = AuxMeasurements((), (), jnp.zeros(0, dt), jnp.zeros(0, dt))
    if not resample_aux:
        return empty
    fitted = set(fitted)
    g_names, g_centres, g_chols, l_names, l_med, l_sig = [], [], [], [], [], []
    for par in model.parameters.parameters:
        if par.constraint is not None and par.name in fitted:
            g_names.append((par.name,))
            g_centres.append(jnp.asarray([par.constraint[0]], dtype=dt))
            g_chols.append(jnp.asarray([[par.constraint[1]]], dtype=dt))
    for term in getattr(model, "constraints", ()) or ():
        names = tuple(getattr(term, "names", ()))
        if not set(names) & fitted:
            continue
        if isinstance(term, GaussianConstraint):
            g_names.append(names)
            g_centres.append(jnp.asarray(term.centre, dtype=dt))
            g_chols.append(jnp.asarray(term.chol, dtype=dt))
        elif isinstance(term, LogNormalConstraint):
            l_names.append(names[0])
            l_med.append(term.median)
            l_sig.append(term.sigma_ln)
        else:
            raise InputError(f"toys: the constraint term {type(term).__name__} on {names} has no auxiliary "
                             "measurement to resample (only Gaussian and log-normal terms do); pass "
                             "resample_aux=False to keep every constraint centre fixed in the toys")
    as_vec = lambda v: jnp.asarray(jnp.stack(v) if v else jnp.zeros(0), dtype=dt)  # noqa: E731
    return AuxMeasurements(tuple(g_centres), tuple(g_chols), as_vec(l_med), as_vec(l_sig), tuple(g_names),
                           tuple(l_names))


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class WithAuxCentres:
    """``model`` with its auxiliary measurements moved to ``centres`` (a model of the fitting
    protocol: fits of a toy or of an Asimov data set with its own auxiliary data)."""

    model: object
    aux: AuxMeasurements
    centres: jax.Array

    @property
    def parameters(self):
        return self.model.parameters

    @property
    def n_obs(self):
        return self.model.n_obs

    def expected(self, p):
        return self.model.expected(p)

    def nll(self, p, data):
        return self.model.nll(p, data) + self.aux.shift(p, self.centres)


def _draw(key, model, p, aux: AuxMeasurements, parts: int = 1):
    """One toy from its own key: (counts, aux centres); ``parts`` as in :func:`~nuejax.model.likelihood.poisson_draw`."""
    k_data, k_aux = jax.random.split(key)
    mu = model.expected(p)
    return poisson_draw(k_data, mu, parts=parts), aux.sample(k_aux, p)


def draw_parts(model, base: dict, names: tuple, gen_x) -> int:
    """The static ``parts`` of the Poisson draws for toys at the generating points ``gen_x``
    (rows in the order of ``names``): enough that no part's mean exceeds
    :data:`~nuejax.model.likelihood.POISSON_PART_MAX` (evaluated once, eagerly)."""
    gen_x = np.unique(np.asarray(gen_x, dtype=float), axis=0)

    def mu_max(x):
        p = dict(base)
        for i, n in enumerate(names):
            p[n] = x[i]
        return jnp.max(model.expected(p))

    return poisson_parts(float(np.max(np.asarray(jax.jit(jax.vmap(mu_max))(jnp.asarray(gen_x))))))


def toy(model, params, key, index: int, aux: AuxMeasurements | None = None, parts: int | None = None):
    """Toy ``index`` of the run with ``key`` at ``params``: (counts, aux centres). With the run's
    ``aux`` (:func:`aux_measurements` of its fitted parameters) and ``parts`` (stored in its
    ``setup.npz``; default: from this point's largest mean) it is the toy that the batched,
    sharded or resumed run drew for this index (``feldman_cousins``: index ``k * n_toys + i`` for
    toy ``i`` of grid point ``k``)."""
    aux = aux_measurements(model, ()) if aux is None else aux
    p = {k: jnp.asarray(v) for k, v in model.parameters.values(params).items()}
    if parts is None:
        parts = poisson_parts(float(np.max(np.asarray(model.expected(p)))))
    return _draw(jax.random.fold_in(key, index), model, p, aux, parts)


def _objective(x, args, *, names, fixed_names):
    fixed_vals, model, base, counts, aux, centres = args
    p = dict(base)
    for i, n in enumerate(fixed_names):
        p[n] = fixed_vals[i]
    for i, n in enumerate(names):
        p[n] = x[i]
    return model.nll(p, counts) + aux.shift(p, centres)


def _global_row(gen_x, x0, index, key, model, base, aux, *, names, lo, hi, max_iter, edm_tol, parts):
    """Draw toy ``index`` at ``gen_x`` and fit every parameter in ``names`` inside its bounds from ``x0``."""
    p = dict(base)
    for i, n in enumerate(names):
        p[n] = gen_x[i]
    counts, centres = _draw(jax.random.fold_in(key, index), model, p, aux, parts)
    f = functools.partial(_objective, names=names, fixed_names=())
    r = minimize_bounded(f, x0, (jnp.zeros(0, gen_x.dtype), model, base, counts, aux, centres), lo, hi,
                         max_iter=max_iter, edm_tol=edm_tol)
    return r.fun, r.x, r.converged, r.status


def _cond_row(gen_x, x0, test_poi, index, key, model, base, aux, *, names, poi, lo, hi, max_iter, edm_tol, parts):
    """Draw the same toy and fit the nuisances from ``x0`` with the parameters of interest at ``test_poi``."""
    k = len(poi)
    nuis = names[k:]
    p = dict(base)
    for i, n in enumerate(names):
        p[n] = gen_x[i]
    counts, centres = _draw(jax.random.fold_in(key, index), model, p, aux, parts)
    args = (test_poi, model, base, counts, aux, centres)
    if not nuis:
        fc = _objective(jnp.zeros(0, gen_x.dtype), args, names=(), fixed_names=poi)
        return fc, jnp.zeros(0, gen_x.dtype), jnp.isfinite(fc), jnp.where(jnp.isfinite(fc), 0, 3)
    f = functools.partial(_objective, names=nuis, fixed_names=poi)
    r = minimize_bounded(f, x0, args, lo[k:], hi[k:], max_iter=max_iter, edm_tol=edm_tol)
    return r.fun, r.x, r.converged, r.status


#: Passes over a batch (:func:`toy_fits`): (iterations, 1 / fraction of the batch per launch;
#: ``None``: up to ``max_iter``). In a ``vmap``-ped while loop every row runs as long as the slowest,
#: and toy fits of the default model take 6 iterations on average but up to 53 (65 536 toys:
#: median 5, 99 % quantile 18), so all rows run 10 iterations and the rows still running continue
#: in launches of 1/8 of the batch. On one H100: 4.0e4 toy fits/s in one pass, 7.1e4 in these two,
#: 8.0e4 with a third (20 more iterations, then launches of 1/64), which cost 19 s more compilation
#: and gained nothing on a 10^6-fit belt (docs/benchmarks.md).
PASSES = ((10, 1), (None, 8))

@functools.lru_cache(maxsize=None)
def compiled_toy_fits(names: tuple, poi: tuple, lo: tuple, hi: tuple, max_iter: int, edm_tol: float, parts: int):
    """The two jitted kernels over rows (global and conditional fits), cached per structure (a
    second run does not recompile). They are separate programs: XLA:CPU can deadlock on one
    program that runs two batched Newton loops (eigh and Cholesky in each; docs/inference.md,
    "Known issue"), and the toy is cheap to draw twice from its key."""
    opts = dict(names=names, lo=lo, hi=hi, max_iter=max_iter, edm_tol=edm_tol, parts=parts)
    glob = jax.jit(jax.vmap(functools.partial(_global_row, **opts), in_axes=(0, 0, 0, None, None, None, None)))
    cond = jax.jit(jax.vmap(functools.partial(_cond_row, poi=poi, **opts),
                            in_axes=(0, 0, 0, 0, None, None, None, None)))
    return glob, cond


def _in_passes(kernels, rows: tuple, x0, n_fixed: int):
    """Run ``kernels[0]`` on every row, then each next kernel from where the last stopped on the
    rows that hit its iteration limit (status 1), in launches of the :data:`PASSES` fraction of the
    batch (one compiled shape per pass, however many rows continue). ``rows`` are the per-row
    inputs before ``x0`` (``n_fixed`` of them), the rest are shared. Each row's result depends on
    that row alone, whatever the batch."""
    per_row, shared = rows[:n_fixed], rows[n_fixed:]
    fun, x, conv, status = kernels[0](*per_row[:1], x0, *per_row[1:], *shared)
    sharding = getattr(x0, "sharding", None)
    named = isinstance(sharding, jax.sharding.NamedSharding)
    n_dev = len(sharding.device_set) if named else 1
    n_rows = int(np.shape(x0)[0])
    fun, x, conv, status = (np.asarray(a).copy() for a in (fun, x, conv, status))
    host = [np.asarray(a) for a in per_row]
    for kernel, (_, div) in zip(kernels[1:], PASSES[1:]):
        redo = np.nonzero(status == 1)[0]
        if redo.size == 0:
            break
        size = -(-max(n_rows // div, 1) // n_dev) * n_dev
        for a in range(0, redo.size, size):
            part = redo[a:a + size]
            take = np.concatenate([part, np.repeat(part[:1], size - part.size)])

            def pick(v):
                v = jnp.asarray(v[take])
                return jax.device_put(v, sharding) if named else v

            out = kernel(pick(host[0]), pick(x), *(pick(v) for v in host[1:]), *shared)
            n = part.size
            fun[part], x[part], conv[part], status[part] = (np.asarray(o)[:n] for o in out)
    return fun, x, conv


def toy_fits(model, base: dict, aux: AuxMeasurements, key, gen_x, test_poi, index, *, names: tuple, poi: tuple,
             lower, upper, max_iter: int = 100, edm_tol: float = 1e-8, one_sided: bool = False, parts: int = 1) -> dict:
    """Fit a batch of toys (module docstring): rows of ``gen_x`` (n, len(names)) generating
    points in the order of ``names`` (the parameters of interest ``poi`` first), ``test_poi``
    (n, len(poi)) the tested values, ``index`` (n,) toy indices. Returns arrays of
    :data:`TOY_FIT_KEYS`: ``t`` = −2 ln λ (conditional minus global minimum, ≥ 0: the conditional
    minimum is a feasible point of the global fit, so the global minimum is the lower of the two;
    with ``one_sided``, 0 where any fitted POI exceeds its tested value: q̃ of Cowan et al. 2011,
    Eq. 16), both minima, the global fit's POI values, the conditional fit's nuisances and the two
    fits' KKT flags. Fits start at the generating point and run in the passes of :data:`PASSES`
    (a fit still running after a pass continues from where it stopped in a launch of only such
    rows; at most 10 + ``max_iter`` iterations in all). ``parts``: see :func:`draw_parts`. No checks:
    callers check once, eagerly."""
    key_args = (tuple(names), tuple(poi), tuple(float(v) for v in lower), tuple(float(v) for v in upper))
    caps = [int(max_iter) if it is None else min(int(it), int(max_iter)) for it, _ in PASSES]
    kernels = [compiled_toy_fits(*key_args, cap, float(edm_tol), int(parts)) for cap in caps]
    k = len(poi)
    f_glob, x_glob, conv_g = _in_passes([g for g, _ in kernels], (gen_x, index, key, model, base, aux), gen_x, 2)
    f_cond, nuis_hat, conv_c = _in_passes([c for _, c in kernels], (gen_x, test_poi, index, key, model, base, aux),
                                          gen_x[:, k:], 3)
    t = np.maximum(np.asarray(f_cond) - np.minimum(np.asarray(f_glob), np.asarray(f_cond)), 0.0)
    poi_hat = np.asarray(x_glob)[:, :k]
    if one_sided:
        t = np.where(np.all(poi_hat <= np.asarray(test_poi), axis=1), t, 0.0)
    return dict(t=t, f_global=f_glob, f_cond=f_cond, poi_hat=poi_hat, nuis_hat=nuis_hat, conv_global=conv_g,
                conv_cond=conv_c)
