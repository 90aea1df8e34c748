r"""A bound-constrained Newton minimiser that runs under ``jit`` and ``vmap`` (batched fits).

Projected Newton with an ε-active set (Bertsekas, *SIAM J. Control Optim.* 20 (1982) 221;
*Nonlinear Programming*, 3rd ed., Sec. 3.3), in coordinates scaled by the diagonal of the
Hessian so that a ¹⁴C rate of 10⁶ and a normalisation of 1 are treated alike:

1. **Active set.** A coordinate within ε (scaled units) of a bound whose gradient pushes outward
   is *active*: it takes a diagonal Newton step and is projected back onto the bound. ε shrinks
   with the projected-gradient norm, so the set is identified exactly near a solution.
2. **Free step.** On the free coordinates, a damped *saddle-free* Newton step
   :math:`\delta = -V\,\mathrm{diag}(1/(|w| + \lambda))\,V^\top g` from the eigen-decomposition
   :math:`H = V\,\mathrm{diag}(w)\,V^\top` (Dauphin et al., NeurIPS 2014): along a direction of
   negative curvature it goes downhill instead of towards the saddle; where the gradient vanishes
   at a saddle (e.g. :math:`\mu_\nu = 0`, where -2 ln L depends on :math:`\mu_\nu^2`) a step along
   the most negative curvature direction, pointing into the feasible region, is added: it tops
   the step along that direction up to :math:`1/(1+\lambda)` scaled units (at most the radius
   set by a rejection, below) where the saddle-free
   step is shorter, and adds nothing where it is longer (a full unit added to a step that already
   went downhill overshot: the XENONnT μ_ν fits from μ_ν = 0 were rejected 7 times in a row).
3. **Projection and acceptance.** Free coordinates the step takes out of the box stop on their
   bound and the others' step is solved again with them held there (the subspace Newton step of
   L-BFGS-B: Byrd, Lu, Nocedal & Zhu, *SIAM J. Sci. Comput.* 16 (1995) 1190), where that
   subspace's Hessian is positive definite; the new point is clipped to the box; it is accepted if
   -2 ln L does not increase, or rises by less than ``edm_tol`` (rounding, near the minimum) while
   the EDM falls, otherwise rejected.
4. **Damping.** λ starts at 10⁻³ and falls fivefold with every accepted step, to 10⁻¹². A
   rejected step sets a trust radius r, a quarter of its length in scaled units, and the next
   step's λ is the smallest one (not below the current λ) whose step, the free coordinates'
   saddle-free step and the active ones' diagonal step together, is at most r long (Newton's
   method on :math:`1/\|\delta(\lambda)\| - 1/r` on the eigenvalues at hand: Nocedal & Wright,
   *Numerical Optimization*, 2nd ed., Sec. 4.3, Algorithm 4.3); what the push and the subspace
   step add is cut back to r as well. A larger λ turns the step towards a scaled gradient step, a
   descent direction of the projected problem. That λ is kept, and the radius is dropped at the
   next accepted step. Multiplying λ on a rejection instead (by 10, to at least 1) crawled along
   flat, curved valleys: where the Hessian's smallest scaled eigenvalue is 10⁻⁷ (the paper
   workload's four NSI couplings), λ = 1 shortened the step along the valley to 10⁻⁶ of its
   length, and λ cycled between an overshoot and a crawl (benchmarks/NOTES.md: none of that
   workload's eight design starts met the EDM tolerance in 400 iterations, six now, and all eight
   within MIGRAD's goal). A radius on the free step alone let a rejected step whose length was
   the active coordinates' be proposed again unchanged: one row of `nuejax combine`'s μ_ν stage
   ran 400 iterations without moving.

**Convergence is a KKT test** (:func:`kkt`), evaluated at every accepted point: with the
*binding* set B = {on a bound, gradient pointing outward (≥ 0 multiplier)}, the Hessian on the
free subspace must be positive definite (smallest eigenvalue of the scaled Hessian > 1e-10 of
the largest) and the estimated distance to the minimum
:math:`\mathrm{EDM} = \tfrac12 g_F^\top H_{FF}^{-1} g_F` (MINUIT's EDM on the free subspace) below
``edm_tol``. A run that ends otherwise is not converged and says why (``status``). The loop is a
``lax.while_loop`` with an iteration limit, so a batch of fits is one XLA program.

**A cheaper Hessian far from the minimum** (optional, ``hessian_split``): the loop starts with a
positive semidefinite approximation (the Gauss-Newton matrix of a Poisson likelihood, Fisher
scoring) and moves to the exact Hessian for good once the approximation's EDM falls below
:data:`APPROX_EDM_SWITCH` or a step is rejected; only the exact Hessian passes the KKT test
(docs/inference.md, "A Gauss–Newton phase").
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["NewtonResult", "minimize_bounded", "newton_minimize", "kkt", "STATUS", "APPROX_EDM_SWITCH"]

#: ``NewtonResult.status`` codes.
STATUS = {
    0: "converged: KKT conditions hold (EDM below tolerance, Hessian positive definite on the free subspace)",
    1: "iteration limit reached before the KKT test passed",
    2: "no further decrease possible (step shrunk to nothing) before the KKT test passed",
    3: "-2 ln L is not finite at the start",
}
_PD_RTOL = 1e-10
#: a trust radius (scaled units) below this after a rejected step ends the run (status 2)
_RADIUS_MIN = 1e-12


class NewtonResult(NamedTuple):
    """Result of :func:`minimize_bounded` (every field gains a leading axis under ``vmap``)."""

    x: jax.Array  # solution
    fun: jax.Array  # objective at x
    converged: jax.Array  # KKT test passed
    n_iter: jax.Array  # accepted + rejected iterations
    edm: jax.Array  # EDM on the free subspace (inf where the Hessian is not positive definite)
    at_lower: jax.Array  # bool per coordinate: on its lower bound with an outward gradient
    at_upper: jax.Array
    min_eig: jax.Array  # smallest eigenvalue of the scaled Hessian, bound coordinates padded with 1
    status: jax.Array  # key of STATUS
    grad: jax.Array  # gradient at x
    hess: jax.Array  # Hessian at x


def _scale(H, s_prev, s_max):
    """Per-coordinate scale 1/sqrt|H_ii|, capped at the bound range: a curvature at
    rounding level (μ_ν = 0 on data without a magnetic moment) must not blow the scale up."""
    d = jnp.abs(jnp.diag(H))
    s = jnp.where((d > 0) & jnp.isfinite(d), 1.0 / jnp.sqrt(jnp.where(d > 0, d, 1.0)), s_prev)
    return jnp.minimum(s, s_max)


def _s_max(lower, upper):
    width = upper - lower
    return jnp.where(jnp.isfinite(width), width, jnp.inf)


def _masked_eigh(Hs, free):
    """Eigen-decomposition of the scaled Hessian restricted to ``free`` (identity elsewhere)."""
    both = free[:, None] & free[None, :]
    Hm = jnp.where(both, Hs, 0.0) + jnp.diag(jnp.where(free, 0.0, 1.0))
    Hm = 0.5 * (Hm + Hm.T)
    return jnp.linalg.eigh(jnp.where(jnp.isfinite(Hm), Hm, 0.0))


def _trust_damping(p, a, lam, r, n_iter=6):
    """The damping l >= ``lam`` whose step ``-p / (a + l)`` (eigen-coordinates, ``a`` =
    |eigenvalues| >= 0) is ``r`` long, or ``lam`` where that step is shorter: the trust-region
    step of the saddle-free model (Nocedal & Wright, *Numerical Optimization*, 2nd ed., Sec. 4.3
    and Algorithm 4.3: Newton's method on 1/|step(l)| - 1/r, which is concave in l, so that from
    the left it approaches the root without passing it: six iterations left the step at most
    10⁻¹³ longer than ``r`` in 20000 random cases, eigenvalues from 10⁻¹⁶ to 10, ``r`` down to
    10⁻¹² of the undamped step)."""
    tiny = jnp.finfo(p.dtype).tiny

    def norm_and_slope(l):
        q = p / (a + l)
        n = jnp.sqrt(jnp.sum(q * q))
        return n, jnp.sum(q * q / (a + l)) / jnp.maximum(n, tiny) ** 3  # n and d(1/n)/dl

    l = lam
    for _ in range(n_iter):
        n, dphi = norm_and_slope(l)
        l = jnp.where(n > r, l - (1.0 / n - 1.0 / r) / jnp.where(dphi > 0, dphi, 1.0), l)
    return l


def kkt(x, g, H, lower, upper, *, edm_tol=1e-8, scale=None, pinned=None):
    """First- and second-order KKT test of a bound-constrained minimum at ``x`` (module docstring).

    A coordinate on a bound is *binding* when its gradient does not point inward (multiplier
    ≥ 0). With a vanishing gradient there (e.g. μ_ν = 0, where -2 ln L depends on μ_ν² and both
    derivatives vanish) it is a minimum along that direction only if the profile curvature
    :math:`c = H_{ii} - H_{iF}H_{FF}^{-1}H_{Fi}` is not negative, or so small that its quadratic
    model lowers -2 ln L by less than ``edm_tol`` across the whole bound range (rounding); that
    is checked too.
    Returns ``(converged, edm, at_lower, at_upper, min_eig)``. jax-traceable; ``lower``/``upper``
    may hold ±inf. ``pinned`` (bool per coordinate): coordinates held at a value by a decoupled
    quadratic (:class:`~nuejax.inference.problem.Pins`), never counted as on a bound.
    """
    s = _scale(H, jnp.ones_like(x) if scale is None else scale, _s_max(lower, upper))
    # a gradient of rounding size (|g s| <= 1e-8, EDM share 5e-17) counts as zero, whatever its sign
    tiny = jnp.abs(g * s) <= 1e-8
    at_lower = (x <= lower) & ((g >= 0) | tiny)
    at_upper = (x >= upper) & ((g <= 0) | tiny) & ~at_lower
    if pinned is not None:
        at_lower, at_upper = at_lower & ~pinned, at_upper & ~pinned
    bound = at_lower | at_upper
    free = ~bound
    gs = jnp.where(free, g * s, 0.0)
    Hs = s[:, None] * H * s[None, :]
    w, V = _masked_eigh(Hs, free)
    min_eig = w[0]
    pd = min_eig > _PD_RTOL * jnp.maximum(1.0, w[-1])
    winv = jnp.where(pd, 1.0 / jnp.where(pd, w, 1.0), 0.0)
    proj = V.T @ gs
    edm = jnp.where(pd, 0.5 * jnp.sum(proj**2 * winv), jnp.inf)
    # Profile curvature of the binding coordinates (Schur complement over the free block). Those
    # with a clearly outward gradient are minima along their direction whatever the curvature;
    # the weakly binding ones (vanishing gradient, e.g. mu_nu = 0) must have a positive
    # semidefinite profile Hessian *as a block* (two of them can form a saddle together), or one
    # so slightly negative that its quadratic model gains less than edm_tol across the box.
    H_fb = jnp.where(free[:, None] & bound[None, :], Hs, 0.0)
    Y = V @ (winv[:, None] * (V.T @ H_fb))
    schur = Hs - H_fb.T @ Y
    weak = bound & (jnp.abs(g * s) <= 1e-4)
    Sw = jnp.where(weak[:, None] & weak[None, :], 0.5 * (schur + schur.T), 0.0) + jnp.diag(jnp.where(weak, 0.0, 1.0))
    width = jnp.where(jnp.isfinite(upper - lower), (upper - lower) / s, jnp.inf)
    span = jnp.max(jnp.where(weak, width, 0.0))
    # Sw's smallest eigenvalue may be as low as -tol: relative rounding, or a curvature whose
    # quadratic model gains at most edm_tol over the box. A Cholesky factorisation of Sw + tol*I
    # exists exactly then (a second eigh in the loop body deadlocks XLA:CPU under vmap).
    flat = jnp.where(span > 0, 2.0 * edm_tol / jnp.where(span > 0, span, 1.0) ** 2, 0.0)
    tol = jnp.minimum(jnp.maximum(_PD_RTOL * jnp.maximum(1.0, w[-1]), flat), 1e100)
    Sw = jnp.where(jnp.isfinite(Sw), Sw, 0.0) + tol * jnp.eye(Sw.shape[0], dtype=Sw.dtype)
    bound_ok = jnp.all(jnp.isfinite(jnp.linalg.cholesky(Sw)))
    inside = jnp.all((x >= lower) & (x <= upper))
    finite = jnp.all(jnp.isfinite(g)) & jnp.all(jnp.isfinite(H)) & inside
    return pd & bound_ok & (edm < edm_tol) & finite, edm, at_lower, at_upper, min_eig


def _value_grad_hess(fun):
    def g_aux(x, args):
        v, g = jax.value_and_grad(fun)(x, args)
        return g, (v, g)

    def vgh(x, args):
        H, (v, g) = jax.jacfwd(g_aux, has_aux=True)(x, args)
        return v, g, 0.5 * (H + H.T)

    return vgh


#: The solver with a ``hessian_split`` uses the approximate Hessian until its EDM at an accepted point
#: falls below this (or a step is rejected), then the exact one, which alone can pass the KKT test.
APPROX_EDM_SWITCH = 1e-1


def minimize_bounded(fun, x0, args, lower, upper, *, max_iter: int = 100, edm_tol: float = 1e-8,
                     vgh=None, single: bool = False, pinned=None, hessian_split=None) -> NewtonResult:
    """Minimise ``fun(x, args)`` (scalar, jax-traceable) over the box [lower, upper] from ``x0``.

    ``x0`` is clipped into the box (public fitting functions reject starts outside it).
    ``vmap`` over ``x0`` or ``args`` fits a batch in one launch. ``vgh(x, args) -> (value,
    gradient, Hessian)`` replaces the autodiff of ``fun`` where given (the same function, computed
    another way: :func:`nuejax.inference.fitting.value_grad_hessian`). See the module docstring
    for the method and :data:`STATUS` for the outcome codes.

    The program holds ``vgh`` once: the evaluation at the start, every Newton step's and the
    final snap onto the bounds are iterations of one ``lax.while_loop`` (phases 0, 1 and 2), so
    XLA compiles the likelihood's derivatives once, not three times (a batched solver of a
    three-signal model compiled in 62 % of the time; benchmarks/NOTES.md). A fit whose end point
    has no coordinate to snap skips phase 2. ``single`` is accepted for compatibility and has no
    effect. ``pinned`` (bool per coordinate, optional): coordinates that ``fun`` holds at a value
    (:class:`~nuejax.inference.problem.Pins`): never on a bound in the KKT test, never snapped.

    ``hessian_split = (approx, correction)``: ``approx(x, args) -> (value, gradient, H_a, aux)``
    with a cheaper positive semidefinite ``H_a`` (the Gauss-Newton matrix of a Poisson
    likelihood), and ``correction(x, args, aux) -> H - H_a``, so that the two give what ``vgh``
    gives (:func:`~nuejax.inference.fitting.gauss_newton_terms`,
    :func:`~nuejax.inference.fitting.curvature_term`). The solver starts without the correction
    and adds it for good once the EDM of ``H_a`` at an accepted point falls below
    :data:`APPROX_EDM_SWITCH` or a step is rejected; only an exact evaluation passes the KKT test,
    so the end point and its Hessian are the exact ones (a start within 100 EDM tolerances of a
    minimum by ``H_a`` is evaluated again, exactly, before any step). The choice is a ``lax.cond``: give it
    only where rows are not ``vmap``-ped (there the correction would run for every row).
    """
    del single
    lower = jnp.asarray(np.asarray(lower, dtype=float))
    upper = jnp.asarray(np.asarray(upper, dtype=float))
    x0 = jnp.clip(jnp.asarray(x0), lower, upper)
    lower = lower.astype(x0.dtype)
    upper = upper.astype(x0.dtype)
    vgh = _value_grad_hess(fun) if vgh is None else vgh
    s_max = _s_max(lower, upper)
    s_start = jnp.maximum(jnp.abs(x0), 1.0) * 0.1
    n = x0.shape[-1]
    dtype = x0.dtype
    # the tolerance may be an operand of the program (fitting.row_solver): in the fit's precision
    edm_tol = jnp.asarray(edm_tol, dtype=dtype)
    false = jnp.zeros(n, dtype=bool)

    def newton_step(st):
        """Phase 1's proposal from the current point (module docstring: active set, free step)."""
        x, g, H, lam = st["x"], st["g"], st["H"], st["lam"]
        s = _scale(H, st["s"], s_max)
        gs = g * s
        Hs = s[:, None] * H * s[None, :]
        # epsilon-active set in scaled units: eps shrinks with the projected-gradient norm
        w_pg = jnp.linalg.norm((x - jnp.clip(x - s * gs, lower, upper)) / s)
        eps = jnp.minimum(0.1, w_pg)
        active = (((x - lower) / s <= eps) & (g > 0)) | (((upper - x) / s <= eps) & (g < 0))
        free = ~active
        w, V = _masked_eigh(Hs, free)
        gf = jnp.where(free, gs, 0.0)
        p = V.T @ gf
        # the radius holds the whole step: the active coordinates' diagonal steps are the
        # identity block of V (eigenvalue 1), so V^T gs gives the length of both parts
        lam = _trust_damping(V.T @ jnp.where(jnp.isfinite(gs), gs, 0.0), jnp.abs(w), lam, st["r"])
        step = -V @ (p / (jnp.abs(w) + lam))
        # negative curvature: push along the lowest eigenvector, downhill, else into the box
        v = V[:, 0]
        slope = gf @ v
        inward = jnp.sum(jnp.where(x <= lower, v, 0.0)) - jnp.sum(jnp.where(x >= upper, v, 0.0))
        sign = jnp.where(jnp.abs(slope) > 1e-12, -jnp.sign(slope), jnp.where(inward >= 0, 1.0, -1.0))
        # topped up to 1/(1 + lam) scaled units (at most the radius) along v where the saddle-free
        # step is shorter
        push = jnp.maximum(jnp.minimum(1.0 / (1.0 + lam), st["r"]) - jnp.abs(slope) / (jnp.abs(w[0]) + lam), 0.0)
        step = step + jnp.where(w[0] < -_PD_RTOL, sign * v * push, 0.0)
        step = jnp.where(free, step, -gs / (1.0 + lam))
        # Free coordinates the step takes out of the box stop on their bound, and the step of the
        # others is solved again with them held there (the Newton step of the subspace, as in
        # L-BFGS-B's subspace minimisation): clipping alone leaves correlated coordinates where
        # the unclipped step put them, a point that often raises -2 ln L and is rejected. Only
        # where the subspace's damped Hessian is positive definite; its eigh depends on the first
        # one's result (docs/inference.md, "Known issue").
        y = x + s * step
        hit = free & ((y < lower) | (y > upper))
        rest = free & ~hit
        d_hit = jnp.where(hit, (jnp.clip(y, lower, upper) - x) / s, 0.0)
        w2, V2 = _masked_eigh(Hs, rest)
        rhs = jnp.where(rest, gs + jnp.where(jnp.isfinite(Hs), Hs, 0.0) @ d_hit, 0.0)
        step2 = -V2 @ ((V2.T @ rhs) / (jnp.abs(w2) + lam))
        resolve = jnp.any(hit) & (w2[0] > _PD_RTOL * jnp.maximum(1.0, w2[-1])) & jnp.all(jnp.isfinite(step2))
        step = jnp.where(resolve, jnp.where(rest, step2, jnp.where(hit, d_hit, step)), step)
        # and what the push and the subspace step add: a step is never longer than the radius
        norm = jnp.sqrt(jnp.sum(step * step))
        step = step * jnp.where(norm > st["r"], st["r"] / jnp.where(norm > 0, norm, 1.0), 1.0)
        return _to_bounds(jnp.clip(x + s * step, lower, upper), g, s, lower, upper, tol=1e-6), s, lam

    def end_of_phase_1(st):
        """Last, coordinates next to a bound are moved onto it if -2 ln L rises by less than
        edm_tol: a minimum on a bound with vanishing curvature (mu_nu = 0) is otherwise approached
        only geometrically. Returns the snapped point, its scale and whether anything moved."""
        s_end = _scale(st["H"], st["s"], s_max)
        x_s = snap_to_bounds(st["x"], s_end, lower, upper)
        if pinned is not None:
            x_s = jnp.where(pinned, st["x"], x_s)
        return x_s, s_end, jnp.any(x_s != st["x"])

    def cond(st):
        return st["phase"] < 3

    def body(st):
        phase = st["phase"]
        x_n, s_n, lam_n = newton_step(st)
        x_s, s_end, _ = end_of_phase_1(st)
        y = jnp.where(phase == 0, x0, jnp.where(phase == 1, x_n, x_s))
        exact = st["exact"] | (phase == 2)
        if hessian_split is None:
            f_y, g_y, H_y = vgh(y, args)
        else:
            f_y, g_y, H_a, aux = hessian_split[0](y, args)
            H_y = H_a + jax.lax.cond(exact, hessian_split[1], lambda _y, _a, _x: jnp.zeros_like(H_a), y, args, aux)
        prev_s = jnp.where(phase == 0, s_start, jnp.where(phase == 1, s_n, s_end))
        chk = kkt(y, g_y, H_y, lower, upper, edm_tol=edm_tol, scale=_scale(H_y, prev_s, s_max), pinned=pinned)
        chk = (chk[0] & exact,) + tuple(chk[1:])  # only the exact Hessian certifies a minimum
        conv_y, edm_y = chk[0], chk[1]
        finite = jnp.isfinite(f_y) & jnp.all(jnp.isfinite(g_y)) & jnp.all(jnp.isfinite(H_y))

        # phase 0: the start (a start that is already a minimum, or not finite, goes to phase 2)
        conv0 = conv_y & jnp.isfinite(f_y)
        st0 = dict(st, x=y, f=f_y, g=g_y, H=H_y, s=_scale(H_y, s_start, s_max), edm=edm_y,
                   status=jnp.where(jnp.isfinite(f_y), jnp.where(conv0, 0, 1), 3), chk=chk,
                   exact=st["exact"] | (edm_y < APPROX_EDM_SWITCH))

        # phase 1: a Newton step, accepted if -2 ln L does not increase. Within edm_tol of the
        # minimum, differences of -2 ln L reach its rounding (the paper workload's bins hold 1e7
        # counts: ~1e-8), and comparing values alone rejected good steps until the step length
        # reached nothing; there a step that lowers the EDM is taken as well.
        ok = finite & ((f_y <= st["f"]) | ((f_y <= st["f"] + edm_tol) & (edm_y < st["edm"])))
        keep = lambda a, b: jnp.where(ok, a, b)  # noqa: E731
        # A rejected step sets the radius of the next one to a quarter of its length (scaled
        # units), which sets its damping (module docstring, 4.); an accepted one drops it. A
        # length that is not finite ends the run (radius 0: status 2) instead of repeating it.
        d = (y - st["x"]) / s_n
        d_norm = jnp.sqrt(jnp.sum(d * d))
        r = jnp.where(ok, jnp.inf, jnp.where(jnp.isfinite(d_norm), 0.25 * d_norm, 0.0))
        lam = jnp.where(ok, jnp.maximum(lam_n / 5.0, 1e-12), lam_n)
        st1 = dict(st, x=keep(y, st["x"]), f=keep(f_y, st["f"]), g=keep(g_y, st["g"]), H=keep(H_y, st["H"]),
                   lam=lam, r=r, s=s_n, edm=keep(edm_y, st["edm"]), it=st["it"] + 1,
                   status=jnp.where(ok & conv_y, 0, jnp.where(~ok & (r < _RADIUS_MIN), 2, 1)),
                   chk=jax.tree_util.tree_map(keep, chk, st["chk"]),
                   exact=st["exact"] | ~ok | (edm_y < APPROX_EDM_SWITCH))

        # phase 2: the snapped point is kept if it passes the KKT test itself, or if the point
        # before the snap did: then a certified minimum lies within edm_tol of it in -2 ln L (a
        # negative curvature of mu_nu at 0 that a mu_nu^4 term overwhelms is not a reason to
        # report mu_nu = 1e-4 instead of 0)
        chk_x = st["chk"]
        snap_ok = finite & (f_y <= st["f"] + edm_tol)
        take = snap_ok & (chk[0] | chk_x[0])
        pick = lambda a, b: jnp.where(take, a, b)  # noqa: E731
        use_s = take & chk[0]
        st2 = dict(st, x=pick(y, st["x"]), f=pick(f_y, st["f"]), g=pick(g_y, st["g"]), H=pick(H_y, st["H"]),
                   chk=(pick(chk[0] | chk_x[0], chk_x[0]), jnp.where(use_s, chk[1], chk_x[1]), pick(chk[2], chk_x[2]),
                        pick(chk[3], chk_x[3]), jnp.where(use_s, chk[4], chk_x[4])))

        new = jax.tree_util.tree_map(lambda a, b, c: jnp.where(phase == 0, a, jnp.where(phase == 1, b, c)),
                                     st0, st1, st2)
        # next phase: 1 while the Newton loop runs, 2 to snap (skipped where nothing would move),
        # 3 done
        running = (new["status"] == 1) & (new["it"] < max_iter)
        moves = end_of_phase_1(new)[2]
        after_1 = jnp.where(running, 1, jnp.where(moves, 2, 3))
        # a start that the approximate Hessian puts within a few EDM tolerances of a minimum is
        # evaluated again, exactly, before any step: a minimum as a start stays where it is
        again = (phase == 0) & ~exact & finite & (edm_y < 100.0 * edm_tol)
        new["phase"] = jnp.where(again, 0, jnp.where(phase <= 1, after_1, 3))
        return new

    zero = jnp.zeros((), dtype)
    chk0 = (jnp.zeros((), bool), jnp.asarray(jnp.inf, dtype), false, false, zero)
    init = dict(x=x0, f=jnp.asarray(jnp.inf, dtype), g=jnp.zeros(n, dtype), H=jnp.zeros((n, n), dtype),
                lam=jnp.asarray(1e-3, dtype=dtype), r=jnp.asarray(jnp.inf, dtype), s=s_start, status=jnp.asarray(1),
                it=jnp.asarray(0), edm=jnp.asarray(jnp.inf, dtype), chk=chk0, phase=jnp.asarray(0),
                exact=jnp.asarray(hessian_split is None))
    st = jax.lax.while_loop(cond, body, init)
    converged, edm, at_lo, at_hi, min_eig = st["chk"]
    converged = converged & jnp.isfinite(st["f"])
    return NewtonResult(st["x"], st["f"], converged, st["it"], edm, at_lo, at_hi, min_eig,
                        jnp.where(converged, 0, jnp.where(st["status"] == 0, 1, st["status"])), st["g"], st["H"])


