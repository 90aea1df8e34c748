"""Analyses as data: a TOML specification file names the model, the data, the parameter changes
and the questions, and :func:`run_spec` answers them (``nuejax run SPEC``; docs/spec.md).

A specification is validated against the published JSON schema
``nuejax/analyses/analysis.schema.json`` (JSON Schema 2020-12, checked by ``jsonschema``) and then
against what the schema cannot say (the keys a model kind needs, parameter names, files). Every
error is an :class:`~nuejax.errors.InputError` naming the file, the key and its line.

Paths inside a specification are relative to the specification's folder, so a folder of a spec
and its data files can be moved or shared as one.

Version 1 knows two model kinds: ``xenon`` (solar neutrinos on the atomic electrons of a xenon
target, with a keV response and an efficiency: :func:`~nuejax.model.xenon.xenon_model`, the model
of ``nuejax xenonnt``, for any binning, exposure, efficiency and background given in files), and
``borexino_phase3`` (the packaged Borexino Phase-III analysis of ``nuejax borexino``:
:func:`~nuejax.analyses.borexino.borexino_phase3_model`). Questions: ``fit`` (the multi-start
bounded Newton fit, :func:`~nuejax.inference.newton_fit`), ``profile`` (a profile-likelihood scan
and its regions at ``cl``, :func:`~nuejax.inference.profile_scan`) and ``upper_limit`` (the
profile's one-sided upper limit at ``cl``, q̃ convention as
:meth:`~nuejax.inference.results.ScanResult.upper_limit` states).
"""

from __future__ import annotations

import difflib
import json
import re
import sys
import time
import warnings
from importlib import resources
from pathlib import Path

import numpy as np

from ..errors import InputError

__all__ = ["REUSED_KINDS", "SCHEMA", "automatic_grid", "build_spec", "load_spec", "run_spec", "shipped_specs"]

#: The schema's resource name inside the package.
SCHEMA = "analysis.schema.json"


def _schema() -> dict:
    return json.loads(resources.files("nuejax.analyses").joinpath(SCHEMA).read_text())


def shipped_specs() -> list:
    """The names of the specifications shipped in ``nuejax/analyses/specs/`` (``nuejax run NAME``
    runs one)."""
    folder = resources.files("nuejax.analyses").joinpath("specs")
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".toml"))


def _toml_loads(text: str) -> dict:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    return tomllib.loads(text)


def _line_of(text: str, path) -> int | None:
    """The line (1-based) of the key at ``path`` (keys and list indices) in the TOML ``text``:
    the tables and arrays of tables are followed header by header, then ``key =`` inside the last
    one; None when it cannot be located (e.g. inside an inline table)."""
    lines = text.splitlines()
    lo, hi = 0, len(lines)
    prefix: list = []
    path = list(path)
    i = 0
    found = None
    while i < len(path):
        key = path[i]
        if isinstance(key, int):
            i += 1
            continue
        dotted = ".".join(prefix + [str(key)])
        nxt = path[i + 1] if i + 1 < len(path) else None
        # a table's header may stand anywhere in the file (a sub-table [a.b] comes after the body
        # of [a], which ends at the next header), so headers are looked for in every line
        headers = [n for n in range(len(lines))
                   if re.match(r"^\s*\[\[?\s*" + re.escape(dotted) + r"\s*\]\]?\s*(#.*)?$", lines[n])]
        if headers:
            pick = nxt if isinstance(nxt, int) and nxt < len(headers) else 0
            start = headers[pick]
            end = next((n for n in range(start + 1, len(lines)) if re.match(r"^\s*\[", lines[n])), len(lines))
            lo, hi, found = start + 1, end, start + 1
            prefix.append(str(key))
            i += 1
            continue
        for n in range(lo, hi):
            if re.match(r"^\s*" + re.escape(str(key)) + r"\s*=", lines[n]):
                return n + 1
        return found
    return found


def _where(name: str, text: str, path) -> str:
    key = ".".join(str(p) if not isinstance(p, int) else f"[{p}]" for p in path).replace(".[", "[")
    line = _line_of(text, path)
    return f"{name}:{line}: {key or '(top level)'}" if line else f"{name}: {key or '(top level)'}"


def load_spec(path) -> dict:
    """Read and validate the specification at ``path`` (or the shipped one of that name,
    :func:`shipped_specs`, when no such file exists). Returns the parsed dict, with
    ``_file`` (the absolute path) and ``_text`` (its text) added for the messages.

    Raises:
        InputError: a file that is missing or not TOML (with the parser's line), or a
            specification the schema rejects (the file, the key path and its line, what is wrong).
    """
    import jsonschema

    path = Path(path)
    if not path.is_file() and path.suffix == "" and path.name in shipped_specs():
        path = Path(str(resources.files("nuejax.analyses").joinpath("specs", path.name + ".toml")))
    path = path.resolve()  # every message names the file the same way
    if not path.is_file():
        raise InputError(f"{path}: no such specification file (shipped specs: {', '.join(shipped_specs())})")
    text = path.read_text()
    try:
        spec = _toml_loads(text)
    except ValueError as err:  # tomllib.TOMLDecodeError is a ValueError; its message names the line
        line = re.search(r"at line (\d+)", str(err))
        raise InputError(f"{path}:{line.group(1) + ':' if line else ''} not valid TOML: {err}") from err
    validator = jsonschema.Draft202012Validator(_schema())
    # an unknown key first at its place (a misspelt key also makes a required one missing there)
    errors = sorted(validator.iter_errors(spec), key=lambda e: (list(map(str, e.absolute_path)),
                                                               e.validator != "additionalProperties", e.message))
    if errors:
        e = errors[0]
        where = list(e.absolute_path)
        if e.validator == "additionalProperties" and isinstance(e.instance, dict):
            known = list(e.schema.get("properties", {}))
            extra = sorted(set(e.instance) - set(known))
            where += extra[:1]  # point at the unknown key's own line
            close = difflib.get_close_matches(extra[0], known, n=1) if extra else []
            hint = f" (did you mean {close[0]!r}?)" if close else f" (keys here: {', '.join(known)})"
        else:
            hint = ""
        more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
        raise InputError(f"{_where(str(path), text, where)}: {e.message}{hint}{more}")
    spec["_file"], spec["_text"] = str(path.resolve()), text
    return spec


def _fail(spec: dict, path, message: str):
    if spec.get("_asked_by") and path and path[0] == "questions":  # asked on the command line, not in the file
        raise InputError(f"{spec['_asked_by']}: {message}")
    raise InputError(f"{_where(spec['_file'], spec['_text'], path)}: {message}")


def _file(spec: dict, path, rel: str) -> Path:
    p = Path(rel)
    if not p.is_absolute():
        p = Path(spec["_file"]).parent / p
    if not p.is_file():
        _fail(spec, path, f"no such file {p}")
    return p


