"""A binned template analysis from files alone (spec model kind 'templates'): text and ROOT
templates and data give the same model; Asimov data of an injected point are fitted back to it;
bad inputs name the file, the histogram or the key."""

import textwrap
import warnings

import numpy as np
import pytest

from nuejax.analyses.spec import build_spec, load_spec, run_spec
from nuejax.errors import InputError
from nuejax.model import NonIntegerCountsWarning

EDGES = np.linspace(0.0, 10.0, 21)
X = 0.5 * (EDGES[1:] + EDGES[:-1])
TEMPLATES = {"signal": 40.0 * np.exp(-0.5 * ((X - 5.0) / 0.8) ** 2), "radon": 60.0 * np.exp(-X / 3.0),
             "flat": np.full(X.size, 8.0)}

SPEC = textwrap.dedent("""\
    version = 1
    name = "three-templates"

    [model]
    kind = "templates"
    edges = {edges}
    exposure = 2.0

    [[model.templates]]
    name = "signal"
    parameter = "mu"
    {signal}
    upper = 20.0

    [[model.templates]]
    name = "radon"
    {radon}
    gaussian = {{centre = 1.0, sigma = 0.1}}

    [[model.templates]]
    name = "flat"
    {flat}
    lower = 0.01
    lognormal = {{median = 1.0, sigma_ln = 0.2}}

    [data]
    {data}

    [[questions]]
    name = "best"
    kind = "fit"

    [[questions]]
    name = "mu_profile"
    kind = "profile"
    poi = "mu"
    grid = {{start = 0.0, stop = 3.0, num = 31}}
    """)


def _write(folder, root: bool, truth=None):
    truth = truth or {"mu": 1.5, "radon": 1.1, "flat": 0.9}
    names = {"signal": "mu", "radon": "radon", "flat": "flat"}
    data = 2.0 * sum(truth[names[k]] * v for k, v in TEMPLATES.items())  # Asimov: exposure x sum
    if root:
        from nuejax.io import write_hists

        write_hists(folder / "inputs.root", {**{k: (v, EDGES) for k, v in TEMPLATES.items()}, "data": (data, EDGES)})
        src = {k: f'file = "inputs.root"\n    histogram = "{k}"' for k in (*TEMPLATES, "data")}
    else:
        for k, v in TEMPLATES.items():
            np.savetxt(folder / f"{k}.txt", v)
        np.savetxt(folder / "data.txt", data)
        src = {k: f'file = "{k}.txt"' for k in (*TEMPLATES, "data")}
    text = SPEC.format(edges=EDGES.tolist(), **src)
    (folder / "analysis.toml").write_text(text)
    return folder / "analysis.toml", truth


@pytest.mark.parametrize("root", [False, True], ids=["text", "root"])
@pytest.mark.slow
def test_a_template_analysis_from_files_recovers_injected_normalisations(tmp_path, root):
    if root:
        pytest.importorskip("uproot")
    path, truth = _write(tmp_path, root)
    model, counts = build_spec(load_spec(path))
    assert model.parameters.free_names == ("mu", "radon", "flat") and model.n_obs == 20
    expected = 2.0 * sum(truth[n] * TEMPLATES[k] for k, n in (("signal", "mu"), ("radon", "radon"), ("flat", "flat")))
    np.testing.assert_allclose(np.asarray(model.expected(model.parameters.values(**truth))), expected, rtol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NonIntegerCountsWarning)
        res = run_spec(path)["questions"]
    fit = res["best"]
    assert fit["valid"]
    # Asimov data, but the constraints pull (radon's centre 1.0 against 1.1 injected, flat's median
    # 1.0 against 0.9): the minimum, checked against scipy's L-BFGS-B on -2 ln L written out here
    from scipy.optimize import minimize

    t = 2.0 * np.stack([TEMPLATES["signal"], TEMPLATES["radon"], TEMPLATES["flat"]])

    def nll(x):
        mu = x @ t
        return 2 * np.sum(mu - counts + counts * np.log(counts / mu)) + ((x[1] - 1) / 0.1) ** 2 + (np.log(x[2]) / 0.2) ** 2

    ref = minimize(nll, [1.0, 1.0, 1.0], method="L-BFGS-B", bounds=[(0, 20), (0, None), (0.01, None)],
                   options={"ftol": 1e-15, "gtol": 1e-10})
    for name, v in zip(("mu", "radon", "flat"), ref.x):
        assert fit["values"][name] == pytest.approx(v, rel=1e-4), name
    assert fit["values"]["mu"] == pytest.approx(1.5, rel=0.05)
    prof = res["mu_profile"]
    assert prof["converged"] == 31 and prof["interval"][0] < fit["values"]["mu"] < prof["interval"][1]


