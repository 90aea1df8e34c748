"""Borexino Phase-III observed spectrum and CNO profile readers, ObservedSpectrum, and observed
spectra from histogram objects (np.histogram, UHI, hist, ROOT TH1)."""

import dataclasses
import re
from importlib import resources

import numpy as np
import pytest

from nuejax.errors import FileFormatError, InputError
from nuejax.io import (ObservedSpectrum, PublishedProfile, RootInputError, packaged_borexino_cno_profile,
                       packaged_borexino_spectrum, read_borexino_cno_profile, read_borexino_spectrum,
                       read_spectrum_th1, spectrum_from_hist, write_hists)

FOLDER = resources.files("nuejax") / "data" / "borexino_phase3"
SPECTRUM_TEXT = (FOLDER / "PRL2022_SubtractedSpectrumFit_Data.txt").read_text()
EMPTY_BINS = [492, 512, 530, 812, 814]  # 1-based bin indices


@pytest.fixture(scope="module")
def spectrum():
    return packaged_borexino_spectrum()


@pytest.fixture(scope="module")
def raw_columns():
    """Columns 3-5 of the data rows, read independently of the reader (whitespace regex)."""
    rows = re.findall(r"^ *(\d+) +(\d+) +([0-9.]+) +([0-9.]+) +(\d+) ", SPECTRUM_TEXT, re.MULTILINE)
    assert len(rows) == 817
    return {name: np.array([float(r[i]) for r in rows]) for i, name in
            enumerate(["index", "n_h", "centre", "width", "content"])}


# ---------------------------------------------------------------- packaged spectrum

def test_packaged_spectrum_bins_and_labels(spectrum):
    assert spectrum.n_bins == 817
    assert spectrum.edges.shape == (818,)
    np.testing.assert_array_equal(spectrum.labels, np.arange(137, 954))
    assert spectrum.labels.dtype.kind == "i"
    assert np.all(np.diff(spectrum.edges) > 0)
    np.testing.assert_allclose(spectrum.widths, np.diff(spectrum.edges))
    assert spectrum.edges[0] == pytest.approx(319.116 - 2.40118 / 2, abs=1e-9)
    assert spectrum.edges[-1] == pytest.approx(2638.73 + 3.28524 / 2, abs=1e-9)


def test_packaged_spectrum_total_counts_match_raw_column(spectrum, raw_columns):
    assert spectrum.counts.sum() == raw_columns["content"].sum() == 53765
    np.testing.assert_array_equal(spectrum.counts, raw_columns["content"])


def test_edges_match_centre_pm_half_width(spectrum, raw_columns):
    c, w = raw_columns["centre"], raw_columns["width"]
    np.testing.assert_allclose(spectrum.edges[:-1], c - w / 2, rtol=1e-4)
    np.testing.assert_allclose(spectrum.edges[1:], c + w / 2, rtol=1e-4)
    # the printed centres carry 6 significant digits: edges are within 0.005 keV of centre -/+ width/2
    assert np.max(np.abs(spectrum.edges[:-1] - (c - w / 2))) < 0.005
    assert np.max(np.abs(spectrum.edges[1:] - (c + w / 2))) < 0.005
    np.testing.assert_allclose(spectrum.centres, c, atol=0.005)


def test_touching_residual_of_bin_730(spectrum):
    assert "     2.82843-0.000936334" in SPECTRUM_TEXT  # the fields really touch in the file
    i = 730 - 1
    assert spectrum.reference["residual"][i] == -0.000936334
    assert spectrum.reference["error"][i] == 2.82843
    assert spectrum.counts[i] == 8


def test_empty_bins_have_minus_inf_residuals(spectrum):
    idx = np.array(EMPTY_BINS) - 1
    np.testing.assert_array_equal(spectrum.counts[idx], 0)
    assert np.all(spectrum.reference["residual"][idx] == -np.inf)
    np.testing.assert_array_equal(np.nonzero(np.isinf(spectrum.reference["residual"]))[0], idx)
    np.testing.assert_array_equal(np.nonzero(spectrum.counts == 0)[0], idx)
    assert np.all(np.isfinite(np.delete(spectrum.reference["residual"], idx)))


def test_spectrum_is_immutable(spectrum):
    with pytest.raises(dataclasses.FrozenInstanceError):
        spectrum.counts = np.zeros(817)
    with pytest.raises(ValueError):
        spectrum.counts[0] = 1.0


# ---------------------------------------------------------------- synthetic spectrum files