def _numbers(spec: dict, path, rel: str, columns: int | None = None) -> np.ndarray:
    p = _file(spec, path, rel)
    try:
        a = np.loadtxt(p, ndmin=2, comments="#", delimiter=None)
    except ValueError as err:
        _fail(spec, path, f"{p} cannot be read as numbers: {err}")
    if columns is not None and a.shape[1] != columns:
        _fail(spec, path, f"{p} has {a.shape[1]} columns, expected {columns}")
    if not np.all(np.isfinite(a)):
        row = int(np.argwhere(~np.isfinite(a))[0][0])
        _fail(spec, path, f"{p}: row {row + 1} is not finite")
    return a


_XENON_KEYS = {"edges_kev", "exposure_t_yr", "efficiency_file", "background_file", "resolution",
               "resolution_uncertainty", "stepping", "signals", "physics", "fast"}
_SCINTILLATOR_KEYS = {"exposure_day_100t", "window", "n_T", "signals", "backgrounds", "solar_model", "physics",
                      "fast"}


def _physics(spec: dict) -> dict:
    """The keyword arguments of the general case (new physics in the signals) from the table
    ``[model.physics]``: ``nsi``, ``mediators``, ``propagation_nsi``, ``day_night``, ``latitude``
    (as :func:`~nuejax.model.borexino_like.borexino_like_model` takes them), checked here so that
    an error names the key."""
    from ..model.borexino_like import check_general_options

    ph = spec["model"].get("physics", {})
    if "latitude" in ph and ph.get("day_night", "day") == "day":
        _fail(spec, ["model", "physics", "latitude"], "the latitude sets the Earth crossing at night: it needs "
                                                      "day_night = 'night' or 'average'")
    # only the keys the table gives (the builders' defaults hold otherwise); NSI names and mediators
    # are checked by the schema
    kw = {k: tuple(v) if isinstance(v, list) else v for k, v in ph.items()}
    try:
        check_general_options(kw.get("nsi"), kw.get("mediators", ()), kw.get("day_night"), kw.get("latitude", "borexino"))
    except InputError as err:
        _fail(spec, ["model", "physics"], str(err))
    return kw


def _scintillator(spec: dict):
    """The paper's Borexino-like liquid-scintillator model
    (:func:`~nuejax.model.borexino_like.borexino_like_model`) with the physics of ``[model.physics]``."""
    from ..model.borexino_like import borexino_like_model

    m = spec["model"]
    kw = _physics(spec)
    if "exposure_day_100t" in m:
        kw["exposure"] = float(m["exposure_day_100t"])
    if "window" in m:
        kw["window"] = tuple(m["window"])
    for key in ("n_T", "solar_model"):
        if key in m:
            kw[key] = m[key]
    for key in ("signals", "backgrounds"):
        if key in m:
            kw[key] = tuple(m[key])
    try:
        return borexino_like_model(**kw)
    except (InputError, ValueError) as err:
        _fail(spec, ["model"], str(err))
_BOREXINO_KEYS = {"choices", "fast"}


def _xenon(spec: dict, capacity=None):
    from ..model.xenon import xenon_model

    m = spec["model"]
    for key in ("edges_kev", "exposure_t_yr"):
        if key not in m:
            _fail(spec, ["model"], f"model kind 'xenon' needs '{key}'")
    edges = np.asarray(m["edges_kev"], dtype=float)
    kw = {}
    if "efficiency_file" in m:
        table = _numbers(spec, ["model", "efficiency_file"], m["efficiency_file"], columns=2)
        e, eff = table[:, 0], table[:, 1]
        if np.any(np.diff(e) <= 0):
            row = int(np.argmax(np.diff(e) <= 0)) + 2
            _fail(spec, ["model", "efficiency_file"], f"energies must increase (row {row}: {e[row - 1]:g} keV)")
        if np.any(eff < 0) or np.any(eff > 1):
            row = int(np.argmax((eff < 0) | (eff > 1))) + 1
            _fail(spec, ["model", "efficiency_file"],
                  f"efficiencies must lie in [0, 1] (row {row}: {eff[row - 1]:g}; a fraction, not a percentage)")
        if e[0] > edges[0] or e[-1] < edges[-1]:
            _fail(spec, ["model", "efficiency_file"],
                  f"covers {e[0]:g}-{e[-1]:g} keV, not the bins' {edges[0]:g}-{edges[-1]:g} keV")
        kw["efficiency"] = lambda x, e=e, eff=eff: np.interp(x, e, eff)
    if "background_file" in m:
        bkg = _numbers(spec, ["model", "background_file"], m["background_file"]).ravel()
        if bkg.size != edges.size - 1:
            _fail(spec, ["model", "background_file"], f"has {bkg.size} numbers for {edges.size - 1} bins")
        kw["background"] = bkg
    for key in ("resolution", "resolution_uncertainty", "stepping"):
        if key in m:
            kw[key] = tuple(m[key]) if key == "resolution" else m[key]
    if "signals" in m:
        kw["signals"] = tuple(m["signals"])
    kw.update(_physics(spec))
    if capacity is not None:  # event data: the bins are the fine bins of the density
        kw.update(unbinned=True, capacity=capacity, sub=1)
    try:
        return xenon_model(edges, float(m["exposure_t_yr"]), **kw)
    except InputError as err:
        _fail(spec, ["model"], str(err))


_TEMPLATES_KEYS = {"edges", "exposure", "templates", "input_edges", "response", "peaks"}


def _parameter(spec: dict, where, name: str, table: dict, doc: str):
    """A :class:`~nuejax.model.Parameter` from a parameter table (``value``, ``lower``, ``upper``,
    ``fixed``, ``gaussian``), its value checked against its bounds."""
    from ..model import Parameter

    lo, hi = float(table.get("lower", -np.inf)), float(table.get("upper", np.inf))
    value = float(table["value"])
    if not lo <= value <= hi:
        _fail(spec, where, f"value {value:g} of {name!r} lies outside its bounds [{lo:g}, {hi:g}]")
    g = table.get("gaussian")
    return Parameter(name, value, lo, hi, fixed=bool(table.get("fixed", False)),
                     constraint=None if g is None else (float(g["centre"]), float(g["sigma"])), doc=doc)