@pytest.mark.slow
def test_templates_without_constraints_return_the_injected_point(tmp_path):
    path, truth = _write(tmp_path, False)
    text = path.read_text().replace("gaussian = {centre = 1.0, sigma = 0.1}\n", "").replace(
        "lognormal = {median = 1.0, sigma_ln = 0.2}\n", "")
    path.write_text(text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NonIntegerCountsWarning)
        fit = run_spec(path)["questions"]["best"]
    for k, v in truth.items():
        assert fit["values"][k] == pytest.approx(v, rel=1e-5), k


def test_template_inputs_are_named_when_wrong(tmp_path):
    pytest.importorskip("uproot")
    path, _ = _write(tmp_path, True)
    text = path.read_text()
    from nuejax.io import write_hists

    write_hists(tmp_path / "coarse.root", {"radon": (np.ones(10), np.linspace(0, 10, 11))})
    cases = [
        (text.replace('histogram = "radon"', 'histogram = "radn"'), "radn"),
        (text.replace('file = "inputs.root"\n    histogram = "radon"', 'file = "coarse.root"\n    histogram = "radon"'),
         "coarse.root"),
        (text.replace('file = "inputs.root"\n    histogram = "flat"', 'file = "inputs.root"'), "give the TH1's key"),
        (text.replace('parameter = "mu"', 'parameter = "radon"'), "already belongs to template 'signal'"),
        (text.replace("upper = 20.0", "upper = 20.0\n    value = 30.0"), "outside its bounds"),
        (text.replace("edges = [0.0, 0.5,", "edges = [0.5, 0.0,"), "must increase"),
    ]
    for i, (bad, what) in enumerate(cases):
        p = tmp_path / f"bad{i}.toml"
        p.write_text(bad)
        with pytest.raises(InputError, match=what):
            build_spec(load_spec(p))


UNBINNED = textwrap.dedent("""\
    version = 1

    [model]
    kind = "templates"
    edges = {edges}

    [[model.templates]]
    name = "signal"
    parameter = "mu"
    file = "signal.txt"

    [[model.templates]]
    name = "radon"
    file = "radon.txt"

    [data]
    {data}

    [[questions]]
    name = "best"
    kind = "fit"

    [[questions]]
    name = "mu_profile"
    kind = "profile"
    poi = "mu"
    grid = {{start = 0.5, stop = 1.5, num = 11}}
    """)


