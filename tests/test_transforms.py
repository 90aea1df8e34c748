"""Observable-level response transforms (nuejax.detector.transforms): identity, exact rebinning,
count conservation and spill-over, entries against direct numerical integration, analytic first
and second derivatives against plain autodiff and finite differences, jit/vmap, input checks."""
import functools
import math
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate
from scipy.stats import norm

from nuejax.detector.transforms import (
    TRANSFORM_TERMS,
    ResponseTransform,
    check_transform_axes,
    energy_map,
    migration_matrix,
    resolution_sigma,
    smoothed_ramp,
    transform_matrix,
)
from nuejax.errors import InputError

IN_EDGES = np.linspace(0.0, 100.0, 41)  # 40 bins of 2.5
OUT_EDGES = np.linspace(10.0, 90.0, 31)  # 30 bins of 8/3
ALL_TERMS = dict(scale="s", offset="c", nonlin="k", res_a="ra", res_b="rb", res_c="rc")
E_REF = 1000.0
P0 = dict(s=1.03, c=0.7, k=0.05, ra=0.3, rb=0.02, rc=0.5)  # all six terms away from nominal


def _p(**kw):
    return {k: jnp.asarray(v, dtype=jnp.float64) for k, v in {**P0, **kw}.items()}


@jax.jit
def _matrices(T, p):
    """Both matrices in one compiled call (eager jax compiles every primitive separately: slower on
    these small inputs)."""
    return T.matrix(p), T.reference_matrix(p)


_apply = jax.jit(lambda T, p, x: T(p, x))


def _full():
    return ResponseTransform.create(IN_EDGES, OUT_EDGES, e_ref=E_REF, **ALL_TERMS)


def _np_map(p, x=IN_EDGES):
    """Mapped edges and per-bin sigma, computed independently in numpy (module docstring)."""
    u = p["c"] + p["s"] * x + p["k"] * x * x / E_REF
    E = np.maximum(0.5 * (u[1:] + u[:-1]), 0.0)
    sig = np.sqrt(p["ra"] ** 2 * E + p["rb"] ** 2 * E * E + p["rc"] ** 2)
    return u, sig


def _smeared_fraction(u0, u1, sigma, a, b):
    """Fraction of a uniform density on [u0, u1] convolved with N(0, sigma^2) that falls in [a, b],
    by adaptive quadrature of the Gaussian probability of [a, b] over the source position."""
    f = lambda y: norm.cdf((b - y) / sigma) - norm.cdf((a - y) / sigma)  # noqa: E731
    val, err = integrate.quad(f, u0, u1, epsabs=1e-14, epsrel=1e-13, limit=200)
    return val / (u1 - u0)