def _response_and_peaks(spec: dict, in_edges: np.ndarray, edges: np.ndarray, taken: dict) -> tuple:
    """``(transform, peaks, parameters)`` of a templates spec: the response from the templates'
    input axis onto the observable's bins (:class:`~nuejax.detector.transforms.ResponseTransform`,
    one parameter per term given, named as the term) and the Gaussian peaks
    (:class:`~nuejax.model.templates.GaussianPeak`, parameters ``<name>_rate``, ``_mean``,
    ``_sigma``). ``taken``: parameter name -> what already holds it."""
    from ..detector.transforms import ResponseTransform
    from ..model.templates import GaussianPeak

    m = spec["model"]
    params, transform, peaks = [], None, []

    def add(where, name, table, doc):
        if name in taken:
            _fail(spec, where, f"parameter {name!r} already belongs to {taken[name]}")
        taken[name] = doc
        params.append(_parameter(spec, where, name, table, doc))

    if "input_edges" in m and "response" not in m:
        _fail(spec, ["model", "input_edges"], "templates on an input axis need [model.response] to reach 'edges'")
    if "response" in m:
        r = m["response"]
        terms = [t for t in ("scale", "offset", "res_a", "res_b", "res_c") if t in r]
        for t in terms:
            add(["model", "response", t], t, r[t], f"response term {t}")
        try:
            transform = ResponseTransform.create(in_edges, edges, resolution_form=r.get("form", "quadrature"),
                                                 **{t: t for t in terms})
        except InputError as err:
            _fail(spec, ["model", "response"], str(err))
    for i, pk in enumerate(m.get("peaks", [])):
        names = tuple(f"{pk['name']}_{k}" for k in ("rate", "mean", "sigma"))
        for k, name in zip(("rate", "mean", "sigma"), names):
            add(["model", "peaks", i, k], name, pk[k], f"peak {pk['name']!r} {k}")
        width = params[-1]
        if not (width.lower > 0 or (width.fixed and width.value > 0)):
            _fail(spec, ["model", "peaks", i, "sigma"], f"the width of peak {pk['name']!r} must stay > 0: give "
                                                        "lower > 0 (or fix it at a value > 0)")
        peaks.append(GaussianPeak(names))
    return transform, tuple(peaks), params


def _histogram(spec: dict, path, table: dict, edges: np.ndarray, what: str, integer: bool = False) -> np.ndarray:
    """Counts per bin of ``table`` (``file`` and, for ROOT, ``histogram``) on ``edges``
    (``integer``: warn for non-integer numbers, as for raw data; templates are expectations)."""
    from ..io import read_th1
    from .limits import read_counts

    f = _file(spec, path + ["file"], table["file"])
    if f.suffix == ".root":
        if "histogram" not in table:
            _fail(spec, path + ["file"], f"{f} is a ROOT file: give the TH1's key as 'histogram'")
        try:
            values, _ = read_th1(f, table["histogram"], expected_edges=edges, allow_empty=True)
        except InputError as err:  # names the file, the histogram and the bin
            _fail(spec, path + ["histogram"], str(err))
        return np.asarray(values, dtype=float)
    if "histogram" in table:
        _fail(spec, path + ["histogram"], f"{f} is not a ROOT file (.root): 'histogram' applies to ROOT files only")
    try:
        return read_counts(f, edges.size - 1, integer=integer)
    except InputError as err:  # a template lives on the templates' axis (input_edges where given)
        _fail(spec, path + ["file"], f"{what}: " + (str(err) if integer else
                                                     str(err).replace("observable bins", "bins on the templates' axis")))


def _increasing(spec: dict, key: str) -> np.ndarray:
    edges = np.asarray(spec["model"][key], dtype=float)
    if np.any(np.diff(edges) <= 0):
        i = int(np.argmax(np.diff(edges) <= 0)) + 1
        _fail(spec, ["model", key], f"must increase (edge {i}: {edges[i]:g} after {edges[i - 1]:g})")
    return edges


def _templates(spec: dict, capacity=None):
    """A binned template model from files (nuejax.model.template_model): one normalisation
    parameter per template, optional Gaussian or log-normal auxiliary measurements, shape
    variations and Monte Carlo statistical uncertainties (nuejax.model.variations)."""
    from ..model import ParameterSet, mc_stat_parameters, shape_variation_stage, template_model
    from ..model.constraints import LogNormalConstraint
    from ..model.likelihood import UnbinnedPoisson

    m = spec["model"]
    for key in ("edges", "templates"):
        if key not in m:
            _fail(spec, ["model"], f"model kind 'templates' needs '{key}'")
    edges = _increasing(spec, "edges")
    in_edges = _increasing(spec, "input_edges") if "input_edges" in m else edges
    rows, params, terms, owner = [], [], [], {}
    errors, variations, var_at = [], [], {}
    for i, t in enumerate(m["templates"]):
        where = ["model", "templates", i]
        name = t.get("parameter", t["name"])
        if name in owner:
            _fail(spec, where + ["parameter" if "parameter" in t else "name"],
                  f"parameter {name!r} already belongs to template {owner[name]!r} (one normalisation per template)")
        owner[name] = t["name"]
        if "gaussian" in t and "lognormal" in t:
            _fail(spec, where, "give one of 'gaussian' or 'lognormal', not both")
        norm = _parameter(spec, where, name, {"value": 1.0, "lower": 0.0, **t}, f"normalisation of template {t['name']!r}")
        if "lognormal" in t and norm.lower < 0:
            _fail(spec, where + ["lognormal"], f"a log-normal measurement needs {name!r} > 0: give lower > 0")
        counts = _histogram(spec, where, t, in_edges, f"template {t['name']!r}")
        rows.append(counts)
        errors.append(_histogram(spec, where + ["stat_error"], t["stat_error"], in_edges,
                                 f"template {t['name']!r} stat_error") if "stat_error" in t else np.zeros_like(counts))
        for j, v in enumerate(t.get("variations", [])):
            at = where + ["variations", j]
            if v["parameter"] in owner or v["parameter"].startswith("mc_stat_"):
                _fail(spec, at + ["parameter"], f"{v['parameter']!r} is already a normalisation's name (or reserved)")
            variations.append((name, v["parameter"], _histogram(spec, at + ["up"], v["up"], in_edges, "up"),
                               _histogram(spec, at + ["down"], v["down"], in_edges, "down")))
            var_at[v["parameter"]] = at
        params.append(norm)
        if "lognormal" in t:
            terms.append(LogNormalConstraint.create(name, float(t["lognormal"]["median"]),
                                                    float(t["lognormal"]["sigma_ln"])))
    clash = sorted(set(var_at) & set(owner))
    if clash:
        _fail(spec, var_at[clash[0]] + ["parameter"], f"{clash[0]!r} is also a template's normalisation")
    shape, mc = None, None
    if variations:
        shape, alphas = shape_variation_stage(dict(zip(owner, rows)), variations)
        params += list(alphas)
    if np.any(np.stack(errors) > 0):
        try:
            mc, gammas = mc_stat_parameters(np.stack(rows), np.stack(errors), [p.value for p in params[:len(rows)]])
        except InputError as err:
            _fail(spec, ["model", "templates"], str(err))
        params += list(gammas)
    taken = {n: f"template {t!r}" for n, t in owner.items()} | {p.name: "a template uncertainty" for p in params[len(rows):]}
    transform, peaks, extra = _response_and_peaks(spec, in_edges, edges, taken)
    params += extra
    try:
        return template_model(in_edges=in_edges, obs_edges=edges, templates=np.stack(rows), template_names=tuple(owner),
                              parameters=ParameterSet(tuple(params)), exposure=float(m.get("exposure", 1.0)),
                              constraints=tuple(terms), shape_variations=shape, mc_stat=mc, transform=transform,
                              peaks=peaks,
                              likelihood=None if capacity is None else UnbinnedPoisson.create(edges, capacity))
    except InputError as err:
        _fail(spec, ["model"], str(err))