@pytest.mark.slow
def test_an_event_list_is_fitted_with_the_unbinned_likelihood(tmp_path):
    """Events drawn from the templates' density (fine bins): the unbinned fit of the event list
    agrees with the binned fit of the same events histogrammed on those bins (the fine-binning
    limit), and with the same model built in Python."""
    from nuejax.inference import newton_fit
    from nuejax.model import Parameter, ParameterSet, template_model
    from nuejax.model.likelihood import UnbinnedPoisson

    edges = np.linspace(0.0, 10.0, 101)
    x = 0.5 * (edges[1:] + edges[:-1])
    sig = 4.0 * np.exp(-0.5 * ((x - 5.0) / 0.8) ** 2)  # counts per fine bin at unit normalisation
    bkg = 6.0 * np.exp(-x / 3.0)
    np.savetxt(tmp_path / "signal.txt", sig)
    np.savetxt(tmp_path / "radon.txt", bkg)
    rng = np.random.default_rng(11)
    lam = sig + bkg
    n = rng.poisson(lam)
    events = np.concatenate([rng.uniform(a, b, k) for a, b, k in zip(edges[:-1], edges[1:], n)])
    np.savetxt(tmp_path / "events.txt", events)
    np.savetxt(tmp_path / "counts.txt", n)
    for name, data in (("unbinned", 'events = "events.txt"'), ("binned", 'file = "counts.txt"')):
        (tmp_path / f"{name}.toml").write_text(UNBINNED.format(edges=edges.tolist(), data=data))
    model, counts = build_spec(load_spec(tmp_path / "unbinned.toml"))
    assert isinstance(model.likelihood, UnbinnedPoisson) and counts.shape[1] == 2
    assert counts[:, 1].sum() == events.size
    un = run_spec(tmp_path / "unbinned.toml")["questions"]
    bi = run_spec(tmp_path / "binned.toml")["questions"]
    mu_u, mu_b, err = un["best"]["values"]["mu"], bi["best"]["values"]["mu"], bi["best"]["errors"]["mu"]
    assert un["best"]["valid"] and abs(mu_u - mu_b) < 0.1 * err
    assert abs(mu_u - 1.0) < 3 * err
    assert un["mu_profile"]["converged"] == 11
    ps = ParameterSet((Parameter("mu", 1.0, 0.0, np.inf), Parameter("radon", 1.0, 0.0, np.inf)))
    direct = template_model(in_edges=edges, obs_edges=edges, templates=np.stack([sig, bkg]), template_names=("mu", "radon"),
                            parameters=ps, exposure=1.0, likelihood=UnbinnedPoisson.create(edges, counts.shape[0]))
    ref = newton_fit(direct, direct.likelihood.events(events))
    assert mu_u == pytest.approx(ref.values["mu"], rel=1e-9)
    # a question that fails while running names itself, and the answers before it are kept
    (tmp_path / "gof.toml").write_text(UNBINNED.format(edges=edges.tolist(), data='events = "events.txt"')
                                       + '\n[[questions]]\nname = "gof"\nkind = "goodness_of_fit"\n')
    with pytest.raises(InputError, match=r"questions\[2\]: question 'gof' \(goodness_of_fit\): goodness_of_fit: .*unbinned"):
        run_spec(tmp_path / "gof.toml", tmp_path / "gof_out")
    import json

    kept = json.loads((tmp_path / "gof_out" / "results.json").read_text())["questions"]
    assert set(kept) == {"best", "mu_profile"}
    # an event outside the bins is named
    np.savetxt(tmp_path / "events.txt", np.append(events, 12.5))
    with pytest.raises(InputError, match="data.events: events.txt: unbinned data: event .* at 12.5"):
        build_spec(load_spec(tmp_path / "unbinned.toml"))


