from pathlib import Path

import pytest

from mmbench.config import ConfigError, load_config
from mmbench.engine.plan import plan

CONFIGS = sorted(Path(__file__).resolve().parent.parent.joinpath("configs").glob("*.toml"))


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_every_config_loads_and_plans(path):
    cfg = load_config(path)
    assert cfg.sweeps and plan([s.selection() for s in cfg.sweeps], cfg.cache)


def test_lameski2013_runs_both_approaches_in_three_scopes_over_the_papers_grid():
    cfg = load_config(Path(__file__).resolve().parent.parent / "configs" / "lameski2013.toml")
    points = plan([s.selection() for s in cfg.sweeps], cfg.cache)
    borders = [p for p in points if p.variant.name in ("shared", "shared_padded") and p.shape.k in (32, 64)]
    assert len(borders) == 10 * 10 * 2 * 2 * 3  # hA x wB x k x approaches x scopes
    assert all(p.pad for p in borders if p.variant.name == "shared_padded")
    assert not any(p.pad for p in borders if p.variant.name == "shared")
    dbuf = {(p.shape.n, p.scope, p.pad) for p in points if p.variant.name == "dbuf"}
    assert dbuf == {(n, s, pad) for n in (2048, 2049, 4095, 4096) for s in ("kernel", "device") for pad in (False, True)}


def test_zosa2017_is_the_papers_experiment():
    cfg = load_config(Path(__file__).resolve().parent.parent / "configs" / "zosa2017.toml")
    assert (cfg.runs, cfg.cache) == (10, "cold")
    points = plan([s.selection() for s in cfg.sweeps], cfg.cache)
    series = {(p.variant.name, p.params) for p in points}
    nine = {("best_const", (("BLOCK", 32),)), ("best", (("BLOCK", 32),)), ("best", (("BLOCK", 16),)),
            ("best", (("BLOCK", 8),)), ("interleaved", (("BLOCK", 32),)), ("unroll_k2", (("BLOCK", 32),)),
            ("shared", (("BLOCK", 32),)), ("naive", (("BLOCK", 32),)), ("shared_uncoalesced", (("BLOCK", 32),))}
    assert series == nine | {("blas", ()), ("cublas", ())}
    assert len(points) == 11 * 189  # Figure 1's points are among Figure 2's and run once
    assert {p.shape.n for p in points if p.variant.name == "best"} >= {256, 512, 1024, 2048}


def write(tmp_path, text):
    path = tmp_path / "x.toml"
    path.write_text(text)
    return path


GOOD_SWEEP = '[[sweep]]\nname = "s"\nvariants = ["best"]\nsizes = "64"\n'