def _borexino(spec: dict):
    from .borexino import Phase3Choices, borexino_phase3_model

    m = spec["model"]
    fields = Phase3Choices.__dataclass_fields__
    unknown = sorted(set(m.get("choices", {})) - set(fields))
    if unknown:
        _fail(spec, ["model", "choices", unknown[0]], f"not a choice of the Phase-III analysis (choices: {', '.join(fields)})")
    choices = {k: tuple(v) if isinstance(v, list) else v for k, v in m.get("choices", {}).items()}
    model, data, _ = borexino_phase3_model(Phase3Choices(**choices), fast=m.get("fast", True))
    return model, np.asarray(data.counts)


def build_spec(spec: dict):
    """The model and the observed counts of a validated specification (:func:`load_spec`), with
    its parameter changes applied. Returns ``(model, counts)``."""
    from .limits import read_counts

    m = spec["model"]
    kind = m["kind"]
    keys = {"xenon": _XENON_KEYS, "templates": _TEMPLATES_KEYS, "borexino_phase3": _BOREXINO_KEYS,
            "scintillator": _SCINTILLATOR_KEYS}[kind]
    wrong = sorted(set(m) - {"kind"} - keys)
    if wrong:
        _fail(spec, ["model", wrong[0]], f"not a key of model kind {kind!r} (its keys: {', '.join(sorted(keys))})")
    d = spec["data"]
    energies, capacity = None, None
    if "events" in d:
        if kind in ("borexino_phase3", "scintillator"):
            _fail(spec, ["data", "events"], f"model kind {kind!r} is binned: event lists are for model kinds "
                                            "'xenon' and 'templates'")
        energies = _numbers(spec, ["data", "events"], d["events"], columns=1).ravel()
        # toys draw a Poisson number of events: room for 10 standard deviations above the data's count
        capacity = int(energies.size + 10 * np.sqrt(energies.size) + 50)
    if kind == "xenon":
        model, packaged = _xenon(spec, capacity), None
    elif kind == "templates":
        model, packaged = _templates(spec, capacity), None
    elif kind == "scintillator":
        if "file" in d and "histogram" not in d and Path(d["file"]).suffix != ".root":
            # the bins are known before the (slow) build: a data file of the wrong length fails at once
            from ..model.borexino_like import DEFAULT_WINDOW

            lo, hi = spec["model"].get("window", DEFAULT_WINDOW)
            try:
                read_counts(_file(spec, ["data", "file"], d["file"]), int(hi) - int(lo) + 1, integer=False)
            except InputError as err:
                _fail(spec, ["data", "file"], f"{err} (one count per N_p bin of the window [{lo:g}, {hi:g}], ends included)")
        model, packaged = _scintillator(spec), None
    else:
        model, packaged = _borexino(spec)
    if energies is not None:
        try:
            counts = model.likelihood.events(energies)
        except InputError as err:
            _fail(spec, ["data", "events"], f"{d['events']}: {err}")
    elif "packaged" in d:
        if d["packaged"] != kind or packaged is None:
            _fail(spec, ["data", "packaged"], f"no packaged data set {d['packaged']!r} for model kind {kind!r}")
        counts = packaged
    elif Path(d["file"]).suffix == ".root" or "histogram" in d:
        edges = np.asarray(model.obs_edges, dtype=float)
        counts = _histogram(spec, ["data"], d, edges, "data", integer=True)
    else:
        try:
            counts = read_counts(_file(spec, ["data", "file"], d["file"]), model.n_obs)
        except InputError as err:  # names the data file; add where the spec names it
            _fail(spec, ["data", "file"], str(err))
    p = spec.get("parameters", {})
    if p.get("ssm_constrained"):
        if kind != "borexino_phase3":
            _fail(spec, ["parameters", "ssm_constrained"], "only for model kind 'borexino_phase3'")
        from .borexino import sm_rates, ssm_constrained

        model = ssm_constrained(model, sm_rates())
    names = set(model.parameters.names)
    for name in p.get("release", []):
        if name not in names:
            close = difflib.get_close_matches(name, list(names), n=1)
            _fail(spec, ["parameters", "release"], f"{name!r} is not a parameter of this model "
                  + (f"(did you mean {close[0]!r}?)" if close else f"(parameters: {', '.join(model.parameters.names)})"))
    for name in p.get("fix", {}):
        if name not in names:
            _fail(spec, ["parameters", "fix", name], f"{name!r} is not a parameter of this model")
    ps = model.parameters
    if p.get("release"):
        ps = ps.release(*p["release"])
    if p.get("fix"):
        ps = ps.fix(**{k: float(v) for k, v in p["fix"].items()})
    model = model.with_parameters(ps)
    if kind in ("xenon", "scintillator"):
        model = _fast(spec, model)
    return model, counts


def _fast(spec: dict, model):
    """The fast path of a physics model (:func:`~nuejax.model.fast.fast_model`: the signals as a
    polynomial in the couplings, folded once) wherever it exists: ``fast`` unset takes it when it
    can, ``true`` insists (an error says why not), ``false`` keeps the general evaluation. The
    fast path bakes in the oscillation parameters and mediator masses at their values after
    ``[parameters]``, so they must be fixed; NSI in propagation have none."""
    from ..model.fast import fast_model
    from ..model.physics_params import NONLINEAR_PHYSICS, OSC_PARAMS

    want = spec["model"].get("fast")
    if want is False:
        return model
    free = [n for n in OSC_PARAMS + NONLINEAR_PHYSICS if n in model.parameters and not model.parameters[n].fixed]
    why = None
    if spec["model"].get("physics", {}).get("propagation_nsi"):
        why = "NSI in propagation make the neutrino state depend on the couplings"
    elif free:
        why = f"{', '.join(free)} released (the fast path bakes {'it' if len(free) == 1 else 'them'} in)"
    if why is None:
        return fast_model(model)
    if want:
        _fail(spec, ["model", "fast"], f"no fast path: {why}; set fast = false or leave it out")
    return model