@pytest.mark.slow
def test_a_2d_feldman_cousins_question(tmp_path, capsys):
    """A 2-D Feldman-Cousins region (mu x radon) from a spec: equal to feldman_cousins called
    directly, holding the grid point nearest the best fit, and close to the Wilks region of the
    same grid (most points decided alike)."""
    from nuejax.cli import _print_answer
    from nuejax.inference import feldman_cousins

    path, _ = _write(tmp_path, False)
    text = path.read_text().replace("gaussian = {centre = 1.0, sigma = 0.1}\n", "")
    # integer data: a Poisson draw of the truth, so the toys and the data are alike
    model, counts = build_spec(load_spec(path))
    n = np.random.default_rng(3).poisson(np.asarray(model.expected(model.parameters.values(mu=1.5, radon=1.1, flat=0.9))))
    np.savetxt(tmp_path / "data.txt", n)
    q = ('\n[[questions]]\nname = "{name}"\nkind = "{kind}"\npoi = "mu"\nvalues = [0.8, 1.1, 1.4, 1.7, 2.0, 2.3]\n'
         'poi_y = "radon"\nvalues_y = [0.8, 0.95, 1.1, 1.25, 1.4]\n')
    text += q.format(name="fc2", kind="feldman_cousins") + "toys = 60\nseed = 2\n" + q.format(name="wilks", kind="region_2d")
    path.write_text(text)
    res = run_spec(path, tmp_path / "out")["questions"]
    fc, wilks = res["fc2"], res["wilks"]
    assert fc["kind"] == "feldman_cousins_2d" and fc["n_toys"] == 60
    model, counts = build_spec(load_spec(path))
    direct = feldman_cousins(model, counts, ("mu", "radon"), (np.array(fc["values_x"]), np.array(fc["values_y"])), 60,
                             key=2)
    assert np.array_equal(np.asarray(direct.accepted_grid), np.asarray(fc["accepted"]))
    ix = int(np.argmin(np.abs(np.array(fc["values_x"]) - fc["best"][0])))
    iy = int(np.argmin(np.abs(np.array(fc["values_y"]) - fc["best"][1])))
    assert fc["accepted"][ix][iy]
    agree = np.mean(np.asarray(fc["accepted"]) == np.asarray(wilks["inside"]))
    assert agree >= 0.8, agree
    _print_answer("fc2", fc)
    assert "CL Feldman-Cousins region" in capsys.readouterr().out


def test_a_2d_feldman_cousins_question_needs_both_grids(tmp_path):
    path, _ = _write(tmp_path, False)
    path.write_text(path.read_text() + '\n[[questions]]\nname = "fc2"\nkind = "feldman_cousins"\npoi = "mu"\n'
                                       'poi_y = "radon"\nvalues_y = [0.8, 1.0]\n')
    with pytest.raises(InputError, match=r"questions\[2\]: question 'fc2': a 2-D Feldman-Cousins region needs both grids"):
        run_spec(path)


@pytest.mark.slow
def test_an_upper_limit_says_which_nuisance_is_held_at_a_bound(tmp_path):
    """No signal and no flat component in the data: at the signal's upper limit the flat
    normalisation is held at its lower bound 0, and the answer says so (as the Borexino mu_nu
    limit, set where the 85Kr rate reaches zero)."""
    path, _ = _write(tmp_path, False, truth={"mu": 0.0, "radon": 1.0, "flat": 0.0})
    text = path.read_text().replace("gaussian = {centre = 1.0, sigma = 0.1}\n", "").replace(
        "lower = 0.01\nlognormal = {median = 1.0, sigma_ln = 0.2}\n", "")
    assert "lognormal" not in text
    text += ('\n[[questions]]\nname = "limit"\nkind = "upper_limit"\npoi = "mu"\n'
             'grid = {start = 0.0, stop = 1.0, num = 41}\n')
    path.write_text(text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NonIntegerCountsWarning)
        res = run_spec(path)["questions"]
    lim = res["limit"]
    assert lim["upper"] is not None and lim["at_bound_at_limit"] == {"flat": "lower"}
    assert "flat sits on its lower bound 0" in lim["warnings"][0]


@pytest.mark.slow
def test_a_refined_profile_reads_its_interval_off_a_fine_grid(tmp_path):
    """refine = 6 adds points where the profile crosses its thresholds: the interval from a coarse
    grid (step 0.3) so refined agrees with a fine scan (step 0.005) far better than the coarse one."""
    path, _ = _write(tmp_path, False)
    base = path.read_text()
    q = '\n[[questions]]\nname = "p"\nkind = "profile"\npoi = "mu"\ngrid = {{start = 0.0, stop = 3.0, num = {n}}}\n'
    runs = {}
    for name, extra in (("coarse", q.format(n=11)), ("refined", q.format(n=11) + "refine = 6\n"),
                        ("fine", q.format(n=601))):
        path.write_text(base + extra)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NonIntegerCountsWarning)
            runs[name] = run_spec(path)["questions"]["p"]
    fine, ref, coarse = (np.array(runs[k]["interval"]) for k in ("fine", "refined", "coarse"))
    assert len(runs["refined"]["values"]) > 11
    assert np.all(np.abs(ref - fine) < 2e-3), (ref, fine)
    assert np.max(np.abs(ref - fine)) < 0.25 * np.max(np.abs(coarse - fine)), (ref, coarse, fine)