def _assert_rel(a, b, rtol, what=""):
    """|a - b| <= rtol * max|b| (a scale for arrays whose entries cross zero)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    scale = max(np.max(np.abs(b)), 1e-300)
    err = np.max(np.abs(a - b)) / scale
    assert err <= rtol, f"{what}: relative difference {err:.3g} > {rtol:g}"


# -------------------------------------------------------------------------------------------------
# building blocks
def test_smoothed_ramp_closed_form_and_quadrature():
    d = np.array([-7.0, -1.3, -0.2, 0.0, 0.4, 2.5, 9.0])
    for s in (0.5, 1.7):
        got = np.asarray(smoothed_ramp(jnp.asarray(d), jnp.asarray(s)))
        ref = [integrate.quad(lambda t: norm.cdf(t / s), -60 * s, di, epsabs=1e-14, limit=200)[0] for di in d]
        np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-13)
    got0 = np.asarray(smoothed_ramp(jnp.asarray(d), jnp.asarray(0.0)))
    np.testing.assert_array_equal(got0, np.maximum(d, 0.0))


def test_energy_map_and_resolution_sigma_closed_forms():
    x = np.array([0.0, 3.0, 50.0, 120.0])
    np.testing.assert_allclose(np.asarray(energy_map(jnp.asarray(x), 1.1, -2.0, 0.3, e_ref=200.0)),
                               -2.0 + 1.1 * x + 0.3 * x * x / 200.0, rtol=1e-15)
    E = np.array([-5.0, 0.0, 4.0, 100.0])
    got = np.asarray(resolution_sigma(jnp.asarray(E), 0.4, 0.03, 0.7))
    Ec = np.maximum(E, 0.0)  # clipped at 0
    np.testing.assert_allclose(got, np.sqrt(0.16 * Ec + 0.0009 * Ec * Ec + 0.49), rtol=1e-15)
    np.testing.assert_array_equal(np.asarray(resolution_sigma(jnp.asarray(E))), 0.0)


# -------------------------------------------------------------------------------------------------
# matrix values
@pytest.mark.parametrize("edges,floated", [(IN_EDGES, True),
                                            (np.array([0.0, 0.7, 2.0, 2.5, 6.0, 11.0, 11.1, 20.0]), False)])
def test_identity(edges, floated):
    """Every term floated at its nominal value, or nothing floated: the identity."""
    x = np.random.default_rng(0).uniform(0.0, 10.0, edges.size - 1)
    if floated:
        T = ResponseTransform.create(edges, edges, **ALL_TERMS)
        p = {n: jnp.asarray(TRANSFORM_TERMS[t]) for t, n in ALL_TERMS.items()}
    else:
        T, p = ResponseTransform.create(edges, edges), {}
    M, R = (np.asarray(a) for a in _matrices(T, p))
    assert M.shape == (edges.size - 1, edges.size - 1)
    np.testing.assert_allclose(M, np.eye(edges.size - 1), rtol=0, atol=1e-14)
    np.testing.assert_allclose(R, np.eye(edges.size - 1), rtol=0, atol=1e-14)
    np.testing.assert_allclose(np.asarray(_apply(T, p, jnp.asarray(x))), x, rtol=1e-14, atol=1e-14)


def test_exact_rebinning_without_smearing_is_overlap_fraction():
    in_edges = np.array([0.0, 4.0, 5.0, 13.0, 20.0, 21.5, 30.0, 40.0, 55.0, 60.0])
    out_edges = np.array([6.0, 9.0, 15.0, 16.0, 25.0, 31.0, 44.0, 50.0])
    T = ResponseTransform.create(in_edges, out_edges, scale="s", offset="c", nonlin="k", e_ref=E_REF)
    p = dict(s=jnp.asarray(1.1), c=jnp.asarray(-2.0), k=jnp.asarray(0.4))
    u = -2.0 + 1.1 * in_edges + 0.4 * in_edges ** 2 / E_REF
    ref = np.zeros((in_edges.size - 1, out_edges.size - 1))
    for i in range(ref.shape[0]):
        for j in range(ref.shape[1]):
            ref[i, j] = max(0.0, min(u[i + 1], out_edges[j + 1]) - max(u[i], out_edges[j])) / (u[i + 1] - u[i])
    assert np.count_nonzero(ref) > 10 and np.count_nonzero((ref > 0) & (ref < 1)) > 5  # a real rebinning
    M, R = _matrices(T, p)
    np.testing.assert_allclose(np.asarray(M), ref, rtol=0, atol=1e-14)
    np.testing.assert_allclose(np.asarray(R), ref, rtol=0, atol=1e-14)


def test_counts_conserved_inside_and_spill_over_at_the_edges():
    T = _full()
    p = _p()
    M = np.asarray(_matrices(T, p)[0])
    pn = {k: float(v) for k, v in p.items()}
    u, sig = _np_map(pn)
    rows = M.sum(axis=1)
    lo, hi = OUT_EDGES[0], OUT_EDGES[-1]
    inside = [i for i in range(M.shape[0]) if u[i] - 9 * sig[i] > lo and u[i + 1] + 9 * sig[i] < hi]
    assert len(inside) >= 10
    np.testing.assert_allclose(rows[inside], 1.0, rtol=0, atol=1e-12)
    # every row, including those spilling past the range and those that spill in from outside it:
    # the fraction of the smeared bin inside [lo, hi], not renormalised to 1
    ref = np.array([_smeared_fraction(u[i], u[i + 1], sig[i], lo, hi) for i in range(M.shape[0])])
    np.testing.assert_allclose(rows, ref, rtol=1e-9, atol=1e-13)
    edge_rows = np.nonzero((ref > 1e-3) & (ref < 0.999))[0]
    assert edge_rows.size >= 4  # the check above covers real spill-over
    # same with closed-form Gaussian integrals (scipy.stats.norm): integral of Phi over the bin
    def frac(i):
        R = lambda d: d * norm.cdf(d / sig[i]) + sig[i] * norm.pdf(d / sig[i])  # noqa: E731
        c = lambda e: R(e - u[i]) - R(e - u[i + 1])  # noqa: E731
        return (c(hi) - c(lo)) / (u[i + 1] - u[i])
    np.testing.assert_allclose(rows[edge_rows], [frac(i) for i in edge_rows], rtol=1e-10)


@pytest.mark.parametrize("ij", [(0, 0), (3, 0), (5, 1), (17, 14), (17, 15), (20, 25), (33, 29), (36, 29), (10, 3)])
def test_entries_against_numerical_integration(ij):
    i, j = ij
    T = _full()
    p = _p()
    pn = {k: float(v) for k, v in p.items()}
    u, sig = _np_map(pn)
    ref = _smeared_fraction(u[i], u[i + 1], sig[i], OUT_EDGES[j], OUT_EDGES[j + 1])
    M = np.asarray(_matrices(T, p)[0])
    assert M[i, j] == pytest.approx(ref, rel=1e-9, abs=1e-14)
    # fine midpoint sum of source positions as a second reference
    y = u[i] + (np.arange(20000) + 0.5) * (u[i + 1] - u[i]) / 20000
    mid = np.mean(norm.cdf((OUT_EDGES[j + 1] - y) / sig[i]) - norm.cdf((OUT_EDGES[j] - y) / sig[i]))
    assert M[i, j] == pytest.approx(mid, rel=1e-6, abs=1e-12)


def test_sigma_is_evaluated_at_the_mapped_bin_centre():
    """Resolution terms with a strong energy dependence: a σ taken at the unmapped centre (or at an
    edge) would give a different matrix."""
    T = _full()
    p = _p(s=1.2, c=3.0, k=0.0, ra=1.0, rb=0.1, rc=0.0)
    pn = {k: float(v) for k, v in p.items()}
    u, sig = _np_map(pn)
    M = np.asarray(_matrices(T, p)[0])
    for i, j in ((6, 2), (12, 9), (20, 20)):
        ref = _smeared_fraction(u[i], u[i + 1], sig[i], OUT_EDGES[j], OUT_EDGES[j + 1])
        x_c = 0.5 * (IN_EDGES[i] + IN_EDGES[i + 1])  # the unmapped centre: must not match
        wrong = _smeared_fraction(u[i], u[i + 1], math.sqrt(x_c + 0.01 * x_c * x_c), OUT_EDGES[j],
                                  OUT_EDGES[j + 1])
        assert abs(ref - wrong) > 1e-6
        assert M[i, j] == pytest.approx(ref, rel=1e-9, abs=1e-14)


def test_migration_matrix_equals_transform_matrix():
    rng = np.random.default_rng(3)
    u = np.sort(rng.uniform(0, 50, 13))
    sigma = rng.uniform(0.0, 3.0, 12)
    sigma[[2, 7]] = 0.0  # no smearing on some bins
    out = np.sort(rng.uniform(5, 45, 9))
    both = jax.jit(lambda u, s, e: (migration_matrix(u[:-1], u[1:], s, e), transform_matrix(None, e, u, s)))
    A, B = (np.asarray(m) for m in both(jnp.asarray(u), jnp.asarray(sigma), jnp.asarray(out)))
    np.testing.assert_allclose(A, B, rtol=1e-12, atol=1e-13)
    ref = np.array([[_smeared_fraction(u[i], u[i + 1], sigma[i], out[j], out[j + 1]) if sigma[i] > 0 else
                     max(0.0, min(u[i + 1], out[j + 1]) - max(u[i], out[j])) / (u[i + 1] - u[i])
                     for j in range(out.size - 1)] for i in range(u.size - 1)])
    np.testing.assert_allclose(A, ref, rtol=1e-9, atol=1e-13)


# -------------------------------------------------------------------------------------------------
# derivatives. One Poisson-like loss of 16 parameters: 10 rates multiplying templates on the input
# axis, then the transform with all six terms floated. Flat parameter vectors, and every compiled
# function is built once per module: compiling dominates the run time of these tests.
KEYS = tuple(P0)
V0 = np.array([P0[k] for k in KEYS])
N_T = 10
X_C = 0.5 * (IN_EDGES[1:] + IN_EDGES[:-1])
TEMPLATES = np.exp(-0.5 * ((X_C[None, :] - np.linspace(5, 95, N_T)[:, None]) / 12.0) ** 2) + 0.05
W0 = np.concatenate([1.0 + 0.1 * np.arange(N_T), V0])  # rates, then the transform terms
RES = [N_T + KEYS.index(k) for k in ("ra", "rb", "rc")]
EXPOSURE = 20.0
DATA = np.random.default_rng(11).poisson(EXPOSURE * (W0[:N_T] @ TEMPLATES) @ np.asarray(
    _matrices(_full(), _p())[1])).astype(float)


def _matrix_fn(which):
    T = _full()
    m = T.matrix if which == "analytic" else T.reference_matrix
    return lambda v: m(dict(zip(KEYS, v)))


def _loss(which):
    tpl, data = jnp.asarray(TEMPLATES), jnp.asarray(DATA)
    if which == "applied":  # the stage's own call: counts moved by migrate, no matrix tangent formed
        T = _full()
        move = lambda w: T(dict(zip(KEYS, w[N_T:])), w[:N_T] @ tpl)  # noqa: E731
    else:
        m = _matrix_fn(which)
        move = lambda w: (w[:N_T] @ tpl) @ m(w[N_T:])  # noqa: E731

    def loss(w):
        mu = EXPOSURE * move(w)
        return 2.0 * jnp.sum(mu - data * jnp.log(mu))
    return loss


@functools.cache
def _compiled(kind, which):
    if kind == "jacfwd":  # of the matrix, over the six terms
        return jax.jit(jax.jacfwd(_matrix_fn(which)))
    f = _loss(which)
    if kind == "vgh":
        return jax.jit(lambda w: (f(w), jax.grad(f)(w), jax.hessian(f)(w)))
    if kind == "batch":
        m = _matrix_fn(which)
        return jax.jit(jax.vmap(lambda w: (m(w[N_T:]), jax.grad(f)(w))))
    raise ValueError(kind)


def _fd_points(w):
    h = 1e-5 * np.maximum(np.abs(w), 1e-2)
    return h, np.concatenate([w + np.diag(h), w - np.diag(h)])


def test_jacobian_matches_plain_autodiff():
    J = np.asarray(_compiled("jacfwd", "analytic")(jnp.asarray(V0)))
    R = np.asarray(_compiled("jacfwd", "reference")(jnp.asarray(V0)))
    assert J.shape == (IN_EDGES.size - 1, OUT_EDGES.size - 1, len(KEYS))
    for a, k in enumerate(KEYS):
        assert np.max(np.abs(R[..., a])) > 1e-6, k  # every term moves the matrix
        _assert_rel(J[..., a], R[..., a], 1e-9, f"jacfwd {k}")


@pytest.mark.slow
def test_gradient_matches_reference_and_finite_differences():
    w = jnp.asarray(W0)
    f = _compiled("vgh", "analytic")
    val, g, _ = f(w)
    valr, gr, _ = _compiled("vgh", "reference")(w)
    assert float(val) == pytest.approx(float(valr), rel=1e-12)
    g, gr = np.asarray(g), np.asarray(gr)
    assert np.all(np.abs(gr) > 1e-6)
    np.testing.assert_allclose(g, gr, rtol=1e-9, atol=1e-10 * np.abs(gr).max())
    h, pts = _fd_points(W0)
    vals = np.array([float(f(jnp.asarray(q))[0]) for q in pts])
    fd = (vals[:W0.size] - vals[W0.size:]) / (2 * h)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-7 * np.abs(g).max())


def test_hessian_matches_reference_and_finite_differences():
    """16 x 16 Hessian (rates and transform terms) through ``matrix`` equals plain autodiff."""
    w = jnp.asarray(W0)
    _, _, H = _compiled("vgh", "analytic")(w)
    _, _, Hr = _compiled("vgh", "reference")(w)
    H, Hr = np.asarray(H), np.asarray(Hr)
    assert H.shape == (16, 16) and np.all(np.abs(np.diag(Hr)) > 0)
    assert np.count_nonzero(np.abs(Hr) > 1e-8 * np.abs(Hr).max()) > 200  # a dense Hessian
    np.testing.assert_allclose(H, Hr, rtol=1e-9, atol=1e-9 * np.abs(Hr).max())
    np.testing.assert_allclose(H, H.T, rtol=1e-12, atol=1e-12 * np.abs(H).max())
    # central differences of the analytic gradient, all 2 x 16 points in one batched call
    h, pts = _fd_points(W0)
    _, gb = _compiled("batch", "analytic")(jnp.asarray(pts))
    gb = np.asarray(gb)
    fd = ((gb[:W0.size] - gb[W0.size:]) / (2 * h[:, None])).T  # column b: d g / d w_b
    np.testing.assert_allclose(H, fd, rtol=1e-5, atol=1e-6 * np.abs(H).max())


@pytest.mark.slow
def test_stage_call_derivatives_equal_the_matrix_product():
    """``ResponseTransform.__call__`` (``migrate``: the tangent contracted with the counts, never a
    tangent matrix) gives the value, gradient and Hessian of plain autodiff through the matrix."""
    w = jnp.asarray(W0)
    got = [np.asarray(a) for a in _compiled("vgh", "applied")(w)]
    ref = [np.asarray(a) for a in _compiled("vgh", "reference")(w)]
    assert float(got[0]) == pytest.approx(float(ref[0]), rel=1e-12)
    np.testing.assert_allclose(got[1], ref[1], rtol=1e-9, atol=1e-10 * np.abs(ref[1]).max())
    np.testing.assert_allclose(got[2], ref[2], rtol=1e-9, atol=1e-9 * np.abs(ref[2]).max())
    # and under vmap of jvp (the batched directions of a forward-mode Jacobian)
    T = _full()
    x = jnp.asarray(W0[:N_T] @ TEMPLATES)
    J = jax.jacfwd(lambda v: T(dict(zip(KEYS, v)), x))(jnp.asarray(V0))
    Jr = jax.jacfwd(lambda v: x @ T.reference_matrix(dict(zip(KEYS, v))))(jnp.asarray(V0))
    np.testing.assert_allclose(np.asarray(J), np.asarray(Jr), rtol=1e-9, atol=1e-10 * float(jnp.abs(Jr).max()))


def test_hessian_timing():
    """Both Hessians, timed (printed under ``-s``; no assertion on the times)."""
    w = jnp.asarray(W0)
    timings = {}
    for which in ("analytic", "reference"):
        f = _compiled("vgh", which)
        jax.block_until_ready(f(w))
        t0 = time.perf_counter()
        for _ in range(5):
            jax.block_until_ready(f(w))
        timings[which] = (time.perf_counter() - t0) / 5
    print(f"\n16-parameter value+gradient+Hessian: analytic {timings['analytic'] * 1e3:.2f} ms, "
          f"plain autodiff {timings['reference'] * 1e3:.2f} ms")


def test_zero_resolution_gradient_is_zero_for_resolution_terms():
    w = W0.copy()
    w[RES] = 0.0
    _, g, _ = _compiled("vgh", "analytic")(jnp.asarray(w))
    _, gr, _ = _compiled("vgh", "reference")(jnp.asarray(w))
    g, gr = np.asarray(g), np.asarray(gr)
    np.testing.assert_array_equal(g[RES], 0.0)
    np.testing.assert_array_equal(gr[RES], 0.0)
    others = [a for a in range(W0.size) if a not in RES]
    assert np.all(np.isfinite(g)) and np.all(np.abs(g[others]) > 0)
    np.testing.assert_allclose(g[others], gr[others], rtol=1e-9, atol=1e-10 * np.abs(gr).max())


def test_jit_and_vmap_over_parameter_points():
    rng = np.random.default_rng(7)
    B = 2 * W0.size  # the same batch size as the finite differences above: one compilation
    pts = W0 * (1.0 + 0.05 * rng.normal(size=(B, W0.size)))
    Ms, gs = (np.asarray(a) for a in _compiled("batch", "analytic")(jnp.asarray(pts)))
    assert Ms.shape == (B, IN_EDGES.size - 1, OUT_EDGES.size - 1) and gs.shape == (B, W0.size)
    T = _full()
    for b in range(0, B, 4):
        pb = dict(zip(KEYS, jnp.asarray(pts[b, N_T:])))
        np.testing.assert_allclose(Ms[b], np.asarray(_matrices(T, pb)[1]), rtol=1e-12, atol=1e-13)
        _, gr, _ = _compiled("vgh", "reference")(jnp.asarray(pts[b]))
        np.testing.assert_allclose(gs[b], np.asarray(gr), rtol=1e-9, atol=1e-10 * np.abs(gr).max())
    assert np.ptp(gs[:, 0]) > 0  # the points differ
    # the transform itself is a PyTree argument of a jitted function
    x = jnp.asarray(W0[:N_T] @ TEMPLATES)
    np.testing.assert_allclose(np.asarray(_apply(T, _p(), x)), np.asarray(x @ _matrices(T, _p())[1]), rtol=1e-12)


# -------------------------------------------------------------------------------------------------
# input checks
def test_create_rejects_unknown_term():
    with pytest.raises(InputError, match=r"unknown term.*'energy_scale'.*valid: scale, offset, nonlin"):
        ResponseTransform.create(IN_EDGES, OUT_EDGES, energy_scale="s")


def test_create_rejects_parameter_used_twice():
    with pytest.raises(InputError, match="parameter name is used for two terms"):
        ResponseTransform.create(IN_EDGES, OUT_EDGES, scale="s", res_c="s")


def test_create_rejects_bad_e_ref():
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(InputError, match="e_ref"):
            ResponseTransform.create(IN_EDGES, OUT_EDGES, e_ref=bad)


@pytest.mark.parametrize("out", [np.linspace(-5.0, 90.0, 11), np.linspace(10.0, 100.5, 11)])
def test_output_range_outside_input_range(out):
    with pytest.raises(InputError, match=r"output range \[.*\] is not inside the input range \[0, 100\]"):
        check_transform_axes(IN_EDGES, out)
    with pytest.raises(InputError, match="not inside the input range"):
        ResponseTransform.create(IN_EDGES, out, scale="s")


def test_output_range_equal_to_input_range_is_accepted():
    x, e = check_transform_axes(IN_EDGES, [0.0, 50.0, 100.0])
    np.testing.assert_array_equal(x, IN_EDGES)
    np.testing.assert_array_equal(e, [0.0, 50.0, 100.0])


@pytest.mark.parametrize("in_edges,out_edges,msg", [
    ([0.0, 10.0, 10.0, 20.0], [1.0, 2.0], r"input bin edges are not strictly increasing: edge 2"),
    ([0.0, 10.0, 5.0, 20.0], [1.0, 2.0], r"input bin edges are not strictly increasing: edge 2"),
    (IN_EDGES, [10.0, np.nan, 30.0], r"output bin edges: edge 1 is nan"),
    (IN_EDGES, [10.0, np.inf], r"output bin edges: edge 1 is inf"),
    (IN_EDGES, [20.0], r"output bin edges must be a 1-D array of at least 2 values"),
    ([[0.0, 1.0], [2.0, 3.0]], [0.5, 1.0], r"input bin edges must be a 1-D array"),
    (IN_EDGES, ["a", "b"], r"output bin edges are not numbers"),
])
def test_bad_edges(in_edges, out_edges, msg):
    with pytest.raises(InputError, match=msg):
        check_transform_axes(in_edges, out_edges)
    with pytest.raises(InputError, match=msg):
        ResponseTransform.create(in_edges, out_edges)


def test_linear_resolution_form():
    """σ = a√E + bE + c (XENON1T's form) beside the quadrature sum; a bad form is refused."""
    from nuejax.detector.transforms import ResponseTransform, resolution_sigma
    from nuejax.errors import InputError

    E = jnp.asarray([0.0, 1.0, 4.0, 10.0])
    np.testing.assert_allclose(resolution_sigma(E, 0.31, 0.0037, 0.0, "linear"),
                               0.31 * np.sqrt([0.0, 1.0, 4.0, 10.0]) + 0.0037 * np.array([0.0, 1.0, 4.0, 10.0]),
                               rtol=1e-14)
    np.testing.assert_allclose(resolution_sigma(E, 0.31, 0.0037), np.sqrt(0.31**2 * E + 0.0037**2 * E**2), rtol=1e-14)
    with pytest.raises(InputError, match="'quadrature' or 'linear'"):
        ResponseTransform.create(np.linspace(0, 10, 11), np.linspace(1, 9, 9), resolution_form="cubic", res_a="a")
    t = ResponseTransform.create(np.linspace(0, 10, 101), np.linspace(2, 8, 7), resolution_form="linear", res_a="a")
    m = np.asarray(t.matrix({"a": jnp.asarray(0.31)}))
    assert m.shape == (100, 6) and np.all(m >= 0) and np.max(m.sum(axis=1)) <= 1 + 1e-12


@pytest.mark.slow
def test_fixed_edges_move_counts_by_the_widths_alone():
    """A transform that floats only resolution terms keeps its edges fixed and moves counts with
    ``migrate_width``: value, gradient and Hessian in (counts, terms) equal ``migrate``'s and plain
    autodiff through the matrix; a transform with an edge term floated uses ``migrate``."""
    from nuejax.detector.transforms import migrate, migrate_width

    T = ResponseTransform.create(IN_EDGES, OUT_EDGES, e_ref=E_REF, res_a="ra", res_b="rb", res_c="rc")
    assert T.fixed_edges and not _full().fixed_edges
    keys = ("ra", "rb", "rc")
    tpl, data = jnp.asarray(TEMPLATES), jnp.asarray(DATA)
    w0 = jnp.asarray(np.concatenate([W0[:N_T], [P0[k] for k in keys]]))

    def loss(route):
        def f(w):
            p = dict(zip(keys, w[N_T:]))
            x = w[:N_T] @ tpl
            if route == "stage":
                y = T(p, x)
            else:
                u, sigma = T.mapped_edges_and_sigma(p)
                y = migrate(x, u[:-1], u[1:], sigma, T.out_edges) if route == "migrate" else x @ T.reference_matrix(p)
            mu = EXPOSURE * y
            return 2.0 * jnp.sum(mu - data * jnp.log(mu))
        return jax.jit(lambda w: (f(w), jax.grad(f)(w), jax.hessian(f)(w)))

    got = [np.asarray(a) for a in loss("stage")(w0)]
    assert np.all(np.abs(got[2][N_T:, N_T:]) > 0)  # the widths' own curvature is there
    for route in ("migrate", "reference"):
        ref = [np.asarray(a) for a in loss(route)(w0)]
        assert float(got[0]) == pytest.approx(float(ref[0]), rel=1e-12)
        np.testing.assert_allclose(got[1], ref[1], rtol=1e-9, atol=1e-10 * np.abs(ref[1]).max())
        np.testing.assert_allclose(got[2], ref[2], rtol=1e-9, atol=1e-9 * np.abs(ref[2]).max())
    # batched forward-mode directions (the Poisson route's Jacobian) on a batch of counts
    xs = jnp.asarray(np.stack([W0[:N_T] @ TEMPLATES, 2.0 * W0[:N_T] @ TEMPLATES]))
    p0 = jnp.asarray([P0[k] for k in keys])
    J = jax.jacfwd(lambda v: T(dict(zip(keys, v)), xs))(p0)
    Jr = jax.jacfwd(lambda v: xs @ T.reference_matrix(dict(zip(keys, v))))(p0)
    np.testing.assert_allclose(np.asarray(J), np.asarray(Jr), rtol=1e-9, atol=1e-10 * float(jnp.abs(Jr).max()))
    # migrate_width called where the edges do move (a scale floated): the general rule takes over
    F = _full()
    x = jnp.asarray(W0[:N_T] @ TEMPLATES)

    def moved(route):
        def f(v):
            u, sigma = F.mapped_edges_and_sigma(dict(zip(KEYS, v)))
            return route(x, u[:-1], u[1:], sigma, F.out_edges)
        return jax.jit(jax.jacfwd(f))(jnp.asarray(V0)), jax.jit(jax.hessian(lambda v: jnp.sum(f(v) ** 2)))(jnp.asarray(V0))

    (Jw, Hw), (Jm, Hm) = moved(migrate_width), moved(migrate)
    assert float(jnp.abs(Jm[:, KEYS.index("s")]).max()) > 1e-3  # the scale moves the counts
    np.testing.assert_allclose(np.asarray(Jw), np.asarray(Jm), rtol=1e-12, atol=1e-12 * float(jnp.abs(Jm).max()))
    np.testing.assert_allclose(np.asarray(Hw), np.asarray(Hm), rtol=1e-9, atol=1e-9 * float(jnp.abs(Hm).max()))