HEADER = ("Bin Content and Error unit: (Events/[5N_h])\t\t\t\t\t\t\n"
          "       Nbins         N_hEnergy [keV] Width [keV]     Content       Error  Residuals [(Data-fit)/sigma]\n")


def row(*fields):
    """One data row: each field right-aligned in 12 characters (a 12-character field touches)."""
    assert len(fields) == 7
    return "".join(f"{f:>12}" for f in fields)


GOOD_ROWS = [
    row(1, 137, "100.5", "1", 4, 2, "0.5"),
    row(2, 138, "101.5", "1", 9, 3, "-1.25"),
    row(3, 139, "102.5", "1", 0, 0, "-inf"),
    row(4, 140, "103.50000000", "1", 8, "2.8284271247", "-0.000936334"),
]


def write_spectrum(tmp_path, rows, newline="\n"):
    path = tmp_path / "spectrum.txt"
    path.write_bytes((HEADER + "\n".join(rows) + "\n").replace("\n", newline).encode())
    return path


def test_synthetic_file_with_touching_fields(tmp_path):
    assert all(len(r) == 84 for r in GOOD_ROWS)
    assert "2.8284271247-0.000936334" in GOOD_ROWS[3]
    assert "140103.50000000" in GOOD_ROWS[3]
    s = read_borexino_spectrum(write_spectrum(tmp_path, GOOD_ROWS))
    np.testing.assert_allclose(s.edges, [100, 101, 102, 103, 104])
    np.testing.assert_array_equal(s.counts, [4, 9, 0, 8])
    np.testing.assert_array_equal(s.labels, [137, 138, 139, 140])
    np.testing.assert_array_equal(s.reference["residual"], [0.5, -1.25, -np.inf, -0.000936334])
    np.testing.assert_array_equal(s.reference["error"], [2, 3, 0, 2.8284271247])


def test_crlf_trailing_tab_and_trailing_blank_line(tmp_path):
    rows = [r + "\t" for r in GOOD_ROWS] + [""]
    s = read_borexino_spectrum(write_spectrum(tmp_path, rows, newline="\r\n"))
    assert s.n_bins == 4 and s.counts.sum() == 21


def _replace(i, text):
    rows = list(GOOD_ROWS)
    rows[i] = text
    return rows


@pytest.mark.parametrize("rows, line, pattern", [
    (_replace(1, GOOD_ROWS[1][:-3]), 4, r"81 characters, expected 84.*column 7 \(Residuals\)"),
    (_replace(1, row(2, 138, "101.5", "1", "nine", 3, "-1.25")), 4, r"column 5 \(Content.*'nine' is not a number"),
    (_replace(2, row(3, 139, "102.7", "1", 0, 0, "-inf")), 5, r"column.*Energy \[keV\].*not contiguous"),
    (_replace(2, row(3, 139, "107.5", "1", 0, 0, "-inf")), 5, r"not contiguous and increasing"),
    (_replace(2, row(3, 139, "102.5", "1", "-inf", 0, "-inf")), 5,
     r"column 5 \(Content.*'-inf' is not finite \(-inf is allowed only in the Residuals column\)"),
    (_replace(1, row(2, 138, "101.5", "1", -9, 3, "-1.25")), 4, r"column 5 \(Content\): negative count -9"),
    (_replace(1, row(2, 138, "101.5", "1", "9.5", "3.08221", "-1.25")), 4, r"count 9.5 is not an integer"),
    (_replace(1, row(2, 138, "101.5", "1", 9, "3.1", "-1.25")), 4, r"column 6 \(Error\): error 3.1 is not sqrt"),
    (_replace(1, row(2, 138, "101.5", "1", 9, 3, "-inf")), 4,
     r"column 7 \(Residuals\): residual -inf in a bin with 9 events"),
    (_replace(1, row(2, 138, "101.5", "1", 9, 3, "nan")), 4, r"column 7 \(Residuals.*'nan' is not finite"),
    (_replace(1, row(3, 138, "101.5", "1", 9, 3, "-1.25")), 4, r"column 1 \(Nbins\): bin index 3, expected 2"),
    (_replace(1, row(2, "138.5", "101.5", "1", 9, 3, "-1.25")), 4, r"column 2 \(N_h\)"),
    (_replace(1, row(2, 138, "101.5", "-1", 9, 3, "-1.25")), 4, r"column 4 \(Width \[keV\]\).*not positive"),
    (_replace(1, GOOD_ROWS[1][:48] + f"{9:<12}" + GOOD_ROWS[1][60:]), 4, r"column 5 \(Content.*not right-aligned"),
])
def test_malformed_spectrum_names_line(tmp_path, rows, line, pattern):
    path = write_spectrum(tmp_path, rows)
    with pytest.raises(FileFormatError, match=pattern) as info:
        read_borexino_spectrum(path)
    assert f"spectrum.txt: line {line}" in str(info.value)


