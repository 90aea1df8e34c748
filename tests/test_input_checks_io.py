"""Bad files, histograms, templates and model-build arguments raise nuejax's error types with a
message naming the file, key, histogram, bin or label at fault; nothing is silently clipped."""

import numpy as np
import pytest

from nuejax.detector import ResponseParams, quenching_table, unit_bin_edges
from nuejax.detector.backgrounds import background_template, beta_template, check_template
from nuejax.detector.montecarlo import ResponseHistogram, expected_histogram, toy_mc_histogram
from nuejax.errors import FileFormatError, InputError
from nuejax.io import (RootInputError, read_borexino_shape, read_response_histogram, read_template, read_th1,
                       read_th2, write_hists)
from nuejax.model.borexino_like import borexino_like_model, signal_component
from nuejax.physics import build_source, uniform_recoil_edges
from nuejax.reweighting import response_matrix

TABLE = quenching_table()
P0 = ResponseParams()
OBS = np.asarray(unit_bin_edges(60, 70))  # 11 observable bins


# ---------------------------------------------------------------- damaged ROOT files

@pytest.fixture()
def good_root(tmp_path):
    path = tmp_path / "resp.root"
    write_hists(path, {"N": (np.arange(1.0, 2001.0).reshape(40, 50), np.linspace(0, 1, 41), np.arange(51.0)),
                       "t": (np.arange(1.0, 51.0), np.arange(51.0))})
    return path


def _damaged(tmp_path, good, name, transform):
    path = tmp_path / name
    path.write_bytes(transform(good.read_bytes()))
    return path


def _object_record(path, key):
    """(start, end) byte offsets of the compressed object of ``key`` (after its TKey header)."""
    import uproot
    with uproot.open(path) as f:
        k = f.key(key)
        return k.fSeekKey + k.fKeylen, k.fSeekKey + k.fNbytes


def test_root_input_error_is_a_file_format_error():
    assert issubclass(RootInputError, FileFormatError) and issubclass(RootInputError, InputError)
    assert issubclass(RootInputError, ValueError)