@pytest.mark.parametrize("text,needle", [
    ("nonsense = [", "not valid TOML"),
    ('name = "x"\n', "needs at least one [[sweep]]"),
    ("colour = 1\n" + GOOD_SWEEP, "unknown key 'colour'"),
    ('[run]\ncache = "warm"\n' + GOOD_SWEEP, "run.cache: 'warm'; choose from: cold, hot"),
    ("[run]\nruns = 0\n" + GOOD_SWEEP, "run.runs: 0 is not an integer >= 1"),
    ('[[sweep]]\nname = "s"\nvariants = ["bset"]\nsizes = "64"\n', "sweep[0].variants: unknown variant 'bset'; choose from"),
    ('[[sweep]]\nname = "s"\nvariants = ["best"]\nsizes = "10:5"\n', "sweep[0].sizes: size spec '10:5'"),
    ('[[sweep]]\nname = "s"\nvariants = ["best"]\n', "sweep[0]: missing key 'sizes'"),
    (GOOD_SWEEP + "params = { TILE = [4] }\n", "sweep[0].params.TILE: no variant of this sweep has that parameter"),
    (GOOD_SWEEP + "params = { BLOCK = [0] }\n", "sweep[0].params: parameter BLOCK=[0] for 'best': values must be positive integers"),
    (GOOD_SWEEP + 'scopes = ["kernel", "host"]\n', "sweep[0].scopes: 'host'; choose from: kernel, device, end_to_end"),
    (GOOD_SWEEP + 'scopes = "kernel"\n', "sweep[0].scopes: expected a non-empty list"),
    (GOOD_SWEEP + "pad = 1\n", "sweep[0].pad: expected true, false or [false, true]"),
    ('[[sweep]]\nname = "s"\nvariants = ["gemv_row"]\nsizes = "64"\npad = true\n',
     "sweep[0].pad: gemv_row is a gemv, which has no padding"),
    ('[[sweep]]\nname = "s"\nvariants = ["memcpy"]\nsizes = "64"\nscopes = ["end_to_end"]\n',
     "sweep[0].scopes: memcpy is a copy, timed only as kernel"),
    # what used to be dropped without a word, or refused only later
    ('[[sweep]]\nname = "s"\nvariants = ["best", "blas"]\nsizes = "64"\nscopes = ["kernel", "device"]\n',
     "sweep[0].scopes: blas runs on the CPU: it is timed as its own call (kernel), never padded"),
    ('[[sweep]]\nname = "s"\nvariants = ["best", "blas"]\nsizes = "64"\npad = [false, true]\n',
     "sweep[0].pad: blas runs on the CPU"),
    ('[[sweep]]\nname = "s"\nvariants = ["cublas"]\nsizes = "64"\npad = true\n', "sweep[0].pad: cublas has no tile over C to pad to"),
    ('paper = "zosa"\n' + GOOD_SWEEP, "paper 'zosa': no study knows it; known: amd-tiling, lab3"),
    ("paper = 2017\n" + GOOD_SWEEP, "paper 2017: no study knows it"),
    ('paper = "zosa-gemm-shared-memory-ilp"\n' + GOOD_SWEEP, "paper 'zosa-gemm-shared-memory-ilp' is now 'zosa2017'"),
    ('paper = "lab3-2018"\n' + GOOD_SWEEP, "paper 'lab3-2018' is now 'lab3': write paper = \"lab3\""),
    ('name = "lab3-2018"\npaper = "lab3"\n' + GOOD_SWEEP, "name 'lab3-2018' is now 'lab3': write name = \"lab3\""),
    ('name = "../elsewhere"\n' + GOOD_SWEEP, "name '../elsewhere': a run's name names its folder and files"),
    ('name = ""\n' + GOOD_SWEEP, "name '': a run's name names its folder and files"),
    ("run = 3\n" + GOOD_SWEEP, "run: expected a table"),
    ("[run]\nruns = 1001\n" + GOOD_SWEEP, "run.runs: 1001 is more than 1000"),
    ("[run]\nwarmup = 1001\n" + GOOD_SWEEP, "run.warmup: 1001 is more than 1000"),
])
def test_errors_name_the_file_and_key(tmp_path, text, needle):
    with pytest.raises(ConfigError) as err:
        load_config(write(tmp_path, text))
    assert str(err.value).startswith(str(tmp_path / "x.toml")) and needle in str(err.value)


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="no such config file"):
        load_config(tmp_path / "nope.toml")


def test_a_file_that_is_not_utf8_is_an_error_naming_it(tmp_path):
    path = tmp_path / "latin.toml"
    path.write_bytes('name = "Sørensen"\n'.encode("latin-1") + GOOD_SWEEP.encode())
    with pytest.raises(ConfigError, match=r"latin.toml: not UTF-8 text \(byte 9\)"):
        load_config(path)


def test_a_config_without_a_paper_is_an_experiment_of_ones_own(tmp_path):
    assert load_config(write(tmp_path, GOOD_SWEEP)).paper == ""


def test_a_switch_may_be_zero_where_its_variant_allows(tmp_path):
    path = tmp_path / "x.toml"
    path.write_text('name = "x"\n[[sweep]]\nname = "s"\nvariants = ["matmul_shared"]\nsizes = "64"\n'
                    'params = { PAD = [0, 1] }\n')
    assert load_config(path).sweeps[0].params["PAD"] == (0, 1)


@pytest.mark.parametrize("path", sorted(Path("configs/companions").glob("*.toml")), ids=lambda p: p.stem)
def test_a_companion_config_plans_every_point_it_names(path):
    """The configs of the runs beside the studies' reference runs load and plan (a constraint no
    combination of a sweep meets would refuse the run on the GPU)."""
    from mmbench import api

    points = api.plan(config=str(path), say=lambda *a: None)
    assert points and len({p.key for p in points}) == len(points)