def test_spectrum_without_header_or_rows(tmp_path):
    path = tmp_path / "spectrum.txt"
    path.write_text(HEADER)
    with pytest.raises(FileFormatError, match="no data rows"):
        read_borexino_spectrum(path)
    path.write_text("\n".join(GOOD_ROWS) + "\n")  # no header: the first row read is bin 3
    with pytest.raises(FileFormatError, match=r"line 3, column 1 \(Nbins\): bin index 3, expected 1"):
        read_borexino_spectrum(path)
    with pytest.raises(FileNotFoundError):
        read_borexino_spectrum(tmp_path / "missing.txt")


# ---------------------------------------------------------------- CNO profile

def test_packaged_cno_profile():
    p = packaged_borexino_cno_profile()
    assert isinstance(p, PublishedProfile)
    assert p.x.size == p.delta_chi2.size == 2501
    assert p.name == "CNO rate [cpd/100 t]"
    assert p.x[0] == -7 and p.x[-1] == 18
    assert p.minimum == pytest.approx(6.74, abs=1e-12)
    assert p.delta_chi2.min() == 7.29e-07
    np.testing.assert_allclose(p.at([4, 5, 8.6, 10]), [7.806, 3.072, 1.607, 3.708], atol=1e-3)
    assert p.at(6.745) == pytest.approx(0.5 * (7.29e-07 + 6.8501083305388e-05))
    assert isinstance(p.at(5), float)
    with pytest.raises(InputError, match=r"18.5 is outside the tabulated range \[-7, 18\]"):
        p.at([5, 18.5])
    with pytest.raises(InputError, match="outside"):
        p.at(float("nan"))
    d = p.to_dict()
    assert d["name"] == p.name and len(d["x"]) == 2501 and d["delta_chi2"][1374] == 7.29e-07


@pytest.mark.parametrize("lines, pattern", [
    (["1\t0\t2.0", "2\t0.5\t1.0", "3\t0\t2.0"], r"line 2, column 2 \(zero\): expected 0, found '0.5'"),
    (["1\t0\t2.0", "1\t0\t1.0", "3\t0\t2.0"], r"line 2, column 1 \(CNO rate\): 1 is not above 1 on line 1"),
    (["1\t0\t2.0", "2\t0", "3\t0\t2.0"], r"line 2: expected 3 tab-separated columns .* found 2"),
    (["1\t0\t2.0", "2\t0\tnan", "3\t0\t2.0"], r"line 2, column 3 \(-2 Delta ln L\): 'nan' is not a finite"),
    (["1\t0\t2.0", "2\t0\t1.0\t4", "3\t0\t2.0"], r"line 2: expected 3 .* found 4"),
])
def test_malformed_profile_names_line(tmp_path, lines, pattern):
    path = tmp_path / "profile.txt"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(FileFormatError, match=pattern):
        read_borexino_cno_profile(path)


def test_profile_formats(tmp_path):
    path = tmp_path / "profile.txt"
    path.write_text("0.10\t0\t7\n0.20\t0\t7.29E-07\r\n7 0 1e1\n")
    p = read_borexino_cno_profile(path)
    np.testing.assert_array_equal(p.x, [0.1, 0.2, 7])
    np.testing.assert_array_equal(p.delta_chi2, [7, 7.29e-07, 10])
    assert p.minimum == 0.2


# ---------------------------------------------------------------- rebin / select

def test_rebin_sums_exact(spectrum):
    r = spectrum.rebin(43)  # 817 = 19 x 43
    assert r.n_bins == 19
    assert r.counts.sum() == spectrum.counts.sum()
    np.testing.assert_array_equal(r.counts, spectrum.counts.reshape(19, 43).sum(axis=1))
    np.testing.assert_array_equal(r.edges, spectrum.edges[::43])
    assert r.labels is None and r.reference == {}
    with pytest.raises(InputError, match=r"817 bins in groups of 2: 817 is not a multiple of 2"):
        spectrum.rebin(2)
    d = spectrum.rebin(2, drop_remainder=True)
    assert d.n_bins == 408
    assert d.counts.sum() == spectrum.counts.sum() - spectrum.counts[-1]
    assert d.edges[-1] == spectrum.edges[-2]
    np.testing.assert_array_equal(spectrum.rebin(1).counts, spectrum.counts)
    for bad in (0, -1, 2.0, True):
        with pytest.raises(InputError, match="integer >= 1"):
            spectrum.rebin(bad)