#: The keys each question kind takes besides name, kind and starts.
_QUESTION_KEYS = {"fit": {"profile_errors"}, "profile": {"poi", "grid", "values", "cl", "max_iter", "refine"},
                  "upper_limit": {"poi", "grid", "values", "cl", "max_iter", "refine"},
                  "feldman_cousins": {"poi", "grid", "values", "points", "cl", "max_iter", "toys", "seed", "poi_y",
                                      "grid_y", "values_y"},
                  "impacts": {"poi", "top"},
                  "goodness_of_fit": {"toys", "seed"},
                  "cls": {"poi", "grid", "values", "cl", "max_iter", "toys", "seed"},
                  "region_2d": {"poi", "grid", "values", "poi_y", "grid_y", "values_y", "cl", "max_iter"}}
#: Kinds that ask about no parameter, and kinds whose grid may be left out.
_NO_POI = ("fit", "goodness_of_fit")
_OPTIONAL_GRID = ("feldman_cousins", "impacts")


def _check_grid(spec, i, q, name, y=""):
    grid, values = "grid" + y, "values" + y
    if grid in q and values in q:
        _fail(spec, ["questions", i], f"question {name!r} needs one of '{grid}' or '{values}', not both")
    if q["kind"] not in _OPTIONAL_GRID and grid not in q and values not in q:
        _fail(spec, ["questions", i], f"question {name!r} ({q['kind']}) needs one of '{grid}' or '{values}'")
    if values in q and not np.all(np.diff(q[values]) > 0):
        _fail(spec, ["questions", i, values], "must increase")
    if grid in q and not q[grid]["stop"] > q[grid]["start"]:
        _fail(spec, ["questions", i, grid], "needs stop > start")


def _check_question(spec, i, q, model):
    kind = q["kind"]
    extra = sorted(set(q) - {"name", "kind", "starts"} - _QUESTION_KEYS[kind])
    if extra:
        _fail(spec, ["questions", i, extra[0]], f"a question of kind {kind!r} takes no '{extra[0]}'")
    if kind not in _NO_POI:
        if "poi" not in q:
            _fail(spec, ["questions", i], f"question {q['name']!r} ({kind}) needs 'poi'")
        _check_grid(spec, i, q, q["name"])
        if "points" in q and ("grid" in q or "values" in q):
            _fail(spec, ["questions", i, "points"], "is the size of the automatic grid: give it without 'grid' or 'values'")
    if kind == "region_2d" or "poi_y" in q:
        if "poi_y" not in q:
            _fail(spec, ["questions", i], f"question {q['name']!r} (region_2d) needs 'poi_y', the second parameter")
        if q["poi_y"] == q.get("poi"):
            _fail(spec, ["questions", i, "poi_y"], "must differ from 'poi'")
        if kind == "feldman_cousins" and (_grid(q) is None or _grid(q, "_y") is None):
            _fail(spec, ["questions", i], f"question {q['name']!r}: a 2-D Feldman-Cousins region needs both grids "
                                          "('grid' or 'values', and 'grid_y' or 'values_y'): it has no automatic grid")
        _check_grid(spec, i, q, q["name"], "_y")
    elif any(k in q for k in ("grid_y", "values_y")):
        _fail(spec, ["questions", i], f"question {q['name']!r}: 'grid_y'/'values_y' need 'poi_y'")
    ps = model.parameters
    fixed_here = set(spec.get("parameters", {}).get("fix", {}))
    for key in ("poi", "poi_y"):
        if key not in q or q[key] in ps.free_names:
            continue
        if q[key] not in ps.names:
            close = difflib.get_close_matches(q[key], ps.names, n=1)
            _fail(spec, ["questions", i, key], f"{q[key]!r} is not a parameter of this model"
                  + (f" (did you mean {close[0]!r}?)" if close else f" (free: {', '.join(ps.free_names)})"))
        if q[key] in fixed_here:
            _fail(spec, ["questions", i, key], f"{q[key]!r} is fixed under [parameters] fix: a question needs it free")
        _fail(spec, ["questions", i, key], f"{q[key]!r} is fixed by default: release it under [parameters] "
                                           f"(release = [{q[key]!r}]) to ask about it")
    for key, y in (("poi", ""), ("poi_y", "_y")):
        values = _grid(q, y)
        if key not in q or values is None:
            continue
        p = ps[q[key]]
        out = np.nonzero((values < p.lower) | (values > p.upper))[0]
        if out.size:
            _fail(spec, ["questions", i, ("values" if "values" + y in q else "grid") + y],
                  f"{q[key]} = {values[out[0]]:g} lies outside its bounds [{p.lower:g}, {p.upper:g}]")
        if kind == "cls" and key == "poi":
            if p.lower != 0.0:
                _fail(spec, ["questions", i, "poi"], f"a CLs limit needs a parameter bounded below at 0 (the "
                                                     f"background-only point); {q[key]} has lower bound {p.lower:g}")
            if values[0] <= 0:
                _fail(spec, ["questions", i, "values" if "values" in q else "grid"],
                      f"CLs tests values above the background-only point {q[key]} = 0: start the grid above 0")


def _grid(q, y="") -> np.ndarray | None:
    """The tested values of a question (``y = "_y"``: of its second parameter); None for none."""
    if "values" + y in q:
        return np.asarray(q["values" + y], dtype=float)
    if "grid" + y in q:
        g = q["grid" + y]
        return np.linspace(float(g["start"]), float(g["stop"]), int(g["num"]))
    return None


def automatic_grid(model, counts, poi: str, best, num: int, *, starts=None) -> np.ndarray:
    """``num`` points of ``poi`` over the range where its profile (every other free parameter
    profiled) stays below Δχ² = 9, widened by 20 % on each side and kept inside the parameter's
    bounds. The profile is first scanned on 61 points over best fit ± 6 Hessian errors (the bounds
    where the error is missing, e.g. a best fit on a bound). Raises
    :class:`~nuejax.errors.ParameterError` where neither gives a finite range."""
    from ..errors import ParameterError
    from ..inference import profile_scan
    from ..inference.starts import DEFAULT_STARTS
    from .limits import delta_chi2_range

    p = model.parameters[poi]
    lo, hi = float(p.lower), float(p.upper)
    c, err = float(best.params[poi]), best.errors.get(poi)
    if err is not None and np.isfinite(err) and err > 0:
        a, b = max(lo, c - 6.0 * err), min(hi, c + 6.0 * err)
    else:
        a, b = lo, hi
    if not (np.isfinite(a) and np.isfinite(b) and b > a):
        raise ParameterError(f"no automatic grid for {poi}: its Hessian error at the best fit {c:g} is not usable "
                             f"and its bounds [{lo}, {hi}] are not finite; give 'grid' or 'values'")
    scan = profile_scan(model, counts, poi, np.linspace(a, b, 61), global_fit=best,
                        starts=DEFAULT_STARTS if starts is None else starts)
    v0, v1 = delta_chi2_range(scan, 9.0)  # the range nuejax limits' demo grids are built from
    pad = 0.2 * (v1 - v0) if v1 > v0 else (b - a) / 60.0
    return np.linspace(max(lo, v0 - pad), min(hi, v1 + pad), num)