FOLDED = textwrap.dedent("""\
    version = 1
    name = "folded-templates-and-a-line"

    [model]
    kind = "templates"
    input_edges = {input_edges}
    edges = {edges}
    exposure = 2.0

    [model.response]
    form = "linear"
    res_a = {{value = 0.3, lower = 0.05, upper = 1.0, gaussian = {{centre = 0.3, sigma = 0.03}}}}
    scale = {{value = 1.0, lower = 0.8, upper = 1.2, gaussian = {{centre = 1.0, sigma = 0.02}}}}

    [[model.templates]]
    name = "radon"
    file = "radon.txt"
    gaussian = {{centre = 1.0, sigma = 0.1}}

    [[model.peaks]]
    name = "line"
    rate = {{value = 50.0, lower = 0.0, upper = 1000.0}}
    mean = {{value = 6.0, lower = 2.0, upper = 9.0}}
    sigma = {{value = 0.4, fixed = true}}

    [data]
    file = "counts.txt"

    [[questions]]
    name = "best"
    kind = "fit"
    profile_errors = false
    """)


@pytest.mark.slow
def test_templates_folded_through_a_response_with_a_peak(tmp_path):
    """Templates on a true-energy axis folded through a floating resolution and scale onto the
    observable's bins, plus a Gaussian line: the spec equals the model built in Python, and a fit
    of Asimov data returns the injected line and resolution."""
    from nuejax.detector.transforms import ResponseTransform
    from nuejax.model import GaussianPeak, Parameter, ParameterSet, template_model

    x_in = np.linspace(0.0, 12.0, 121)
    radon = 30.0 * np.exp(-0.5 * (x_in[1:] + x_in[:-1]) / 3.0)
    np.savetxt(tmp_path / "radon.txt", radon)
    np.savetxt(tmp_path / "counts.txt", np.zeros(16))
    (tmp_path / "a.toml").write_text(FOLDED.format(input_edges=[round(float(v), 6) for v in x_in], edges=[float(v) for v in EDGES[2:19]]))
    model, _ = build_spec(load_spec(tmp_path / "a.toml"))
    e = EDGES[2:19]
    params = ParameterSet((Parameter("radon", 1.0, 0.0, np.inf, constraint=(1.0, 0.1)),
                           Parameter("scale", 1.0, 0.8, 1.2, constraint=(1.0, 0.02)),
                           Parameter("res_a", 0.3, 0.05, 1.0, constraint=(0.3, 0.03)),
                           Parameter("line_rate", 50.0, 0.0, 1000.0), Parameter("line_mean", 6.0, 2.0, 9.0),
                           Parameter("line_sigma", 0.4, fixed=True)))
    direct = template_model(in_edges=x_in, obs_edges=e, templates=radon[None], template_names=("radon",),
                            parameters=params, exposure=2.0,
                            transform=ResponseTransform.create(x_in, e, resolution_form="linear", scale="scale",
                                                               res_a="res_a"),
                            peaks=(GaussianPeak(("line_rate", "line_mean", "line_sigma")),))
    # the constrained parameters at their constraints' centres (Asimov data then minimise -2 ln L
    # there), the line away from its start
    truth = dict(radon=1.0, res_a=0.3, scale=1.0, line_rate=80.0, line_mean=5.3)
    counts = np.asarray(direct.expected(direct.parameters.values(**truth)))
    assert model.parameters.names == direct.parameters.names
    off = dict(truth, res_a=0.36, scale=1.03, radon=1.1)
    assert float(model.nll(model.parameters.values(**off), counts)) == pytest.approx(
        float(direct.nll(direct.parameters.values(**off), counts)), rel=1e-12)
    # the resolution acts: a narrower one changes the folded spectrum
    assert np.max(np.abs(np.asarray(model.expected(model.parameters.values(**dict(truth, res_a=0.1)))) / counts - 1)) > 1e-3
    np.savetxt(tmp_path / "counts.txt", counts)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NonIntegerCountsWarning)
        fit = run_spec(tmp_path / "a.toml", tmp_path / "out")["questions"]["best"]
    assert fit["valid"]
    for name in ("line_rate", "line_mean", "res_a", "scale", "radon"):
        assert fit["values"][name] == pytest.approx(truth[name], rel=1e-4), name