def test_rebin_is_correctly_rounded():
    s = ObservedSpectrum(np.arange(4.0), [1e16, 1.0, 1.0])
    assert s.rebin(3).counts[0] == 1e16 + 2


def test_select(spectrum):
    s = spectrum.select(500, 1000)
    assert s.edges[0] >= 500 and s.edges[-1] <= 1000
    keep = (spectrum.edges[:-1] >= 500) & (spectrum.edges[1:] <= 1000)
    assert s.n_bins == keep.sum() > 0
    assert s.counts.sum() == spectrum.counts[keep].sum()
    np.testing.assert_array_equal(s.labels, spectrum.labels[keep])
    np.testing.assert_array_equal(s.reference["residual"], spectrum.reference["residual"][keep])
    # the bin containing 500 keV (partly outside) is not kept, its neighbour above is
    assert spectrum.edges[np.argmax(keep)] >= 500 > spectrum.edges[np.argmax(keep) - 1]
    whole = spectrum.select(spectrum.edges[0], spectrum.edges[-1])
    assert whole.n_bins == 817
    with pytest.raises(InputError, match=r"no bin lies entirely within \[3000, 4000\]"):
        spectrum.select(3000, 4000)
    with pytest.raises(InputError, match="lo < hi"):
        spectrum.select(1000, 500)


def test_observed_spectrum_validation():
    with pytest.raises(InputError, match="do not match the 2 bins"):
        ObservedSpectrum([0, 1, 2], [1, 2, 3])
    with pytest.raises(InputError, match="not strictly increasing"):
        ObservedSpectrum([0, 2, 1], [1, 2])
    with pytest.raises(InputError, match=r"bin 1 \[1, 2\] holds -1"):
        ObservedSpectrum([0, 1, 2], [1, -1])
    with pytest.raises(InputError, match="reference\\['residual'\\]"):
        ObservedSpectrum([0, 1, 2], [1, 1], reference={"residual": [1.0]})


# ---------------------------------------------------------------- spectra from histograms

def test_from_numpy_histogram():
    rng = np.random.default_rng(1)
    counts, edges = np.histogram(rng.normal(size=1000), bins=20, range=(-4, 4))
    s = spectrum_from_hist((counts, edges), name="toy")
    np.testing.assert_array_equal(s.counts, counts)
    np.testing.assert_array_equal(s.edges, edges)
    assert s.source == "toy" and s.counts.dtype == float
    assert spectrum_from_hist((counts, edges), expected_edges=np.linspace(-4, 4, 21)).n_bins == 20


def test_binning_mismatch_names_edge():
    counts, edges = np.ones(4), np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    with pytest.raises(InputError, match=r"edge 2 is 2\.0, expected 2\.5 .*rebin.*select"):
        spectrum_from_hist((counts, edges), expected_edges=[0, 1, 2.5, 3, 4])
    with pytest.raises(InputError, match=r"4 bins \[0, 4\], expected 2 bins \[0, 4\]"):
        spectrum_from_hist((counts, edges), expected_edges=[0, 2, 4])
    # equal to 1e-9 relative passes
    spectrum_from_hist((counts, edges), expected_edges=edges * (1 + 1e-12))


def test_bad_histogram_values_name_bin():
    with pytest.raises(InputError, match=r"bin 2 \[2, 3\] holds nan"):
        spectrum_from_hist((np.array([1.0, 2.0, np.nan]), np.arange(4.0)))
    with pytest.raises(InputError, match=r"bin 0 \[0, 1\] holds -1"):
        spectrum_from_hist((np.array([-1.0, 2.0, 3.0]), np.arange(4.0)))
    with pytest.raises(InputError, match="do not match the 3 bins"):
        spectrum_from_hist((np.ones(4), np.arange(4.0)))
    with pytest.raises(InputError, match="expected a 1-D histogram"):
        spectrum_from_hist([1, 2, 3])


class _Traits:
    circular = False
    discrete = False


class _Axis:
    """A UHI PlottableAxis: len() and axis[i] -> (lower, upper); no .edges."""

    traits = _Traits()

    def __init__(self, edges):
        self._edges = np.asarray(edges, dtype=float)

    def __len__(self):
        return self._edges.size - 1

    def __getitem__(self, i):
        return (self._edges[i], self._edges[i + 1])