def _region_on_grid(inside, gx, gy, px=None, py=None) -> tuple:
    """``(extent, open_at)`` of the grid points ``inside`` (nx, ny): their range in x and y (None
    where none), and the grid edges they reach (``x_low`` ...), where the region may continue
    beyond the grid; with the parameters ``px``, ``py``, an edge on a parameter's bound is not
    counted (nothing lies beyond it)."""
    lo_x, hi_x = (px.lower, px.upper) if px is not None else (-np.inf, np.inf)
    lo_y, hi_y = (py.lower, py.upper) if py is not None else (-np.inf, np.inf)
    edges = {"x_low": bool(inside[0].any()) and gx[0] > lo_x, "x_high": bool(inside[-1].any()) and gx[-1] < hi_x,
             "y_low": bool(inside[:, 0].any()) and gy[0] > lo_y, "y_high": bool(inside[:, -1].any()) and gy[-1] < hi_y}
    ix, iy = np.nonzero(inside)
    extent = None if ix.size == 0 else [[float(gx[ix.min()]), float(gx[ix.max()])], [float(gy[iy.min()]), float(gy[iy.max()])]]
    return extent, [k for k, v in edges.items() if v]


def _undecided(fc) -> np.ndarray:
    """Grid points whose observed statistic lies within the critical value's Monte Carlo error."""
    return np.abs(np.asarray(fc.t_obs) - np.asarray(fc.t_crit)) < np.asarray(fc.t_crit_err)


def _feldman_cousins(model, counts, q, grid, cl, best, starts, out, resume) -> dict:
    from ..inference import feldman_cousins

    runs = None if out is None else Path(out) / "runs" / q["name"]
    kw = {"max_iter": int(q["max_iter"])} if "max_iter" in q else {}
    if "poi_y" in q:  # a 2-D region: the accepted grid points (no interval)
        gy = _grid(q, "_y")
        fc = feldman_cousins(model, counts, (q["poi"], q["poi_y"]), (grid, gy), int(q.get("toys", 400)),
                             key=int(q.get("seed", 0)), cl=cl, starts=starts, out=runs, resume=resume, **kw)
        acc = np.asarray(fc.accepted_grid, dtype=bool)
        extent, open_at = _region_on_grid(acc, grid, gy, model.parameters[q["poi"]], model.parameters[q["poi_y"]])
        close = _undecided(fc)
        return {"kind": "feldman_cousins_2d", "poi": [q["poi"], q["poi_y"]], "cl": cl, "values_x": grid.tolist(),
                "values_y": gy.tolist(), "accepted": acc.tolist(), "n_accepted": int(acc.sum()),
                "extent": extent, "open_at": open_at, "convention": fc.convention,
                "n_toys": int(fc.n_toys), "t_obs": np.asarray(fc.t_obs).tolist(), "t_crit": np.asarray(fc.t_crit).tolist(),
                "t_crit_err": np.asarray(fc.t_crit_err).tolist(),
                "best": [float(best.params[q["poi"]]), float(best.params[q["poi_y"]])],
                "warnings": ([f"at {int(close.sum())} grid point(s) the observed statistic lies within the critical "
                              "value's Monte Carlo error: more toys would settle them"] if close.any() else [])
                + ([f"the region reaches the grid's edge at {', '.join(open_at)}: it may "
                    "continue beyond the grid"] if open_at else [])}
    fc = feldman_cousins(model, counts, q["poi"], grid, int(q.get("toys", 400)), key=int(q.get("seed", 0)), cl=cl,
                         starts=starts, out=runs, resume=resume, **kw)
    return {"kind": "feldman_cousins", "poi": q["poi"], "cl": cl, "values": grid.tolist(),
            "interval": list(fc.interval), "regions": [list(r) for r in fc.regions], "convention": fc.convention,
            "n_toys": int(fc.n_toys), "n_valid": np.asarray(fc.n_valid).tolist(),
            "accepted": np.asarray(fc.accepted, dtype=bool).tolist(), "t_obs": np.asarray(fc.t_obs).tolist(),
            "t_crit": np.asarray(fc.t_crit).tolist(), "t_crit_err": np.asarray(fc.t_crit_err).tolist(),
            "best": float(best.params[q["poi"]]), "warnings": _fc_warnings(fc, grid, float(best.params[q["poi"]]), model.parameters[q["poi"]])}


def _fc_warnings(fc, grid, best: float, par) -> list:
    """What makes a Feldman–Cousins answer on a grid untrustworthy, said: an interval of fewer
    than 3 accepted points, a best fit outside it (between grid points), an accepted point at the
    grid's end (the region may continue), a decision within the critical value's Monte Carlo error."""
    out = []
    acc = np.asarray(fc.accepted, dtype=bool)
    lo, hi = fc.interval
    inside = int(np.sum(acc & (grid >= (lo if lo is not None else -np.inf)) & (grid <= (hi if hi is not None else np.inf))))
    if lo is not None and hi is not None and not lo <= best <= hi:
        out.append(f"the best fit {best:.4g} lies outside the interval [{lo:.4g}, {hi:.4g}]: the grid (step "
                   f"{grid[1] - grid[0]:.3g}) is too coarse here; refine it")
    if inside < 3:
        out.append(f"the interval rests on {inside} grid point(s): refine the grid")
    if acc[0] and grid[0] > par.lower:
        out.append(f"the first grid point {grid[0]:.4g} is accepted: the region may continue below the grid")
    if acc[-1] and grid[-1] < par.upper:
        out.append(f"the last grid point {grid[-1]:.4g} is accepted: the region may continue above the grid")
    close = _undecided(fc)
    if close.any():
        out.append(f"at {int(close.sum())} grid point(s) the observed statistic lies within the critical value's "
                   f"Monte Carlo error (e.g. {grid[int(np.argmax(close))]:.4g}): more toys would settle it")
    return out


def _goodness_of_fit(model, counts, q, best) -> dict:
    import jax

    from ..inference import goodness_of_fit

    g = goodness_of_fit(model, counts, best, n_toys=int(q.get("toys", 0)), key=jax.random.PRNGKey(int(q.get("seed", 0))))
    return {"kind": "goodness_of_fit", **g.to_dict(), "toy_deviances": None,
            "convention": "saturated-model Poisson deviance (Baker & Cousins 1984), constraint terms left out; "
                          "p_chi2 asymptotic" + ("; p_toys from toys drawn at the best fit" if g.n_toys else
                                                 "; no toys asked (toys = N adds p_toys)")}