def snap_to_bounds(x, s, lower, upper):
    """The solver's last move (:func:`minimize_bounded`): each coordinate within 1e-3 of its
    nearer bound, in units of the scale ``s``, put on that bound. ``s`` is the solver's
    coordinate scale; with a positive Hessian diagonal ``scale(H)`` gives the same."""
    return _to_bounds(x, jnp.where(x - lower < upper - x, 1.0, -1.0), s, lower, upper)


def scale(H, lower, upper):
    """The solver's coordinate scale for the Hessian ``H`` (1/sqrt|H_ii|, capped at the bound
    range, 1 where the diagonal is not positive)."""
    return _scale(H, jnp.ones(H.shape[-1], dtype=H.dtype), _s_max(lower, upper))


def _to_bounds(x, g, s, lower, upper, tol=1e-3):
    """Put coordinates within ``tol`` (scaled units) of a bound, whose gradient does not point
    inward, exactly on that bound."""
    x = jnp.where((g >= 0) & ((x - lower) / s <= tol), lower, x)
    return jnp.where((g <= 0) & ((upper - x) / s <= tol), upper, x)


def newton_minimize(f, x0, lower, upper, *, n_iter: int = 100, tol: float = 1e-8) -> NewtonResult:
    """:func:`minimize_bounded` for a one-argument objective ``f(x)`` (EDM tolerance ``tol``)."""
    return minimize_bounded(lambda x, _: f(x), x0, None, lower, upper, max_iter=n_iter, edm_tol=tol)
