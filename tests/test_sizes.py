import pytest
from hypothesis import given
from hypothesis import strategies as st

from mmbench.sizes import Shape, SizeSpecError, paper_sweep, parse_shape, parse_sizes, row_shape


def sides(spec):
    return [s.n for s in parse_sizes(spec)]


def test_paper_sweep_is_the_189_sizes():
    got = sides("63:2049")
    assert len(got) == 189
    assert got[:6] == [63, 64, 65, 95, 96, 97] and got[-3:] == [2047, 2048, 2049]
    assert all(s.is_square for s in parse_sizes("63:2049"))


@pytest.mark.parametrize("spec,expected", [
    ("1024", [1024]),
    ("256,512,1024", [256, 512, 1024]),
    ("64:256:+64", [64, 128, 192, 256]),
    ("512:8192:x2", [512, 1024, 2048, 4096, 8192]),
    ("63:129", [63, 64, 65, 95, 96, 97, 127, 128, 129]),
    ("1:40", [31, 32, 33]),
    (" 128 , 64,128 ", [128, 64]),  # spaces ignored, duplicates dropped, first place kept
])
def test_forms(spec, expected):
    assert sides(spec) == expected


def test_rectangular_shapes():
    assert parse_sizes("1000x37x2049,37x1000x65") == [Shape(1000, 37, 2049), Shape(37, 1000, 65)]
    assert str(Shape(1000, 37, 2049)) == "1000x37x2049" and str(Shape(5, 5, 5)) == "5"
    assert parse_shape("7x8x9") == Shape(7, 8, 9)


@pytest.mark.parametrize("spec,needle", [
    ("", "empty size spec"),
    ("   ", "empty size spec"),
    ("abc", "malformed size spec 'abc'"),
    ("0", "must be positive"),
    ("-5", "malformed size spec '-5'"),
    ("10:5", "start 10 is after end 5"),
    ("0:64", "must be positive"),
    ("64:128:+0", "step must be positive"),
    ("64:128:x1", "factor must be at least 2"),
    ("70:80", "selects no sizes"),
    ("1,,2", "empty item"),
    ("0x5x5", "must be positive"),
    ("5x5", "malformed size spec '5x5'"),
    ("64:128:*2", "malformed size spec '64:128:*2'"),
    # grids
    ("[1,2]x[3]", "a grid is [S]x[S]x[S]"),
    ("[1,2]x3x4x5", "a grid is [S]x[S]x[S]"),
    ("[1,2", "a '[' is not closed"),
    ("1,2]x3x4", "brackets do not pair"),
    ("[[1]]x1x1", "brackets do not pair"),
    ("[]x1x1", "an empty list [] in a grid"),
    ("[1x2]x1x1", "holds numbers and ranges only, not '1x2'"),
    ("[0,1]x1x1", "must be positive (in the grid '[0,1]x1x1')"),
    ("[1:100000:+1]x[1:100000:+1]x1", "more than 100000"),
])
def test_bad_specs_name_the_spec_and_forms(spec, needle):
    with pytest.raises(SizeSpecError) as err:
        parse_sizes(spec)
    assert needle in str(err.value)
    if "malformed" in needle or "empty size" in needle:
        assert "A:B:+S" in str(err.value)  # the accepted forms are listed


@given(st.integers(1, 5000), st.integers(0, 3000))
def test_paper_range_property(lo, width):
    hi = lo + width
    expected = [n for n in range(lo, hi + 1) if n >= 31 and min(n % 32, 32 - n % 32) <= 1]
    if expected:
        assert sides(f"{lo}:{hi}") == expected == paper_sweep(lo, hi)
    else:
        with pytest.raises(SizeSpecError):
            parse_sizes(f"{lo}:{hi}")


@given(st.integers(1, 10_000), st.integers(0, 10_000), st.integers(1, 500))
def test_linear_range_property(lo, width, step):
    got = sides(f"{lo}:{lo + width}:+{step}")
    assert got == list(range(lo, lo + width + 1, step))