def _cls(model, counts, q, grid, cl, starts) -> dict:
    from ..inference import cls_upper_limit

    kw = {"max_iter": int(q["max_iter"])} if "max_iter" in q else {}
    r = cls_upper_limit(model, counts, q["poi"], grid, cl=cl, n_toys=int(q.get("toys", 0)), key=int(q.get("seed", 0)),
                        starts=starts, **kw)
    at_start = sorted(k for d in (r.expected, r.expected_sb) for k, v in d.items() if v is not None and v <= grid[0])
    return {"kind": "cls", "poi": q["poi"], "cl": cl, "method": r.method, "limit": r.limit, "expected": r.expected,
            "limit_sb": r.limit_sb, "expected_sb": r.expected_sb, "values": grid.tolist(),
            "cls": np.asarray(r.cls).tolist(), "n_toys": int(r.n_toys), "convention": r.convention,
            "warnings": [f"expected limit(s) at {', '.join(sorted(set(at_start)))} sigma lie at the grid's first value "
                         f"{grid[0]:.4g}: they are at or below it; start the grid lower"] if at_start else []}


def _region_2d(model, counts, q, grid, cl, best, starts) -> dict:
    from ..inference import profile_scan_2d
    from ..inference.intervals import two_sided_threshold

    gy = _grid(q, "_y")
    kw = {"n_iter": int(q["max_iter"])} if "max_iter" in q else {}
    s = profile_scan_2d(model, counts, (q["poi"], q["poi_y"]), grid, gy, global_fit=best, starts=starts, **kw)
    level = two_sided_threshold(cl, 2)
    conv = np.asarray(s.converged, dtype=bool)
    d = np.where(conv, np.asarray(s.delta_chi2), np.nan)
    inside = conv & (d < level)
    extent, open_at = _region_on_grid(inside, grid, gy, model.parameters[q["poi"]], model.parameters[q["poi_y"]])
    return {"kind": "region_2d", "poi": [q["poi"], q["poi_y"]], "cl": cl, "threshold": level, "ndof": 2,
            "values_x": grid.tolist(), "values_y": gy.tolist(),
            "delta_chi2": [[None if not np.isfinite(v) else float(v) for v in row] for row in d],
            "inside": inside.tolist(), "n_inside": int(inside.sum()), "converged": int(conv.sum()),
            "best": [float(best.params[q["poi"]]), float(best.params[q["poi_y"]])],
            "extent": extent, "open_at": open_at,
            "convention": f"two-parameter profile Δχ² < {level:.3f} (χ²₂ at {cl:.4g}, Wilks), the others profiled"}


def _impacts(model, counts, q, best, out) -> dict:
    from ..inference.impacts import impacts

    r = impacts(model, counts, q["poi"], fit=best)
    a = {**r.to_dict(), "kind": "impacts", "figure": None}
    if out is not None:
        try:
            from ..plotting import plot_impacts, require_matplotlib

            require_matplotlib()
        except ImportError:  # matplotlib is optional (nuejax[plot]): the numbers do not need it
            return a
        Path(out).mkdir(parents=True, exist_ok=True)
        path = Path(out) / f"{q['name']}.png"
        plot_impacts(r, top=int(q.get("top", 20)), path=path)
        a["figure"] = str(path)
    return a


def _answer(model, counts, q, best, out, resume, say) -> dict:
    """The answer to one question (``best``: the latest fit)."""
    from ..inference import profile_scan
    from ..inference.starts import DEFAULT_STARTS

    starts = q.get("starts", DEFAULT_STARTS)
    if q["kind"] == "fit":
        prof = {}
        if q.get("profile_errors", True) and best.valid:
            from ..inference import profile_errors

            say("  profile-likelihood errors (Δ(-2 ln L) = 1) of every parameter off its bounds")
            pe = profile_errors(model, counts, best)
            prof = {n: list(v) for n, v in pe.minos.items()}
        return {"kind": "fit", "valid": bool(best.valid), "nll": float(best.fval), "profile_errors": prof,
                "values": {n: float(best.params[n]) for n in best.names},
                "errors": {n: best.errors.get(n) for n in best.names},
                "at_bound": best.at_bound, "n_starts": int(best.n_starts), "n_at_minimum": int(best.n_at_minimum),
                "minima": [{"fval": float(mn["fval"]), "n_starts": int(mn["n_starts"])} for mn in best.minima]}
    if q["kind"] == "impacts":
        return _impacts(model, counts, q, best, out)
    if q["kind"] == "goodness_of_fit":
        return _goodness_of_fit(model, counts, q, best)
    cl = float(q.get("cl", 0.9))
    grid = _grid(q)
    if q["kind"] == "cls":
        return _cls(model, counts, q, grid, cl, starts)
    if q["kind"] == "region_2d":
        return _region_2d(model, counts, q, grid, cl, best, starts)
    if grid is None:
        grid = automatic_grid(model, counts, q["poi"], best, int(q.get("points", 11)), starts=starts)
        say(f"  automatic grid of {q['poi']}: {len(grid)} points over [{grid[0]:.4g}, {grid[-1]:.4g}]")
    if q["kind"] == "feldman_cousins":
        return _feldman_cousins(model, counts, q, grid, cl, best, starts, out, resume)
    kw = {"n_iter": int(q["max_iter"])} if "max_iter" in q else {}
    scan = profile_scan(model, counts, q["poi"], grid, global_fit=best, starts=starts, **kw)
    if "refine" in q:  # more points where the profile crosses the thresholds the answer reads
        from ..inference import refine_scan
        from ..inference.intervals import one_sided_threshold, two_sided_threshold

        levels = (two_sided_threshold(cl, 1), 1.0) if q["kind"] == "profile" else (one_sided_threshold(cl),)
        scan = refine_scan(model, counts, scan, levels, points=int(q["refine"]), global_fit=best, starts=starts, **kw)
        grid = np.asarray(scan.values)
    # the points whose profile fit did not pass the KKT test: their Delta chi2 is an upper bound only
    failed = [float(v) for v, c in zip(grid, np.asarray(scan.converged, dtype=bool)) if not c]
    failed_warning = ([f"the profile fit did not converge at {q['poi']} = {', '.join(f'{v:g}' for v in failed)}: "
                       "left out of the regions (Delta chi2 there is where the fit stopped); raise max_iter or starts"]
                      if failed else [])
    with warnings.catch_warnings():  # the answer names the points itself (not_converged, warnings)
        warnings.filterwarnings("ignore", message=r"scan of .* profile fits did not converge", category=RuntimeWarning)
        iv, ul = scan.interval(cl), scan.upper_limit(cl)
    if q["kind"] == "profile":
        return {"kind": "profile", "poi": q["poi"], "cl": cl, "values": grid.tolist(),
                "delta_chi2": np.asarray(scan.delta_chi2).tolist(), "regions": [list(r) for r in iv.regions],
                "interval": [iv.lower, iv.upper], "convention": iv.convention,
                "converged": int(np.sum(scan.converged)), "not_converged": failed, "warnings": failed_warning}
    held = scan.at_bound_near(ul, model.parameters)
    return {"kind": "upper_limit", "poi": q["poi"], "cl": cl, "upper": None if ul is None else float(ul),
            "convention": scan.upper_limit_convention, "best": float(best.params[q["poi"]]),
            "at_bound_at_limit": held, "not_converged": failed,
            "warnings": [f"at the limit, {n} sits on its {side} bound {getattr(model.parameters[n], side):g}: the limit "
                         "depends on that bound" for n, side in held.items()] + failed_warning}


