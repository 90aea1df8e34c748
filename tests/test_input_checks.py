"""Bad inputs at every front door of parameters, data, models, fits and scans: each gets a named
nuejax error (file/IO and builder inputs: tests/test_input_checks_io.py); no NaN leaves."""

import warnings

import jax.numpy as jnp
import numpy as np
import pytest

from nuejax.errors import DataError, InputError, ModelProtocolError, ParameterError
from nuejax.inference import NLLCost, batch_fit, fit, newton_fit, profile_scan, profile_scan_2d
from nuejax.model import Parameter, ParameterSet
from nuejax.model.checks import NonIntegerCountsWarning, check_data
from nuejax.model.fast import fast_model


@pytest.fixture(scope="module")
def fm(small_model):
    m = small_model.with_parameters(small_model.parameters.release("eps_ee_L", "mu_nu"))
    return fast_model(m)


@pytest.fixture(scope="module")
def data(fm):
    return np.round(np.asarray(fm.asimov()))


# -- parameters ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("kw, match", [
    (dict(name="x", value=float("nan")), "value must be finite"),
    (dict(name="x", value=0.0, lower=1.0, upper=-1.0), "not below upper bound"),
    (dict(name="x", value=0.0, lower=0.0, upper=0.0), "not below upper bound"),
    (dict(name="x", value=0.0, lower=float("nan")), "bounds must not be NaN"),
    (dict(name="x", value=5.0, lower=0.0, upper=1.0), "outside bounds"),
    (dict(name="x", value=0.0, constraint=(0.0, 0.0)), "width must be finite and > 0"),
    (dict(name="x", value=0.0, constraint=(0.0, -1.0)), "width must be finite and > 0"),
    (dict(name="x", value=0.0, constraint=(float("nan"), 1.0)), "centre must be finite"),
    (dict(name="x", value=0.0, constraint=(1.0,)), r"\(centre, sigma\)"),
    (dict(name="not a name", value=0.0), "identifier"),
    (dict(name="x", value="1"), "must be a number"),
    (dict(name="x", value=0.0, constraint=0.1), r"\(centre, sigma\)"),
])
def test_bad_parameter_definitions(kw, match):
    with pytest.raises(ParameterError, match=match):
        Parameter(**kw)


@pytest.mark.slow
def test_bad_parameter_sets_and_values(fm):
    with pytest.raises(ParameterError, match="duplicate"):
        ParameterSet((Parameter("a", 0.0), Parameter("a", 1.0)))
    with pytest.raises(ParameterError, match="Parameter objects"):
        ParameterSet(("a",))
    ps = fm.parameters
    with pytest.raises(ParameterError, match="did you mean 'eps_ee_L'"):
        ps.values(eps_ee_l=0.05)
    with pytest.raises(ParameterError, match="must be a mapping"):
        ps.values([("eps_ee_L", 0.05)])
    hash(ParameterSet((Parameter("a", 0.0, constraint=[0.0, 1.0]),)))  # a list constraint is stored as a tuple
    with pytest.raises(ParameterError, match="did you mean 'norm_7Be'"):
        ps["norm_7be"]
    with pytest.raises(ParameterError, match="not finite"):
        ps.values(eps_ee_L=float("nan"))
    with pytest.raises(ParameterError, match="outside its bounds"):
        ps.values(mu_nu=-1.0)
    with pytest.raises(ParameterError, match="outside its bounds"):
        ps.values(eps_ee_L=np.array([0.0, 5.0]))
    with pytest.raises(ParameterError, match="not below upper bound"):
        ps.update("eps_ee_L", lower=1.0, upper=-1.0)
    with pytest.raises(ParameterError, match="outside bounds"):
        ps.fix(eps_ee_L=5.0)
    with pytest.raises(ParameterError, match="cannot update"):
        ps.update("eps_ee_L", nmae="x")
    with pytest.raises(ParameterError, match="lacks"):
        fm.with_parameters(ParameterSet(ps.parameters[:3]))