@given(st.integers(1, 1000), st.integers(2, 9), st.integers(0, 10**6))
def test_geometric_range_property(lo, factor, width):
    got = sides(f"{lo}:{lo + width}:x{factor}")
    assert got[0] == lo and got[-1] <= lo + width < got[-1] * factor
    assert all(b == a * factor for a, b in zip(got, got[1:]))


@given(st.lists(st.integers(1, 100_000), min_size=1, max_size=20))
def test_lists_keep_order_and_drop_duplicates(values):
    assert sides(",".join(map(str, values))) == list(dict.fromkeys(values))


@given(st.lists(st.tuples(st.integers(1, 9999), st.integers(1, 9999), st.integers(1, 9999)), min_size=1, max_size=5))
def test_shapes_round_trip(dims):
    spec = ",".join(f"{m}x{n}x{k}" for m, n, k in dims)
    shapes = parse_sizes(spec)
    assert shapes == list(dict.fromkeys(Shape(*d) for d in dims))
    assert [parse_shape(str(s)) for s in shapes] == shapes


@given(st.text(alphabet="0123456789:,x+- ab[]", max_size=20))
def test_any_text_parses_or_raises_a_size_spec_error(text):
    try:
        shapes = parse_sizes(text)
    except SizeSpecError:
        return
    assert shapes and all(min(s.m, s.n, s.k) >= 1 for s in shapes)


def test_two_dimensional_shapes():
    assert parse_sizes("8192,33x4097,4097x31", dims=2) == [Shape(8192, 8192, 0), Shape(33, 4097, 0), Shape(4097, 31, 0)]
    assert [str(s) for s in parse_sizes("8192,1x100", dims=2)] == ["8192", "1x100"]
    assert parse_sizes("63:65", dims=2) == [Shape(n, n, 0) for n in (63, 64, 65)]
    assert parse_shape("33x4097", dims=2) == Shape(33, 4097, 0)
    with pytest.raises(SizeSpecError, match="shapes have two dimensions, MxN"):
        parse_sizes("5x5x5", dims=2)
    with pytest.raises(SizeSpecError, match="shapes have three dimensions, MxNxK"):
        parse_sizes("5x5")


def test_a_grid_is_every_m_then_every_n_then_every_k():
    """Lameski's experiment: hA and wB varied over aligned and unaligned values at a fixed k."""
    assert parse_sizes("[32,64]x[100,200]x32") == [Shape(32, 100, 32), Shape(32, 200, 32), Shape(64, 100, 32),
                                                    Shape(64, 200, 32)]
    grid = parse_sizes("[16:4096:x2] x [31,32,33] x 64")
    assert len(grid) == 9 * 3 and grid[:3] == [Shape(16, n, 64) for n in (31, 32, 33)] and grid[-1] == Shape(4096, 33, 64)
    assert parse_sizes("[63:65]x[1:3:+1]", dims=2) == [Shape(m, n, 0) for m in (63, 64, 65) for n in (1, 2, 3)]
    assert parse_sizes("1024,[1,2]x7x[3]") == [Shape(1024, 1024, 1024), Shape(1, 7, 3), Shape(2, 7, 3)]
    assert parse_sizes("[5,5,6]x[5]x5") == [Shape(5, 5, 5), Shape(6, 5, 5)]  # duplicates dropped, order kept


def test_gemv_reads_grids_beside_its_own_forms():
    from mmbench.ops import get_op

    assert get_op("gemv").parse_sizes("[1,2]x[3,4],cell:0x0")[:4] == [Shape(1, 3, 0), Shape(1, 4, 0), Shape(2, 3, 0),
                                                                      Shape(2, 4, 0)]


def test_a_rows_shape_reads_as_the_user_writes_it():
    """Tables and messages built their own text from a row's m, n and k: 64x32x0 for a transpose."""
    import pandas as pd

    df = pd.DataFrame({"m": [64, 4096, 1000, 1024], "n": [32, 4096, 37, 1024], "k": [0, 0, 2049, 1024]})
    expected = ["64x32", "4096", "1000x37x2049", "1024"]
    assert [str(row_shape(r.m, r.n, r.k)) for r in df.itertuples()] == expected