#: the questions whose answers a later run with the same inputs reuses (nuejax.analyses.reuse):
#: not feldman_cousins (its toy runs are stored in ``out`` and resumed there) nor impacts (its
#: figure is written into ``out``)
REUSED_KINDS = ("fit", "profile", "upper_limit", "cls", "region_2d", "goodness_of_fit")


def run_spec(path, out=None, *, progress=None, questions=None, resume: bool = False,
             asked_by: str | None = None, reuse: bool = True) -> dict:
    """Answer every question of the specification at ``path`` in order; returns (and with
    ``out``, writes into ``out/results.json``) ``{"name", "spec", "questions": {name: answer},
    "seconds"}``. Answers: ``fit``: valid, −2 ln L, values, Hessian errors, profile-likelihood
    errors (``profile_errors``: signed distances to Δ(−2 ln L) = 1 on each side, None without a
    crossing inside the bounds; :func:`~nuejax.inference.profile_errors`; off with
    ``profile_errors = false``), parameters at a bound, how many starts reached the minimum; ``profile``: the grid, Δχ², the regions at ``cl``, the one
    containing the best fit; ``upper_limit``: the limit at ``cl`` (None when the profile stays
    below the threshold on the grid), its convention and the nuisances held at a bound there; ``feldman_cousins``: the interval (the
    region containing the best fit), every region, the convention, per grid point the observed
    statistic, the critical value and its Monte Carlo error, acceptance and valid toys (the run's
    toys in ``out/runs/NAME``; ``resume=True`` continues a stored run); ``impacts``: pulls,
    constraints and pre- and post-fit impacts on ``poi``, ranked
    (:class:`~nuejax.inference.impacts.ImpactsResult`; with ``out``, the figure ``out/NAME.png``);
    ``goodness_of_fit``: the saturated deviance, its degrees of freedom and p-values (toys with
    ``toys``); ``cls``: the CLs upper limit (asymptotic, or from ``toys``) with its expected band;
    ``region_2d``: the Δχ² of ``poi`` × ``poi_y`` on the grid, the points inside the region at
    ``cl`` (two degrees of freedom), its extent on the grid and the grid edges it reaches (``open_at``:
    the region may continue beyond them). ``questions``: a list of question
    tables replacing the file's (``asked_by``: where they come from, for the messages, e.g. the
    command line). With ``out``, ``results.json`` is written after every answer, so that the
    answers so far survive a later question's error (which names the question). ``reuse``: the
    fits and the answers of :data:`REUSED_KINDS` are taken from an earlier run with the same model,
    data and question where the cache holds them (:mod:`~nuejax.analyses.reuse`; the question's
    name aside, so a renamed question is reused; ``reused`` lists the answers taken so); False:
    every one computed again."""
    from ..inference import newton_fit
    from ..inference.starts import DEFAULT_STARTS
    from .reuse import computed_always, reused, stage_arguments

    say = progress or (lambda msg: None)
    t0 = time.perf_counter()
    spec = load_spec(path)
    if questions is not None:  # asked on the command line (nuejax limits SPEC --poi ...), in place of the file's
        spec["questions"] = list(questions)
        spec["_asked_by"] = asked_by
    names = [q["name"] for q in spec["questions"]]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        _fail(spec, ["questions", names.index(dup[0]), "name"], f"two questions are named {dup[0]!r}")
    say(f"model: {spec['model']['kind']}")
    model, counts = build_spec(spec)
    if spec["model"]["kind"] in ("xenon", "scintillator"):  # which evaluation of the signals answers
        from ..model.signals import SolarSignals

        path = "general evaluation" if model.stage(SolarSignals) is not None else "fast path"
        say(f"signals: {path}" + (f" (baked in: {', '.join(p.name for p in model.baked)})" if model.baked else ""))
    for i, q in enumerate(spec["questions"]):
        _check_question(spec, i, q, model)
    result = {"name": spec.get("name", Path(spec["_file"]).stem), "spec": spec["_file"], "questions": {},
              "baked": {p.name: p.value for p in model.baked}, "reused": [], "seconds": 0.0}

    def save():
        result["seconds"] = time.perf_counter() - t0
        if out is not None:
            Path(out).mkdir(parents=True, exist_ok=True)
            (Path(out) / "results.json").write_text(json.dumps(result, indent=2))

    # each fit and answer is a stage (nuejax.analyses.reuse): its key holds the model, the data and
    # the question (an answer also the starts of the fit it reads)
    inputs = stage_arguments(model=model, counts=counts)
    best = fit_starts = None
    for i, q in enumerate(spec["questions"]):
        say(f"{q['name']}: {q['kind']}")
        try:
            if q["kind"] == "fit" or best is None:
                fit_starts = q.get("starts", DEFAULT_STARTS)
                # (no line of its own where reused: the answer that reads it says so)
                best = reused("run", "fit", {**inputs, "starts": fit_starts}, say,
                              lambda say: newton_fit(model, counts, one_sided=False, starts=fit_starts), reuse=reuse,
                              note=False)

            def answer(say, q=q, best=best):
                return _answer(model, counts, q, best, out, resume, say)

            if q["kind"] in REUSED_KINDS:
                question = stage_arguments(question={k: v for k, v in q.items() if k != "name"}, fit_starts=fit_starts)
                taken = []
                result["questions"][q["name"]] = reused("run", q["kind"], {**inputs, **question}, say, answer,
                                                        reuse=reuse, record=taken)
                if taken:
                    result["reused"].append(q["name"])
            else:
                computed_always("run", q["kind"])
                result["questions"][q["name"]] = answer(say)
        except InputError as err:  # the answers so far are kept; the message names the question
            save()
            kept = f" (the answers before it are in {Path(out) / 'results.json'})" if out is not None and i else ""
            _fail(spec, ["questions", i], f"question {q['name']!r} ({q['kind']}): {err}{kept}")
        save()
    return result
