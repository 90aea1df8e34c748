r"""Combined likelihoods: several experiments under one set of parameters.

.. math::
    -2\ln L(\theta) = \sum_e \Big[\mathcal L_e\big(\mu_e(\theta_e), n_e\big) + \sum_k C_{e,k}(\theta_e; a_{e,k})\Big],

each experiment ``e`` with its own likelihood stage (binned or unbinned), data and constraint
terms. The ``shared`` parameters (new physics; optionally solar fluxes, oscillation parameters)
are one parameter of the combination, with the name they have in the experiments, and their
constraint counts once (it is one auxiliary measurement); every other parameter is per
experiment, renamed ``<name>_<label>``. A shared name must mean the same thing in every
experiment that has it (same default, bounds, fixed flag, constraint and unit): otherwise
:func:`combine` raises an error that names the difference.

Data of a combination are one flat array: every experiment's data (counts, or the flattened
``(n_max, 2)`` events of an unbinned stage) one after the other (:meth:`CombinedModel.join`,
:meth:`CombinedModel.split`); toys draw each experiment from its own likelihood stage. So
``fit``, ``batch_fit``, the scans, the toys and the Neyman constructions work on a combination as
on one model.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from .._internal.pytree import static_field
from ..errors import DataError, InputError, ParameterError
from .parameters import ParameterSet
from .physics_params import NEW_PHYSICS_NAMES
from .protocol import AbstractModel, as_pytree, check_model

__all__ = ["CombinedModel", "RenamedTerm", "StackedLikelihood", "combine"]

#: the fields of a Parameter that must agree for a name to be shared
_SHARED_FIELDS = ("value", "lower", "upper", "fixed", "constraint", "unit")


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class RenamedTerm:
    """A constraint term of one experiment, read with the combination's parameter names: the term
    ``inner`` sees ``{own name: p[combined name]}`` (``pairs``: (own, combined) names)."""

    inner: object
    pairs: tuple = static_field()

    @property
    def names(self) -> tuple:
        own = dict(self.pairs)
        return tuple(own[n] for n in self.inner.names)

    @property
    def resamplable(self) -> bool:
        return self.inner.resamplable

    def _own(self, p) -> dict:
        return {o: p[c] for o, c in self.pairs if c in p}

    def __call__(self, p, aux=None):
        return self.inner(self._own(p), aux) if aux is not None else self.inner(self._own(p))

    def nominal(self):
        return self.inner.nominal()

    def sample(self, key, p):
        return self.inner.sample(key, self._own(p))

    def asimov(self, p):
        return self.inner.asimov(self._own(p))

    def describe(self) -> str:
        return f"{self.inner.describe()} as {', '.join(self.names)}"

    def check(self, parameters) -> None:
        for n in self.names:
            if n not in parameters.names:
                raise ParameterError(f"constraint [{self.describe()}]: the combination has no parameter {n!r}")


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class StackedLikelihood:
    """The likelihood stage of a combination: each experiment's stage on its part of the
    expectation (``n_expected`` entries each) and of the flat data (``data_shapes``, flattened)."""

    parts: tuple
    n_expected: tuple = static_field()
    data_shapes: tuple = static_field()
    labels: tuple = static_field()

    obs_edges = None

    @property
    def binned(self) -> bool:
        """Whether every part is the binned Poisson likelihood (then the stack is the binned
        Poisson likelihood of the joined counts)."""
        from .likelihood import BinnedPoisson

        return all(isinstance(lik, BinnedPoisson) for lik in self.parts)

    @property
    def asimov_at_truth(self) -> bool:
        """Whether every part's Asimov data set has its minimum at the parameters that made it
        (:attr:`~nuejax.model.likelihood.BinnedPoisson.asimov_at_truth`)."""
        return all(getattr(lik, "asimov_at_truth", False) for lik in self.parts)

    @property
    def n_obs(self) -> int:
        return int(sum(self.n_expected))

    @property
    def n_data(self) -> tuple:
        return tuple(int(np.prod(s)) for s in self.data_shapes)

    def _split(self, x, sizes):
        cuts = np.cumsum((0,) + tuple(sizes))
        return [x[..., a:b] for a, b in zip(cuts[:-1], cuts[1:])]

    def split_data(self, data) -> list:
        """Each experiment's data (its own shape) from the flat ``data`` (any leading axes)."""
        lead = jnp.shape(data)[:-1]
        return [jnp.reshape(d, lead + s) for d, s in zip(self._split(data, self.n_data), self.data_shapes)]

    def __call__(self, expected, data):
        mus = self._split(expected, self.n_expected)
        return sum(lik(mu, d) for lik, mu, d in zip(self.parts, mus, self.split_data(data)))

    def asimov_data(self, expected):
        lead = jnp.shape(expected)[:-1]
        return jnp.concatenate([jnp.reshape(lik.asimov_data(mu), lead + (-1,))
                                for lik, mu in zip(self.parts, self._split(expected, self.n_expected))], axis=-1)

    def toy_parts(self, expected) -> int:
        mus = self._split(np.asarray(expected), self.n_expected)
        return max(lik.toy_parts(mu) for lik, mu in zip(self.parts, mus))

    def sample(self, key, expected, lead=(), parts: int = 1):
        lead = tuple(lead)
        mus = self._split(expected, self.n_expected)
        return jnp.concatenate([jnp.reshape(lik.sample(jax.random.fold_in(key, k), mu, lead, parts), lead + (-1,))
                                for k, (lik, mu) in enumerate(zip(self.parts, mus))], axis=-1)

    def check_data(self, data, *, batch: bool = False, name: str = "data", warn_non_integer: bool = True):
        """Checked flat data: (sum of the experiments' data sizes,), or (n, ...) with ``batch``;
        each experiment's part checked by its own stage (errors name the experiment)."""
        from .checks import float_array, is_traced

        if is_traced(data):
            return data
        d = float_array(data, name, "the combination's data")
        total = sum(self.n_data)
        if d.ndim != (2 if batch else 1) or d.shape[-1] != total:
            raise DataError(f"{name}: a combination's data are one flat array of {total} numbers per data set "
                            f"({', '.join(f'{lab}: {n}' for lab, n in zip(self.labels, self.n_data))}; "
                            f"join them with model.join(...)), got shape {d.shape}")
        for lik, part, lab, shape in zip(self.parts, self._split(d, self.n_data), self.labels, self.data_shapes):
            lik.check_data(part.reshape(part.shape[:-1] + shape), batch=batch, name=f"{name} of {lab}",
                           warn_non_integer=warn_non_integer)
        return d

    def check_expected(self, expected, data) -> None:
        for lik, mu, d in zip(self.parts, self._split(np.asarray(expected), self.n_expected),
                              self.split_data(np.asarray(data))):
            lik.check_expected(mu, np.asarray(d))


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class CombinedModel(AbstractModel):
    """Several experiments' models under one parameter set (module docstring); build with
    :func:`combine`."""

    models: tuple
    likelihood: StackedLikelihood
    constraints: tuple = ()
    parameters: ParameterSet = static_field(default=None)
    maps: tuple = static_field(default=())  # per model: ((own name, combined name), ...)
    baked: tuple = static_field(default=())

    @property
    def labels(self) -> tuple:
        return self.likelihood.labels

    def expected(self, params):
        """Every experiment's expectation, one after the other; checked front door when called eagerly."""
        self._check_call(params)
        return jnp.concatenate([m.expected({o: params[c] for o, c in mp}) for m, mp in zip(self.models, self.maps)])

    @property
    def linear_parameters(self) -> tuple:
        """The combination's parameters in which every experiment's expectation is affine (each
        model's ``linear_parameters`` under the combination's names; a name that one model reads
        non-linearly is not linear)."""
        out = []
        for c in self.parameters.names:
            ok = True
            for m, mp in zip(self.models, self.maps):
                own = {cc: o for o, cc in mp}.get(c)
                if own is not None and own not in tuple(getattr(m, "linear_parameters", ()) or ()):
                    reads = own in m.parameters.names
                    ok = ok and not reads
            if ok and any(c in {cc for _, cc in mp} for mp in self.maps):
                out.append(c)
        return tuple(out)

    def part(self, label: str):
        """The experiment ``label``'s model."""
        return self.models[self.labels.index(label)]

    def own_params(self, params, label: str) -> dict:
        """The parameters of experiment ``label`` under its own names."""
        return {o: params[c] for o, c in self.maps[self.labels.index(label)] if c in params}

    def joined_values(self, names, parts: dict) -> np.ndarray:
        """Values of the combination's parameters ``names`` at points, from each experiment's own
        values there: ``parts`` = {label: (its parameter names, values (n, len(names)))}, one entry
        per experiment. Returns (n, number of experiments, len(names)): candidate k takes the
        parameters that several experiments share from experiment k, every other one from the
        experiment it belongs to; the seeds of a combined profile scan from the experiments' own
        end points (:func:`~nuejax.inference.scan.profile_scan_2d`).

        Raises:
            ParameterError: an experiment missing from ``parts``, or a name that no experiment's
                values give."""
        names = tuple(names)
        missing = [lab for lab in self.labels if lab not in parts]
        if missing:
            raise ParameterError(f"joined_values: no values of {missing} (one entry per experiment: {list(self.labels)})")
        own = {}  # label -> {own name: column}
        n = None
        for lab in self.labels:
            p_names, values = parts[lab]
            values = np.asarray(values, dtype=float)
            if values.ndim != 2 or values.shape[1] != len(p_names):
                raise ParameterError(f"joined_values: values of {lab} must be (n, {len(p_names)}), got {values.shape}")
            if n is not None and values.shape[0] != n:
                raise ParameterError(f"joined_values: {lab} has {values.shape[0]} points, another part {n}")
            n = values.shape[0]
            own[lab] = {v: values[:, j] for j, v in enumerate(p_names)}
        out = np.empty((n, len(self.labels), len(names)))
        for i, c in enumerate(names):
            have = [(k, o) for k, (lab, mp) in enumerate(zip(self.labels, self.maps)) for o, cc in mp
                    if cc == c and o in own[lab]]
            if not have:
                raise ParameterError(f"joined_values: no experiment's values give {c!r}")
            for k, lab in enumerate(self.labels):
                src = next(((kk, o) for kk, o in have if kk == k), have[0])
                out[:, k, i] = own[self.labels[src[0]]][src[1]]
        return out

    def join(self, *data) -> np.ndarray:
        """The combination's flat data from each experiment's data, in the order of the models."""
        if len(data) != len(self.models):
            raise DataError(f"join takes one data set per experiment ({', '.join(self.labels)}), got {len(data)}")
        out = []
        for lik, d, lab in zip(self.likelihood.parts, data, self.labels):
            out.append(np.ravel(lik.check_data(d, name=f"data of {lab}", warn_non_integer=False)))
        return np.concatenate(out)

    def split(self, data) -> list:
        """Each experiment's data from the combination's flat ``data``."""
        return [np.asarray(d) for d in self.likelihood.split_data(jnp.asarray(data))]

    def with_parameters(self, parameters: ParameterSet) -> "CombinedModel":
        """The same combination with a different parameter description; each experiment's model gets
        its parameters (bounds, fixed flags) under its own names."""
        new = super().with_parameters(parameters)
        models = []
        for m, mp in zip(self.models, self.maps):
            back = {c: o for o, c in mp}
            ps = ParameterSet(tuple(dataclasses.replace(parameters[c], name=back[c]) for o, c in mp
                                    if o in m.parameters.names))
            models.append(m.with_parameters(ps))
        return dataclasses.replace(new, models=tuple(models))


