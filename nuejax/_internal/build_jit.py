"""``jax.jit`` for programs that build a model's fixed tensors: each runs once per build (a
component's response, its SM spectrum, a background's shape, the fast path's coefficients), then
its result is kept (in the model, and on disk by :mod:`nuejax.cache`).

On the CPU such a program is compiled with XLA's backend optimisation level 0: LLVM's
optimisation passes are most of the compile time of these large elementwise programs, and the
program runs only once. On 2 CPU cores the joint response of a continuum on 100 × 861 bins
compiled in 6.1 s instead of 9.7 s and ran in 0.17 s instead of 0.12 s; the entries agree to
2e-15 relative (benchmarks/NOTES.md, "Build programs at optimisation level 0"). Elsewhere, and
for everything that runs per likelihood evaluation, programs are compiled as usual. Not for
what feeds a fit either (the calibration's constants): a fit can move its end point by far more
than the rounding of its inputs.
"""

from __future__ import annotations

import functools

import jax

__all__ = ["CPU_BUILD_OPTIONS", "build_jit"]

#: XLA options of a build program on the CPU backend
CPU_BUILD_OPTIONS = {"xla_backend_optimization_level": 0}


def build_jit(fun=None, **jit_kwargs):
    """``jax.jit(fun, **jit_kwargs)``, compiled with :data:`CPU_BUILD_OPTIONS` where the default
    backend is the CPU (decided at each call: a process may choose its platform after import);
    called inside another trace, the plain ``jax.jit`` (options belong to a top-level program).
    Usable as a decorator, with or without arguments."""
    if fun is None:
        return functools.partial(build_jit, **jit_kwargs)
    plain = jax.jit(fun, **jit_kwargs)
    quick = jax.jit(fun, compiler_options=dict(CPU_BUILD_OPTIONS), **jit_kwargs)

    @functools.wraps(fun)
    def call(*args, **kwargs):
        # inside another trace (a build step called under jit or grad) XLA's options belong to
        # the outer program: the plain jit is inlined there
        traced = any(isinstance(a, jax.core.Tracer) for a in jax.tree_util.tree_leaves((args, kwargs)))
        return (quick if jax.default_backend() == "cpu" and not traced else plain)(*args, **kwargs)

    call.plain, call.quick = plain, quick
    return call