class _Hist:
    """A minimal UHI PlottableHistogram."""

    kind = "COUNT"

    def __init__(self, values, *axes, name=None):
        self._values = np.asarray(values, dtype=float)
        self.axes = axes
        self.name = name

    def values(self):
        return self._values

    def variances(self):
        return self._values

    def counts(self):
        return self._values


def test_from_uhi_protocol_object():
    h = _Hist([3, 0, 5], _Axis([10, 20, 25, 40]), name="uhi")
    s = spectrum_from_hist(h)
    np.testing.assert_array_equal(s.edges, [10, 20, 25, 40])
    np.testing.assert_array_equal(s.counts, [3, 0, 5])
    assert s.source == "uhi"
    with pytest.raises(InputError, match=r"histogram 'bad': bin 1 \[20, 25\] holds -2"):
        spectrum_from_hist(_Hist([3, -2, 5], _Axis([10, 20, 25, 40])), name="bad")
    with pytest.raises(InputError, match="2-dimensional"):
        spectrum_from_hist(_Hist(np.ones((3, 2)), _Axis([0, 1, 2, 3]), _Axis([0, 1, 2])))
    with pytest.raises(InputError, match="edge 1 is 20.0, expected 21.0"):
        spectrum_from_hist(h, expected_edges=[10, 21, 25, 40])


def test_from_hist_hist():
    hist = pytest.importorskip("hist")
    h = hist.Hist(hist.axis.Regular(5, 0.0, 10.0, name="E"))
    h.fill([1.0, 1.5, 3.0, 9.9, 11.0, -1.0])  # two fills land in the flow bins
    s = spectrum_from_hist(h, expected_edges=np.linspace(0, 10, 6))
    np.testing.assert_array_equal(s.counts, [2, 1, 0, 0, 1])
    np.testing.assert_array_equal(s.edges, np.linspace(0, 10, 6))
    h2 = hist.Hist(hist.axis.Regular(2, 0, 1), hist.axis.Regular(2, 0, 1))
    with pytest.raises(InputError, match="2-dimensional"):
        spectrum_from_hist(h2)


def test_read_spectrum_th1(tmp_path):
    uproot = pytest.importorskip("uproot")
    path = tmp_path / "data.root"
    edges = np.array([320.0, 500.0, 800.0, 1200.0])
    write_hists(path, {"observed": (np.array([5.0, 0.0, 7.0]), edges),
                       "neg": (np.array([5.0, -1.0, 7.0]), edges)})
    s = read_spectrum_th1(path, "observed", expected_edges=edges)
    np.testing.assert_array_equal(s.counts, [5, 0, 7])
    np.testing.assert_array_equal(s.edges, edges)
    assert s.source == f"{path}:observed"
    with pytest.raises(RootInputError, match=r"data\.root:observed: binning does not match: edge 2 is 800\.0, "
                                             r"expected 750\.0"):
        read_spectrum_th1(path, "observed", expected_edges=[320, 500, 750, 1200])
    with pytest.raises(RootInputError, match=r"data\.root:neg: negative content -1 in bin \(1,\)"):
        read_spectrum_th1(path, "neg")
    with pytest.raises(RootInputError, match="no key 'missing'"):
        read_spectrum_th1(path, "missing")
    with uproot.open(path) as f:  # an uproot TH1 is a UHI histogram too
        s2 = spectrum_from_hist(f["observed"])
    np.testing.assert_array_equal(s2.counts, [5, 0, 7])
    np.testing.assert_array_equal(s2.edges, edges)
    assert s2.source == "observed"


def test_hist_is_not_imported_by_nuejax_io():
    import subprocess
    import sys
    code = "import sys, nuejax.io; print('hist' in sys.modules, 'boost_histogram' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_error_tolerance_is_1e3_relative(tmp_path):
    # error = sqrt(content) to 1e-3 relative + 1e-6: 3.0029 for 9 events passes, 3.0031 fails
    ok = read_borexino_spectrum(write_spectrum(tmp_path, _replace(1, row(2, 138, "101.5", "1", 9, "3.0029", "-1.25"))))
    assert ok.reference["error"][1] == 3.0029
    with pytest.raises(FileFormatError, match=r"line 4, column 6 \(Error\)"):
        read_borexino_spectrum(write_spectrum(tmp_path, _replace(1, row(2, 138, "101.5", "1", 9, "3.0031", "-1.25"))))