# -- data -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad, match", [
    (lambda d: d[:1], "has 1 bins, the model has 861"),
    (lambda d: d[:-1], "has 860 bins"),
    (lambda d: np.stack([d, d]), "expected a 1-D array"),
    (lambda d: np.where(np.arange(d.size) == 7, np.nan, d), "invalid count nan in bin 7"),
    (lambda d: np.where(np.arange(d.size) == 3, np.inf, d), "invalid count inf in bin 3"),
    (lambda d: np.where(np.arange(d.size) == 5, -1.0, d), "invalid count -1.0 in bin 5"),
    (lambda d: "counts", "cannot be read"),
    (lambda d: np.zeros(0), "has 0 bins"),
])
def test_bad_data_raise_at_every_entry_point(fm, data, bad, match):
    d = bad(data)
    for call in (lambda: fit(fm, d), lambda: newton_fit(fm, d), lambda: NLLCost(fm, d),
                 lambda: profile_scan(fm, d, "eps_ee_L", [0.0, 0.1]),
                 lambda: profile_scan_2d(fm, d, ("eps_ee_L", "mu_nu"), [0.0], [0.0]),
                 lambda: fm.nll(fm.defaults(), d)):
        with pytest.raises(DataError, match=match):
            call()


def test_batch_data_checks_name_the_row(fm, data):
    with pytest.raises(DataError, match="expected a 2-D array"):
        batch_fit(fm, data)
    bad = np.stack([data, data])
    bad[1, 4] = -2
    with pytest.raises(DataError, match="bin 4 of row 1"):
        batch_fit(fm, bad)


def test_non_integer_counts_warn_once_and_integer_counts_do_not(data):
    with pytest.warns(NonIntegerCountsWarning, match="non-integer count"):
        check_data(data + 0.5, data.size)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_data(data, data.size)


@pytest.mark.slow
def test_all_zero_data_is_legitimate_and_gives_finite_results(fm):
    zero = np.zeros(fm.n_obs)
    r = fit(fm, zero, one_sided=False)
    assert np.isfinite(r.fval) and r.valid, r.reason
    assert all(e is None or np.isfinite(e) for e in r.errors.values())
    rn = newton_fit(fm, zero, one_sided=False)
    assert rn.valid and rn.fval == pytest.approx(r.fval, abs=1e-4)
    assert all(r.values[f"rate_{b}"] == 0.0 for b in ("210Bi", "85Kr", "11C", "210Po"))


# -- fits and scans ------------------------------------------------------------------------------------------
def test_bad_starts_names_and_scan_values(fm, data):
    with pytest.raises(ParameterError, match="did you mean 'eps_ee_L'"):
        fit(fm, data, {"eps_ee_l": 0.1})
    with pytest.raises(ParameterError, match="outside its bounds"):
        fit(fm, data, {"eps_ee_L": 5.0})  # a start outside [-2, 2]: never silently clipped
    with pytest.raises(ParameterError, match="not finite"):
        newton_fit(fm, data, {"norm_pp": float("nan")})
    with pytest.raises(ParameterError, match="unknown parameter 'norm'"):
        newton_fit(fm, data, names=("norm",))
    with pytest.raises(ParameterError, match="listed twice"):
        newton_fit(fm, data, names=("norm_pp", "norm_pp"))
    with pytest.raises(ParameterError, match="no parameter to fit"):
        newton_fit(fm.with_parameters(fm.parameters.fix(*fm.parameters.free_names)), data)
    with pytest.raises(ParameterError, match="outside its bounds"):
        profile_scan(fm, data, "mu_nu", [-1.0, 0.0, 1.0])
    with pytest.raises(ParameterError, match="not finite"):
        profile_scan(fm, data, "eps_ee_L", [0.0, float("nan")])
    with pytest.raises(ParameterError, match="non-empty 1-D"):
        profile_scan(fm, data, "eps_ee_L", [])
    with pytest.raises(ParameterError, match="did you mean 'mu_nu'"):
        profile_scan(fm, data, "mu_n", [0.0])
    with pytest.raises(ParameterError, match="two different parameters"):
        profile_scan_2d(fm, data, ("mu_nu", "mu_nu"), [0.0], [0.0])
    with pytest.raises(ParameterError, match="scalars"):
        fit(fm, data, {"norm_pp": np.ones(3)})
    with pytest.raises(ParameterError, match=r"expected \(2,\)"):
        batch_fit(fm, np.stack([data, data]), {"norm_pp": np.ones(3)})
    with pytest.raises(TypeError, match="FitResult"):
        profile_scan(fm, data, "eps_ee_L", [0.0], global_fit={"fval": 1.0})