@pytest.mark.parametrize("name, transform, message", [
    ("half.root", lambda b: b[: len(b) // 2], r"half\.root: file is truncated: its header says \d+ bytes, the file has \d+"),
    ("tail.root", lambda b: b[:-40], r"tail\.root: file is truncated"),
    ("head.root", lambda b: b[:100], r"head\.root: cannot open as a ROOT file \(OSError"),
    ("zero.root", lambda b: b"", r"zero\.root: cannot open as a ROOT file"),
    ("garbage.root", lambda b: bytes(range(256)) * 20, r"garbage\.root: cannot open as a ROOT file \(ValueError: not a ROOT file"),
    ("notes.root", lambda b: b"energy,counts\n1,2\n" * 50, r"notes\.root: cannot open as a ROOT file .*not a ROOT file"),
])
def test_unreadable_root_file_names_file_and_problem(tmp_path, good_root, name, transform, message):
    path = _damaged(tmp_path, good_root, name, transform)
    with pytest.raises(RootInputError, match=message) as info:
        read_th2(path, "N")
    if "truncated" not in message:
        assert info.value.__cause__ is not None  # the uproot / OS error is chained


@pytest.mark.parametrize("fill", [b"\x00", b"\xff"])
def test_corrupted_compressed_record_names_file_and_key(tmp_path, good_root, fill):
    start, end = _object_record(good_root, "N")
    mid = (start + end) // 2

    def corrupt(b):
        return b[:mid] + fill * 32 + b[mid + 32:]

    path = _damaged(tmp_path, good_root, "corrupt.root", corrupt)
    with pytest.raises(RootInputError, match=r"corrupt\.root:N: cannot read the object, the file is damaged \(zlib") as info:
        read_th2(path, "N")
    assert info.value.__cause__ is not None
    # the readers built on read_th1 / read_th2 give the same error, and the intact key still reads
    with pytest.raises(RootInputError, match=r"corrupt\.root:N: cannot read the object"):
        read_response_histogram(path, "N", n_generated=1e9)
    values, _ = read_th1(path, "t")
    assert values.sum() == pytest.approx(1275.0)


def test_corrupted_template_record(tmp_path, good_root):
    start, end = _object_record(good_root, "t")
    path = _damaged(tmp_path, good_root, "tcorrupt.root", lambda b: b[:start + 40] + b"\x00" * 16 + b[start + 56:])
    with pytest.raises(RootInputError, match=r"tcorrupt\.root:t: cannot read the object, the file is damaged"):
        read_template(path, "t", np.arange(51.0))


# ---------------------------------------------------------------- ROOT templates and responses

@pytest.fixture()
def template_root(tmp_path):
    path = tmp_path / "bkg.root"
    obs = np.asarray(unit_bin_edges(60, 69))
    good = np.arange(1.0, 11.0)
    nan, neg = good.copy(), good.copy()
    nan[4] = np.nan
    neg[7] = -2.0
    write_hists(path, {"good": (good, obs), "nan": (nan, obs), "neg": (neg, obs), "empty": (np.zeros(10), obs)})
    return path, obs


@pytest.mark.parametrize("key, message", [
    ("nan", r"bkg\.root:nan: NaN or infinite content in bin \(4,\)"),
    ("neg", r"bkg\.root:neg: negative content -2 in bin \(7,\)"),
    ("empty", r"bkg\.root:empty: histogram is empty"),
])
def test_bad_root_template_names_key_and_bin(template_root, key, message):
    path, obs = template_root
    with pytest.raises(RootInputError, match=message):
        read_template(path, key, obs)


def test_root_template_on_wrong_binning_names_both(template_root):
    path, _ = template_root
    with pytest.raises(RootInputError, match=r"bkg\.root:good: x binning does not match: file has 10 bins "
                                             r"\[59\.5, 69\.5\], expected 9 bins \[59\.5, 68\.5\]"):
        read_template(path, "good", unit_bin_edges(60, 68))


def test_root_response_with_infinite_n_generated(good_root):
    with pytest.raises(RootInputError, match=r"resp\.root:N: n_generated = inf is not finite"):
        read_response_histogram(good_root, "N", n_generated=np.inf)


# ---------------------------------------------------------------- Borexino text shapes

@pytest.mark.parametrize("text, message", [
    ("", r"s_pdfkeV__1\.txt: no data rows"),
    ("\n\n", r"s_pdfkeV__1\.txt: no data rows"),
    ("1,2,0.5,0.1\n2,3,0.5\n", r"s_pdfkeV__1\.txt: row 2: expected 4 comma-separated columns .* found 3"),
    ("1,2,0.5,0.1,7\n", r"s_pdfkeV__1\.txt: row 1: expected 4 .* found 5"),
    ("1,2,0.5,0.1\n2,3,abc,0.1\n", r"s_pdfkeV__1\.txt: row 2, column 3 \(density\): 'abc' is not a number"),
    ("1 2 0.5 0.1\n", r"s_pdfkeV__1\.txt: row 1: expected 4 comma-separated columns"),
    ("1,2,0.5,0.1\n2,3,nan,0.1\n", r"s_pdfkeV__1\.txt: non-finite value in row 2"),
    ("1,2,0.5,0.1\n3,3,0.5,0.1\n", r"s_pdfkeV__1\.txt: bins are not contiguous and increasing: row 2 has hi = 3 <= lo = 3"),
    ("1,2,0.5,0.1\n2.5,3,0.5,0.1\n", r"s_pdfkeV__1\.txt: bins are not contiguous .* row 2 starts at 2\.5 keV"),
    ("1,2,0.5,0.1\n2,3,-0.5,0.1\n", r"s_pdfkeV__1\.txt: negative density -0\.5 in row 2"),
    ("1,2,0,0.1\n2,3,1e-313,0.1\n", r"s_pdfkeV__1\.txt: the shape is empty"),
])
def test_bad_borexino_shape_names_file_and_row(tmp_path, text, message):
    path = tmp_path / "s_pdfkeV__1.txt"
    path.write_text(text)
    with pytest.raises(FileFormatError, match=message):
        read_borexino_shape(path)


def test_borexino_shape_rows_count_file_lines_and_binary_file(tmp_path):
    path = tmp_path / "c_pdfkeV__1.txt"
    path.write_text("# lo,hi,density,error\n1,2,0.5,0.1\n\n2,3,x,0.1\n")
    with pytest.raises(FileFormatError, match=r"row 4, column 3"):
        read_borexino_shape(path)
    path.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
    with pytest.raises(FileFormatError, match=r"c_pdfkeV__1\.txt: not a text file"):
        read_borexino_shape(path)


# ---------------------------------------------------------------- response histograms

def _hist(**kw):
    args = dict(counts=np.ones((4, 3)), t_edges=np.linspace(0.0, 1.0, 5), obs_edges=np.arange(4.0), total=100.0,
                name="toy")
    args.update(kw)
    return ResponseHistogram(**args)


def _with(i, j, value):
    c = np.ones((4, 3))
    c[i, j] = value
    return c


@pytest.mark.parametrize("kw, message", [
    (dict(counts=np.ones((3, 3))), r"'toy': counts have shape \(3, 3\), but the edges give \(n_T, n_obs\) = \(4, 3\)"),
    (dict(counts=np.ones(12)), r"'toy': counts have shape \(12,\)"),
    (dict(t_edges=np.array([0.0, 0.5, 0.4, 0.8, 1.0])), r"'toy': recoil \(T\) bin edges are not strictly increasing: edge 2"),
    (dict(obs_edges=np.array([0.0, 1.0, np.nan, 3.0])), r"'toy': observable bin edges: edge 2 is nan"),
    (dict(t_edges=np.linspace(-0.1, 1.0, 5)), r"'toy': recoil axis starts at -0\.1 MeV < 0"),
    (dict(counts=_with(2, 1, -0.5)), r"'toy': negative entry -0\.5 in bin \(2, 1\)"),
    (dict(counts=_with(3, 0, np.nan)), r"'toy': entry in bin \(3, 0\) is nan"),
    (dict(counts=_with(1, 2, np.inf)), r"'toy': entry in bin \(1, 2\) is inf"),
    (dict(counts=np.zeros((4, 3))), r"'toy': is empty"),
    (dict(total=np.nan), r"'toy': total .* is nan; it must be finite and > 0"),
    (dict(total=0.0), r"'toy': total .* is 0"),
    (dict(total=10.0), r"'toy': the entries sum to 12, more than the total 10 .*efficiency 1\.2 > 1"),
    (dict(sumw2=np.ones((4, 2))), r"'toy': sumw2 has shape \(4, 2\), expected \(4, 3\)"),
    (dict(n_eff=-np.ones(4)), r"'toy', n_eff: negative entry -1 in bin 0"),
])
def test_bad_response_histogram_is_refused_at_construction(kw, message):
    with pytest.raises(InputError, match=r"response histogram " + message):
        _hist(**kw)


def test_response_histogram_arrays_are_frozen_copies():
    assert _hist().efficiency == pytest.approx(0.12)
    with pytest.raises(InputError, match=r"response histogram \(unnamed\): total"):
        _hist(name="", total=-1.0)
    c = np.ones((4, 3))
    h = _hist(counts=c)
    c[0, 0] = -1.0  # the caller's array is not the histogram's
    assert h.counts[0, 0] == 1.0
    with pytest.raises(ValueError):
        h.counts[0, 0] = -1.0


def test_response_matrix_checks_mask_and_scale():
    h = _hist()
    with pytest.raises(InputError, match=r"'toy': live-time mask is nan in observable bin 1"):
        response_matrix(h, mask=np.array([1.0, np.nan, 1.0]))
    with pytest.raises(InputError, match=r"'toy': scale s = 0"):
        response_matrix(h, scale=0.0)
    with pytest.raises(InputError, match=r"needs a ResponseHistogram, got tuple"):
        response_matrix((h.counts, h.t_edges, h.obs_edges))


@pytest.fixture(scope="module")
def be7():
    src = build_source("7Be_862")
    return src, float(src.t_end)


def _synthetic(t_edges, obs=OBS, name="7Be_862"):
    """A response histogram with entries in every recoil bin (the checks do not look at the physics)."""
    return ResponseHistogram(np.ones((len(t_edges) - 1, len(obs) - 1)), np.asarray(t_edges), np.asarray(obs),
                             1e6, name=name)


def test_user_histogram_must_cover_the_spectrum(be7):
    src, t_end = be7
    short = _synthetic(np.linspace(0.0, 0.6, 31))  # the 7Be_862 end point is 0.664 MeV
    with pytest.raises(InputError, match=r"response histogram '7Be_862' of component '7Be_862': recoil axis ends at "
                                         r"0\.6 MeV, below the component's end point 0\.664253 MeV"):
        signal_component("7Be_862", OBS, norm="n", hist=short)
    late = _synthetic(np.linspace(0.1, t_end, 31))
    with pytest.raises(InputError, match=r"of component '7Be_862': recoil axis starts at 0\.1 MeV > 0"):
        signal_component("7Be_862", OBS, norm="n", hist=late)
    # the axis may reach beyond the end point, as long as the bins past it are empty
    wide = np.linspace(0.0, 0.7, 36)
    counts = np.where(wide[:-1, None] < t_end, 1.0, 0.0) * np.ones((35, 11))
    comp = signal_component("7Be_862", OBS, norm="n", hist=ResponseHistogram(counts, wide, OBS, 1e6, name="w"))
    assert comp.kernel.shape == (35, 11)
    counts[-1, 0] = 1.0  # an entry past the end point cannot be reweighted
    with pytest.raises(InputError, match=r"7Be_862: recoil bin\(s\) \[34\] hold response entries"):
        signal_component("7Be_862", OBS, norm="n", hist=ResponseHistogram(counts, wide, OBS, 1e6, name="w"))


def test_user_histogram_observable_binning_must_match(be7):
    src, t_end = be7
    h = _synthetic(np.linspace(0.0, t_end, 21))
    with pytest.raises(InputError, match=r"'7Be_862' of component '7Be_862': observable binning 11 bins \[59\.5, 70\.5\] "
                                         r"does not match the model's 12 bins \[59\.5, 71\.5\]"):
        signal_component("7Be_862", unit_bin_edges(60, 71), norm="n", hist=h)
    with pytest.raises(InputError, match=r"7Be_862: hist must be a ResponseHistogram, got tuple"):
        signal_component("7Be_862", OBS, norm="n", hist=(h.counts, h.t_edges, h.obs_edges))


def test_signal_component_label_and_recoil_bins():
    with pytest.raises(InputError, match=r"unknown signal component '7Be_86'; did you mean '7Be_862'\? valid: pp, "):
        signal_component("7Be_86", OBS, norm="n")
    with pytest.raises(InputError, match=r"pep: n_T \(number of recoil bins\) must be an integer >= 1, got 0"):
        signal_component("pep", OBS, norm="n", n_T=0)
    with pytest.raises(InputError, match=r"signal component 'pep': observable bin edges are not strictly increasing"):
        signal_component("pep", OBS[::-1], norm="n")


def test_histogram_builders_check_their_inputs(be7):
    src, t_end = be7
    with pytest.raises(InputError, match=r"toy-MC response histogram '7Be_862': n_events must be >= 1, got 0"):
        toy_mc_histogram(src, uniform_recoil_edges(t_end, 10), OBS, 0, table=TABLE)
    with pytest.raises(InputError, match=r"toy-MC response histogram '7Be_862': recoil \(T\) bin edges: edge 3 is nan"):
        toy_mc_histogram(src, np.array([0.0, 0.1, 0.2, np.nan]), OBS, 10, table=TABLE)
    with pytest.raises(InputError, match=r"response histogram '7Be_862': observable bin edges are not strictly"):
        expected_histogram(src, uniform_recoil_edges(t_end, 10), np.array([1.0, 1.0, 2.0]), P0, TABLE)


# ---------------------------------------------------------------- background templates

def test_background_template_empty_in_window_names_template_and_binning():
    with pytest.raises(InputError, match=r"background template '85Kr': is empty on the observable binning "
                                         r"11 bins \[2999\.5, 3010\.5\]"):
        background_template("85Kr", unit_bin_edges(3000, 3010), P0, TABLE)
    with pytest.raises(InputError, match=r"background template '210Po': is empty"):
        background_template("210Po", unit_bin_edges(3000, 3010), P0, TABLE)


def test_background_template_bad_binning_and_unknown_name():
    with pytest.raises(InputError, match=r"background template '11C': observable bin edges are not strictly increasing: "
                                         r"edge 1 = 69\.5 <= edge 0 = 70\.5"):
        background_template("11C", OBS[::-1], P0, TABLE)
    with pytest.raises(InputError, match=r"background template 'ext_40K': observable bin edges must be a 1-D array"):
        background_template("ext_40K", np.array([90.0]), P0, TABLE)
    with pytest.raises(KeyError, match=r"unknown background '85kr'; did you mean '85Kr'\?"):
        background_template("85kr", OBS, P0, TABLE)


@pytest.mark.parametrize("shape_factor, message", [
    (lambda W, p, q: np.nan * W, r"background template 'odd': entry in bin 0 is nan"),
    (lambda W, p, q: W - 2.0, r"background template 'odd': negative entry -[0-9.e-]+ in bin \d+"),
])
def test_beta_template_with_bad_shape_names_template_and_bin(shape_factor, message):
    edges = unit_bin_edges(0, 400)
    with pytest.raises(InputError, match=message):
        beta_template(edges, P0, TABLE, 1.0, 37, 85, shape_factor=shape_factor, name="odd")


def test_check_template_shape():
    with pytest.raises(InputError, match=r"tmpl: has shape \(3,\), expected \(11,\) for the observable binning 11 bins"):
        check_template(np.ones(3), OBS, "tmpl")


# ---------------------------------------------------------------- model build

@pytest.mark.parametrize("kw, message", [
    (dict(exposure=np.nan), r"exposure must be finite and > 0 \[day x 100 t\], got nan"),
    (dict(exposure=0.0), r"exposure must be finite and > 0 .* got 0\.0"),
    (dict(exposure=-5), r"exposure must be finite and > 0 .* got -5"),
    (dict(exposure="1000"), r"exposure must be a number \[day x 100 t\], got '1000'"),
    (dict(exposure=[1.0, 2.0]), r"exposure must be a number"),
    (dict(window=(950, 90)), r"window must be two finite increasing numbers .* got \(950, 90\)"),
    (dict(window=(90, 90)), r"window must be two finite increasing numbers"),
    (dict(window=(90, np.inf)), r"window must be two finite increasing numbers"),
    (dict(window=(90,)), r"window must be two numbers .* got \(90,\)"),
    (dict(window=(90, 500, 950)), r"window must be two numbers"),
    (dict(window="ab"), r"window must be two numbers"),
    (dict(window=("90", "950")), r"window must be two numbers"),
    (dict(n_T=0), r"n_T \(number of recoil bins\) must be an integer >= 1, got 0"),
    (dict(n_T=2.5), r"n_T \(number of recoil bins\) must be an integer >= 1, got 2\.5"),
    (dict(signals=("7Be_86",)), r"unknown signal '7Be_86'; did you mean '7Be_862'\? valid: pp, pep, hep, 7Be_862"),
    (dict(signals=("pp", "B8")), r"unknown signal 'B8'; .*valid: "),
    (dict(backgrounds=("85kr",)), r"unknown background '85kr'; did you mean '85Kr'\? valid: 14C, 210Bi, 85Kr"),
    (dict(backgrounds=("xyz",)), r"unknown background 'xyz'; valid: 14C"),
    (dict(backgrounds=("85Kr", "85Kr")), r"background '85Kr' is listed twice"),
    (dict(signals="7Be_862"), r"not a single string"),
    (dict(signals=("7Be",)), r"signal '7Be' has no flux-normalisation parameter in norms"),
    (dict(progress="yes"), r"progress must be None or a callable"),
])
def test_bad_model_build_arguments_fail_before_building(kw, message):
    with pytest.raises(InputError, match=message):
        borexino_like_model(**kw)


def test_model_build_reports_progress_and_refuses_an_empty_background():
    lines = []
    model = borexino_like_model(n_T=50, signals=("7Be_862",), backgrounds=("85Kr",), n_E=200, progress=lines.append)
    assert lines == ["building 7Be_862 (1/1)", "building background 85Kr (1/1)"]
    assert model.component_names == ("norm_7Be", "rate_85Kr")
    with pytest.raises(InputError, match=r"background template '85Kr': is empty on the observable binning"):
        borexino_like_model(window=(3000, 3010), signals=(), backgrounds=("85Kr",), progress=lines.append)
    assert lines[-1] == "building background 85Kr (1/1)"