@pytest.mark.parametrize("change, where, what", [
    (('sigma = {value = 0.4, fixed = true}', 'sigma = {value = 0.4}'), "model.peaks[0].sigma", "must stay > 0"),
    (('name = "radon"\nfile', 'name = "scale"\nfile'), "model.response.scale", "already belongs to template 'scale'"),
    (('[model.response]\nform = "linear"\n', '[model.respons]\n'), "model.respons", "did you mean 'response'"),
    (('mean = {value = 6.0, lower = 2.0', 'mean = {value = 1.0, lower = 2.0'), "model.peaks[0].mean",
     "outside its bounds"),
])
def test_bad_response_and_peak_keys_are_named(tmp_path, change, where, what):
    x_in = np.linspace(0.0, 12.0, 25)
    np.savetxt(tmp_path / "radon.txt", np.ones(24))
    np.savetxt(tmp_path / "counts.txt", np.zeros(16))
    text = FOLDED.format(input_edges=[float(v) for v in x_in], edges=[float(v) for v in EDGES[2:19]])
    assert change[0] in text
    (tmp_path / "a.toml").write_text(text.replace(*change))
    with pytest.raises(InputError) as err:
        build_spec(load_spec(tmp_path / "a.toml"))
    assert where in str(err.value) and what in str(err.value), str(err.value)


def test_a_template_of_the_wrong_length_names_the_templates_axis(tmp_path):
    x_in = np.linspace(0.0, 12.0, 25)
    np.savetxt(tmp_path / "radon.txt", np.ones(16))  # the observable's length, not the input axis's 24
    np.savetxt(tmp_path / "counts.txt", np.zeros(16))
    (tmp_path / "a.toml").write_text(FOLDED.format(input_edges=[float(v) for v in x_in],
                                                   edges=[float(v) for v in EDGES[2:19]]))
    with pytest.raises(InputError, match=r"model.templates\[0\].file: template 'radon': .*has 16 bins, the model has "
                                         r"24 bins on the templates' axis"):
        build_spec(load_spec(tmp_path / "a.toml"))


@pytest.mark.slow
def test_a_profile_names_the_points_whose_fit_did_not_converge(tmp_path):
    """A profile fit cut short (max_iter = 1) is named in the answer (not_converged, a warning),
    left out of the regions, and no RuntimeWarning reaches the user beside it."""
    path, _ = _write(tmp_path, False)
    text = path.read_text().replace("grid = {start = 0.0, stop = 3.0, num = 31}",
                                    "grid = {start = 0.0, stop = 3.0, num = 31}\nmax_iter = 1")
    path.write_text(text)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        warnings.simplefilter("ignore", NonIntegerCountsWarning)
        prof = run_spec(path)["questions"]["mu_profile"]
    values = np.asarray(prof["values"])
    failed = np.asarray(prof["not_converged"])
    assert failed.size == len(values) - prof["converged"] > 0
    assert set(failed) <= set(values) and prof["warnings"] and "did not converge at mu = " in prof["warnings"][0]