def combine(*models, labels=None, shared=None) -> CombinedModel:
    """The combined model of ``models`` (module docstring).

    Args:
        models: models of the protocol (binned or unbinned likelihood stages).
        labels: a name per experiment (identifiers; default ``exp0``, ``exp1``, ...): the suffix of
            its own parameters and the name in error messages.
        shared: the parameter names that are one parameter of the combination (default: every
            new-physics name, :data:`~nuejax.model.physics_params.NEW_PHYSICS_NAMES`, that two or
            more models have). Add flux normalisations or oscillation parameters to share them.
    Raises:
        ModelProtocolError: not a model. InputError: no model, bad labels, a shared name that no
            model has. ParameterError: a shared name that means different things (names the
            field and the experiments), a renamed name that collides.
    """
    if not models:
        raise InputError("combine needs at least one model")
    models = tuple(check_model(m) for m in models)
    labels = tuple(f"exp{k}" for k in range(len(models))) if labels is None else tuple(labels)
    if len(labels) != len(models) or len(set(labels)) != len(labels) or not all(
            isinstance(lab, str) and lab.isidentifier() for lab in labels):
        raise InputError(f"combine: labels must be {len(models)} distinct identifiers, got {labels!r}")
    counts = {}
    for m in models:
        for n in m.parameters.names:
            counts[n] = counts.get(n, 0) + 1
    if shared is None:
        shared = tuple(n for n in NEW_PHYSICS_NAMES if counts.get(n, 0) >= 2)
    else:
        shared = (shared,) if isinstance(shared, str) else tuple(shared)
        missing = [n for n in shared if n not in counts]
        if missing:
            raise InputError(f"combine: shared parameter(s) {missing} are parameters of none of the models")
    params, seen, maps = [], {}, []
    for m, lab in zip(models, labels):
        mp = []
        for p in m.parameters.parameters:
            if p.name in shared:
                if p.name in seen:
                    first, first_lab = seen[p.name]
                    for f in _SHARED_FIELDS:
                        if getattr(first, f) != getattr(p, f):
                            raise ParameterError(f"combine: shared parameter {p.name!r} means different things: {f} "
                                                 f"is {getattr(first, f)!r} in {first_lab} and {getattr(p, f)!r} in "
                                                 f"{lab} (make them agree with with_parameters, or do not share it)")
                else:
                    seen[p.name] = (p, lab)
                    params.append(p)
                mp.append((p.name, p.name))
            else:
                new = f"{p.name}_{lab}"
                params.append(dataclasses.replace(p, name=new))
                mp.append((p.name, new))
        maps.append(tuple(mp))
    names = [p.name for p in params]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ParameterError(f"combine: parameter name(s) {dup} arise twice after renaming; choose other labels")
    baked, terms = [], []
    for m, lab, mp in zip(models, labels, maps):
        ren = {b.name: f"{b.name}_{lab}" for b in m.baked}
        baked += [dataclasses.replace(b, name=ren[b.name]) for b in m.baked]
        pairs = tuple(mp) + tuple(ren.items())
        terms += [RenamedTerm(t, pairs) for t in tuple(m.constraints)]
    n_expected, data_shapes = [], []
    for m in models:
        mu = jax.eval_shape(lambda mm, p: mm.expected(p), m, m.parameters.defaults())
        a = jax.eval_shape(lambda mm, p: mm.likelihood.asimov_data(mm.expected(p)), m, m.parameters.defaults())
        n_expected.append(int(mu.shape[-1]))
        data_shapes.append(tuple(int(s) for s in a.shape))
    lik = StackedLikelihood(tuple(m.likelihood for m in models), tuple(n_expected), tuple(data_shapes), labels)
    return CombinedModel(tuple(as_pytree(m) for m in models), lik, tuple(terms), ParameterSet(tuple(params)),
                         tuple(maps), tuple(baked))