def test_model_front_door_checks_parameters(fm, data):
    p = fm.parameters.values()
    with pytest.raises(ParameterError, match="did you mean 'eps_ee_L'"):
        fm.nll({**p, "eps_ee_l": jnp.asarray(0.05)}, data)
    with pytest.raises(ParameterError, match="norm_pp missing"):
        fm.expected({k: v for k, v in p.items() if k != "norm_pp"})
    with pytest.raises(ParameterError, match="not finite"):
        fm.expected({**p, "mu_nu": jnp.asarray(np.nan)})
    with pytest.raises(ParameterError, match="outside its bounds"):
        fm.nll({**p, "rate_85Kr": jnp.asarray(-3.0)}, data)
    with pytest.raises(ParameterError, match="mapping"):
        fm.expected([1.0, 2.0])
    # traced calls are not checked (nothing in the compiled hot path) and give the same value
    import jax

    assert float(jax.jit(lambda m, q: m.nll(q, data))(fm, p)) == pytest.approx(float(fm.nll(p, data)), rel=1e-14)


def test_model_protocol_errors_say_what_is_missing(data):
    class Empty:
        pass

    with pytest.raises(ModelProtocolError, match="subclass nuejax.model.AbstractModel.*none of parameters, expected, nll"):
        fit(Empty(), data)
    assert issubclass(ModelProtocolError, TypeError) and issubclass(DataError, InputError)


def test_fast_model_rejects_unknown_oscillation_names(small_model):
    with pytest.raises(ParameterError, match="did you mean 'sin2_theta12'"):
        fast_model(small_model, {"sin2_theta_12": 0.3})
    with pytest.raises(ParameterError, match="outside its bounds"):
        fast_model(small_model, {"sin2_theta12": 0.9})


def test_mu_nu_in_bohr_magnetons_warns_and_bad_thresholds_raise(fm):
    with pytest.warns(UserWarning, match="looks like a value in Bohr magnetons.*mu_nu=3"):
        fm.parameters.values(mu_nu=3e-11)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fm.parameters.values(mu_nu=3.0)  # 3e-11 mu_B in the package's unit: silent
    from nuejax.physics import build_source, event_rate

    src = build_source("pp")
    for bad in (float("nan"), -1.0, float("inf")):
        with pytest.raises(ValueError, match="threshold must be finite and >= 0"):
            event_rate(src, threshold=bad)
    assert float(event_rate(src, threshold=0.1)) > 0


class _Axis:
    def __init__(self, edges):
        self.edges = np.asarray(edges, dtype=float)


class _Hist:
    """The part of the UHI PlottableHistogram protocol a fit reads (``hist`` is not a test dependency)."""

    def __init__(self, counts, edges, name="h"):
        self.axes = (_Axis(edges),)
        self._counts = np.asarray(counts, dtype=float)
        self.name = name

    def values(self):
        return self._counts


@pytest.mark.slow
def test_a_histogram_is_fitted_only_on_the_model_binning(fm, data):
    edges = np.asarray(fm.obs_edges)
    r = fit(fm, _Hist(data, edges))
    assert r.valid and abs(r.fval - fit(fm, data).fval) < 1e-9
    shifted = edges + 0.5 * np.diff(edges).min()
    with pytest.raises(InputError, match="edge"):
        fit(fm, _Hist(data, shifted, name="shifted"))
    with pytest.raises(InputError, match="shifted"):
        batch_fit(fm, _Hist(data, shifted, name="shifted"))


@pytest.mark.slow
def test_fits_do_not_warn_on_asimov_data_and_file_readers_name_the_file(fm, tmp_path):
    from nuejax.analyses.limits import read_counts
    from nuejax.inference import cls_upper_limit

    asimov = np.asarray(fm.asimov())
    assert np.any(asimov != np.round(asimov))
    with warnings.catch_warnings():
        warnings.simplefilter("error", NonIntegerCountsWarning)
        fit(fm, asimov)
        cls_upper_limit(fm, np.round(asimov), "mu_nu", [0.5, 1.0])
    path = tmp_path / "counts.txt"
    np.savetxt(path, asimov)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always", NonIntegerCountsWarning)
        read_counts(path, fm.n_obs)
    assert [w for w in seen if issubclass(w.category, NonIntegerCountsWarning) and str(path) in str(w.message)]
