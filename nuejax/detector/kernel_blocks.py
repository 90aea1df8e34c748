r"""Fixed response kernels stored as the dense blocks that cover their nonzero entries.

The fold of paper Eq. (mu_total), :math:`\sum_k a_k \sum_i f^{(k)}_i G^{(k)}_{ij}`, reads every
entry of the kernels once per call (and once more for the gradient): on the CPU it is the
largest single cost of a likelihood call. A kernel maps a recoil bin to the observable bins
around its light output, so much of it is exactly zero: 20-76 % per signal of the default
model, from the rows whose light lies above the observable window (⁸B, hep) and the columns
above a low-energy component's end point (pp, ⁷Be 384 keV). Cut into blocks of at most
:data:`ROWS` recoil bins, each trimmed to the columns in which it has a nonzero entry, the
paper workload's kernels (9 × 2000 × 1000) keep 57 % of their entries, and the fold is the same
sum with the exact zeros left out (only the order of the additions changes).

On two CPU cores that fold takes 2.8-3.6 ms against 7.6-8.0 ms for one dense matrix-vector
product (value + gradient 6.2-7.6 against 11.7-13.4 ms), and the whole -2 ln L 6.7-8.6 ms
against 10.7-12.2 ms (value + gradient 12.8-15.5 against 20.3-28.6 ms): two runs of
``benchmarks/probes/kernel_blocks_ab.py`` on 2026-11-25, the second in ``results/cpu2_kernel_blocks_ab.json``.
On an H100 the blocks were slower (value + gradient 0.93-1.33 against 0.52-0.68 ms,
``results/h100_kernel_blocks_ab.json``: one dense product is one kernel launch where the blocks
are 63, and that call is bound by launches), so models whose kernels live on a GPU keep the dense
fold (:func:`use_blocks`), as do small kernels.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["KernelBlocks", "MIN_ENTRIES", "ROWS", "use_blocks"]

#: Recoil bins per block. On 2 CPU cores, paper workload, 128 to 2000 gave -2 ln L value +
#: gradients within the machine's noise of each other (12.8-15.7 ms, against 20.3-28.6 ms dense)
#: and the fold alone was fastest with 128-256 (2.7-3.6 ms; 512-2000: 3.4-4.4 ms;
#: benchmarks/probes/kernel_blocks_ab.py); 256 makes half as many blocks as 128.
ROWS = 256

#: Kernels with fewer entries than this fold densely on the CPU too: there the blocks measured
#: no faster (9 x 200 x 1000 entries: value 1.0 vs 1.1-1.5 ms, value + gradient 2.0-2.6 vs
#: 1.9-2.1 ms), while each block adds to every compilation; from 9 x 700 x 1000 on they were
#: (value 3.5-3.7 vs 4.8 ms, value + gradient 6.4-7.8 vs 8.6-9.1 ms).
MIN_ENTRIES = 4_000_000


def use_blocks(kernels) -> bool:
    """Whether a model with these kernels folds by blocks: where they are concrete arrays on a
    CPU device holding at least :data:`MIN_ENTRIES` entries together (see the module docstring)."""
    leaves = jax.tree_util.tree_leaves(kernels)
    if not leaves or any(isinstance(k, jax.core.Tracer) for k in leaves):
        return False
    if sum(int(np.size(k)) for k in leaves) < MIN_ENTRIES:
        return False
    devices = set()
    for k in leaves:
        devices |= set(getattr(k, "devices", lambda: set())())
    return bool(devices) and all(d.platform == "cpu" for d in devices)


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class KernelBlocks:
    r"""Kernels :math:`G^{(k)}` (n_T_k, n_obs) as dense blocks covering every nonzero entry.

    ``layout[b] = (k, r0, r1, c0, c1)``: block ``b`` is ``G[k][r0:r1, c0:c1]``; every entry of
    a kernel outside its blocks is exactly zero. Build with :meth:`from_kernels`.
    """

    blocks: tuple  # arrays (r1 - r0, c1 - c0), on the kernels' device and in their dtype
    layout: tuple = field(metadata=dict(static=True))
    n_obs: int = field(metadata=dict(static=True))

    @classmethod
    def from_kernels(cls, kernels: Sequence, rows: int = ROWS) -> "KernelBlocks":
        """Cut each kernel (a sequence of 2-D arrays of one column count, or a 3-D stack) into
        blocks of at most ``rows`` rows from its first to its last nonzero row, each trimmed to
        its nonzero columns. A NaN counts as nonzero (it is kept, not hidden)."""
        rows = int(rows)
        if rows < 1:
            raise ValueError(f"rows per block must be >= 1, got {rows}")
        n_obs = {int(np.shape(g)[-1]) for g in kernels}
        if len(n_obs) != 1 or any(np.ndim(g) != 2 for g in kernels):
            raise ValueError("kernels must be 2-D arrays with one column count (n_obs), "
                             f"got shapes {[np.shape(g) for g in kernels]}")
        blocks, layout = [], []
        for k, g in enumerate(kernels):
            host = np.asarray(g)
            nz = host != 0
            nz_rows = np.flatnonzero(nz.any(axis=1))
            if not nz_rows.size:
                continue
            mine = []
            for r0 in range(int(nz_rows[0]), int(nz_rows[-1]) + 1, rows):
                r1 = min(r0 + rows, int(nz_rows[-1]) + 1)
                cols = np.flatnonzero(nz[r0:r1].any(axis=0))
                if not cols.size:
                    continue
                c0, c1 = int(cols[0]), int(cols[-1]) + 1
                layout.append((k, r0, r1, c0, c1))
                mine.append(host[r0:r1, c0:c1])
            if isinstance(g, jax.Array):
                # cut on the host and put back on the kernel's device in one transfer: slicing the
                # device array compiled one program per block shape (1.7 s for the default model)
                # committed where the kernel is (its sharding), uncommitted where it is not, as the
                # slices were: a committed block would clash with inputs sharded over a mesh
                host_blocks = [np.ascontiguousarray(b) for b in mine]
                mine = jax.device_put(host_blocks, g.sharding) if g.committed else jax.device_put(host_blocks)
            blocks.extend(mine)
        return cls(tuple(blocks), tuple(layout), n_obs.pop())

    @property
    def size(self) -> int:
        """Entries stored in the blocks."""
        return sum((r1 - r0) * (c1 - c0) for _, r0, r1, c0, c1 in self.layout)

    def fold(self, spectra: Sequence) -> jax.Array:
        r""":math:`\sum_k \sum_i s^{(k)}_i G^{(k)}_{ij}` for the (weighted) recoil spectra
        ``spectra[k]`` of shape (n_T_k,): (n_obs,)."""
        dtype = jnp.result_type(*[s.dtype for s in spectra], *[b.dtype for b in self.blocks])
        out = jnp.zeros(self.n_obs, dtype=dtype)
        for (k, r0, r1, c0, c1), block in zip(self.layout, self.blocks):
            out = out.at[c0:c1].add(spectra[k][r0:r1] @ block)
        return out

    def dense(self, shapes: Sequence[tuple]) -> np.ndarray:
        """The kernels rebuilt as one zero-filled (n_sig, max n_T, n_obs) numpy array (tests)."""
        n_t = max(s[0] for s in shapes)
        out = np.zeros((len(shapes), n_t, self.n_obs), dtype=np.result_type(*[b.dtype for b in self.blocks]))
        for (k, r0, r1, c0, c1), block in zip(self.layout, self.blocks):
            out[k, r0:r1, c0:c1] = np.asarray(block)
        return out
