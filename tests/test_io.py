"""ROOT and Borexino-text input: every problem is an error naming file, key and problem."""

import numpy as np
import pytest

from nuejax.io import RootInputError, packaged_borexino_shape, read_borexino_shape, read_th1, read_th2, write_hists


@pytest.fixture()
def rootfile(tmp_path):
    path = tmp_path / "in.root"
    good = np.arange(12.0).reshape(4, 3) + 1
    nan = good.copy()
    nan[2, 1] = np.nan
    neg = good.copy()
    neg[1, 2] = -3
    write_hists(path, {
        "good": (good, np.linspace(0, 1, 5), np.arange(4.0)),
        "nan": (nan, np.linspace(0, 1, 5), np.arange(4.0)),
        "neg": (neg, np.linspace(0, 1, 5), np.arange(4.0)),
        "empty": (np.zeros((4, 3)), np.linspace(0, 1, 5), np.arange(4.0)),
        "h1": (np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.0, 2.0, 3.0])),
    })
    return path, good


def test_th2_and_th1_round_trip(rootfile):
    path, good = rootfile
    v, xe, ye = read_th2(path, "good", expected_x_edges=np.linspace(0, 1, 5))
    np.testing.assert_array_equal(v, good)
    np.testing.assert_array_equal(ye, np.arange(4.0))
    v1, e1 = read_th1(path, "h1")
    np.testing.assert_array_equal(v1, [1, 2, 3])


@pytest.mark.parametrize("key, kw, message", [
    ("nan", {}, r"in\.root:nan: NaN or infinite content in bin \(2, 1\)"),
    ("neg", {}, r"in\.root:neg: negative content -3 in bin \(1, 2\)"),
    ("empty", {}, r"in\.root:empty: histogram is empty"),
    ("missing", {}, r"in\.root: no key 'missing' \(available: .*good"),
    ("good", {"expected_x_edges": np.linspace(0, 2, 5)}, r"in\.root:good: x binning does not match"),
    ("good", {"expected_y_edges": np.arange(5.0)}, r"in\.root:good: y binning does not match: file has 3 bins"),
    ("h1", {}, r"in\.root:h1: is a TH1D, expected a TH2"),
])
def test_th2_errors_name_file_key_and_problem(rootfile, key, kw, message):
    path, _ = rootfile
    with pytest.raises(RootInputError, match=message):
        read_th2(path, key, **kw)


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.root"):
        read_th1(tmp_path / "nope.root", "h")


def test_borexino_shapes(tmp_path):
    s = packaged_borexino_shape("Ext_K40")
    # FORMAT.md: density x width sums to 0.263 for ext 40K
    assert s.integral == pytest.approx(0.263, abs=5e-4)
    assert s.cdf(1e9) == pytest.approx(s.integral)
    bad = tmp_path / "bad_pdfkeV__1.txt"
    bad.write_text("1,2,0.5,0.1\n2,3,-0.5,0.1\n")
    with pytest.raises(ValueError, match=r"bad_pdfkeV__1\.txt: negative density -0\.5 in row 2"):
        read_borexino_shape(bad)
    gap = tmp_path / "gap_pdfkeV__1.txt"
    gap.write_text("1,2,0.5,0.1\n2.5,3,0.5,0.1\n")
    with pytest.raises(ValueError, match="not contiguous"):
        read_borexino_shape(gap)
    with pytest.raises(KeyError, match="no packaged Borexino shape 'K40'"):
        packaged_borexino_shape("K40")
