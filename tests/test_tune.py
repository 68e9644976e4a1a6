"""The tuner on the CPU: spaces, strategies, cache keys and invalidation, replay of a real run."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from mmbench import places, source
from mmbench.cli import main
from mmbench.results import read_results
from mmbench.sizes import Shape
from mmbench.tuning import cache as tuning_cache
from mmbench.tuning import strategies
from mmbench.variants import REGISTRY, format_params, param_points, parse_params, tuning_space

REPO = Path(__file__).resolve().parent.parent
RECORDED = REPO / "tests" / "data" / "recorded" / "tune-pipelined-h200.csv"  # an H200 tuning of pipelined
PIPELINED = REGISTRY["pipelined"]
H200 = tuning_cache.DeviceId("NVIDIA H200", "sm_90", 132)
H100 = tuning_cache.DeviceId("NVIDIA H100 80GB HBM3", "sm_90", 132)
H100_PCIE = tuning_cache.DeviceId("NVIDIA H100 PCIe", "sm_90", 114)
GH200 = tuning_cache.DeviceId("NVIDIA GH200 480GB", "sm_90", 132)  # no entries of its own in the shipped cache
G = tuning_cache.DeviceId("G")


def yours(path):
    """One cache file read as the user's: what lookup takes."""
    return (tuning_cache.CacheFile.read(path, tuning_cache.YOURS),)


def test_size_classes_come_from_the_operation():
    assert strategies.size_class(PIPELINED, Shape(2049, 2049, 2049)) == "2048u"


def test_strategies_choose_within_the_constrained_space():
    space = set(tuning_space(PIPELINED))
    brute = strategies.choose(PIPELINED, "brute", None)
    assert len(brute) == len(space) == 1005 and set(brute) == space
    assert brute[0] == param_points(PIPELINED)[0]  # the defaults come first, as the baseline
    rand = strategies.choose(PIPELINED, "random", 25, seed=1)
    assert len(rand) == len(set(rand)) == 25 and set(rand) <= space and rand[0] == brute[0]
    assert rand == strategies.choose(PIPELINED, "random", 25, seed=1) != strategies.choose(PIPELINED, "random", 25, seed=2)


@pytest.mark.parametrize("strategy,budget,needle", [("random", None, "needs --budget"),
                                                    ("brute", 5, "tries all 1005 configurations"),
                                                    ("annealing", 5, "unknown strategy 'annealing'")])
def test_strategy_errors(strategy, budget, needle):
    with pytest.raises(tuning_cache.TuneError, match=needle):
        strategies.choose(PIPELINED, strategy, budget)


def test_no_space_is_an_error():
    with pytest.raises(tuning_cache.TuneError, match="no tuning space"):
        strategies.choose(REGISTRY["cublas"], "brute", None)


@pytest.fixture(scope="module")
def recorded():
    return read_results(RECORDED)


def test_best_per_class_from_the_recorded_run(recorded):
    best = strategies.best_per_class(recorded, "pipelined")
    assert set(best) == {"1024", "2048", "2048u", "4096"}
    ok = recorded[recorded.status == "ok"]
    for cls, n in (("1024", 1024), ("2048", 2048), ("2048u", 2049), ("4096", 4096)):
        at = ok[ok.n == n]
        assert best[cls]["params"] == at.loc[at.gflops_median.idxmax(), "params"]  # one shape a class
        assert best[cls]["gflops"] == pytest.approx(at.gflops_median.max())


def test_a_configuration_failing_one_shape_of_its_class_is_out(recorded):
    rows = recorded.copy()
    top = strategies.best_per_class(rows, "pipelined")["4096"]["params"]
    rows = rows[rows.n.isin([2048, 4096])].copy()
    rows.loc[(rows.params == top) & (rows.n == 4096), "status"] = "wrong"
    assert strategies.best_per_class(rows, "pipelined")["4096"]["params"] != top


def test_replay_brute_equals_full_record_and_random_picks_from_its_sample(recorded):
    full = strategies.best_per_class(recorded, "pipelined")
    assert strategies.replay(recorded, PIPELINED, "brute", None) == full
    sample = strategies.replay(recorded, PIPELINED, "random", 10, seed=3)
    assert all(e["tried"] == 10 for e in sample.values())
    assert all(sample[c]["gflops"] <= full[c]["gflops"] for c in sample)
    recorded_configs = set(recorded.params)
    assert {e["params"] for e in sample.values()} <= recorded_configs


@pytest.mark.parametrize("strategy", ["tpe", "ga", "forest"])
def test_a_search_replays_within_each_class_among_what_was_recorded(recorded, strategy):
    """tpe and ga (Optuna) and forest (surrogate.py) search each class on its own: the budget counts the configurations evaluated,
    all of them recorded ones, the defaults first; seeded, the same twice; with the whole budget they
    find the recorded best."""
    pytest.importorskip("optuna")
    full = strategies.best_per_class(recorded, "pipelined")
    found = strategies.replay(recorded, PIPELINED, strategy, 12, seed=5)
    assert set(found) == set(full) and all(e["tried"] == 12 for e in found.values())
    assert all(found[c]["gflops"] <= full[c]["gflops"] for c in found)
    assert {e["params"] for e in found.values()} <= set(recorded.params)
    assert strategies.replay(recorded, PIPELINED, strategy, 12, seed=5) == found
    whole = strategies.replay(recorded, PIPELINED, strategy, 1000, seed=5)
    assert {c: e["params"] for c, e in whole.items()} == {c: e["params"] for c, e in full.items()}


def test_a_search_never_evaluates_outside_its_space_and_learns_from_failures():
    """Configurations outside the space cost no evaluation; failed ones count once, as the worst."""
    pytest.importorskip("optuna")
    from mmbench.tuning.search import search
    from mmbench.variants import tuning_space

    space = tuning_space(REGISTRY["gemv_tuned"])[::3]
    asked = []

    def evaluate(params):
        asked.append(params)
        return None if dict(params)["KERNEL"] == 1 else 1.0 + dict(params)["BLOCKSIZE"] / 1024

    found = search(REGISTRY["gemv_tuned"], "tpe", 40, 0, evaluate, space)
    assert len(found) == len(asked) == len(set(asked)) == 40 and set(asked) <= set(space)
    assert max(e.score for e in found if e.score is not None) > 1.0


def test_a_batched_tuning_replays_from_its_class_scores(tmp_path):
    """The batched engine's file (size_class, params, status, the class's score) reads as class scores; a
    configuration the tuner skipped (knowing before trying) is none of the class's."""
    rows = tmp_path / "b.csv"
    rows.write_text("size_class,params,status,gflops\n"
                    'cell00x00,"BLOCKSIZE=32,KERNEL=0,WORKSIZE_M=1,WORKSIZE_N=1",ok,2.0\n'
                    'cell00x00,"BLOCKSIZE=64,KERNEL=0,WORKSIZE_M=1,WORKSIZE_N=1",wrong,\n'
                    'cell00x00,"BLOCKSIZE=64,KERNEL=1,WORKSIZE_M=1,WORKSIZE_N=1",skipped,\n'
                    'cell00x01,"BLOCKSIZE=32,KERNEL=0,WORKSIZE_M=1,WORKSIZE_N=1",ok,1.5\n')
    classes, none = strategies.read_recorded(rows, REGISTRY["gemv_tuned"])
    assert none is None and classes == {
        "cell00x00": (1, {"BLOCKSIZE=32,KERNEL=0,WORKSIZE_M=1,WORKSIZE_N=1": 2.0,
                          "BLOCKSIZE=64,KERNEL=0,WORKSIZE_M=1,WORKSIZE_N=1": None}),
        "cell00x01": (1, {"BLOCKSIZE=32,KERNEL=0,WORKSIZE_M=1,WORKSIZE_N=1": 1.5})}
    best = strategies.replay(classes, REGISTRY["gemv_tuned"], "brute", None)
    assert best["cell00x00"] == {"params": "BLOCKSIZE=32,KERNEL=0,WORKSIZE_M=1,WORKSIZE_N=1", "gflops": 2.0,
                                 "shapes": 1, "tried": 1}


def test_cache_keeps_each_precision_and_layout_apart(tmp_path, recorded):
    """An entry tuned at bf16, nt names them (in its key and fields) and is found only there; an entry
    that names none is fp32, nn, as every entry before precisions."""
    path = tmp_path / "cache.json"
    best = strategies.best_per_class(recorded, "pipelined")
    tuning_cache.record(path, H200, "pipelined", "abc", {"4096": best["4096"]}, RECORDED, "bf16", "nt")
    entries = tuning_cache.load_cache(path)
    assert list(entries) == ["NVIDIA H200|pipelined|abc|4096|bf16|nt"]
    assert (entries["NVIDIA H200|pipelined|abc|4096|bf16|nt"]["dtype"],
            entries["NVIDIA H200|pipelined|abc|4096|bf16|nt"]["layout"]) == ("bf16", "nt")
    shape = Shape(4096, 4096, 4096)
    assert tuning_cache.lookup(yours(path), H200, PIPELINED, "abc", shape) is None
    assert tuning_cache.lookup(yours(path), H200, PIPELINED, "abc", shape, "bf16", "nn") is None
    got = tuning_cache.lookup(yours(path), H200, PIPELINED, "abc", shape, "bf16", "nt")
    assert format_params(got.params) == best["4096"]["params"]
    tuning_cache.record(path, H200, "pipelined", "abc", {"4096": {**best["4096"], "params": best["1024"]["params"]}},
                        RECORDED)  # fp32, nn beside it: neither replaces the other
    entries = tuning_cache.load_cache(path)
    assert sorted(entries) == ["NVIDIA H200|pipelined|abc|4096", "NVIDIA H200|pipelined|abc|4096|bf16|nt"]
    assert "dtype" not in entries["NVIDIA H200|pipelined|abc|4096"]
    assert format_params(tuning_cache.lookup(yours(path), H200, PIPELINED, "abc", shape).params) == best["1024"]["params"]


def test_cache_round_trip_and_invalidation(tmp_path, recorded):
    path = tmp_path / "cache.json"
    best = strategies.best_per_class(recorded, "pipelined")
    tuning_cache.record(path, H200, "pipelined", "abc", best, RECORDED)
    entries = tuning_cache.load_cache(path)
    assert len(entries) == 4 and "NVIDIA H200|pipelined|abc|2048u" in entries
    cache = yours(path)
    got = tuning_cache.lookup(cache, H200, PIPELINED, "abc", Shape(2049, 2049, 2049))
    assert format_params(got.params) == best["2048u"]["params"] and got.device == H200.name and not got.borrowed
    assert entries["NVIDIA H200|pipelined|abc|2048u"]["arch"] == "sm_90"
    assert entries["NVIDIA H200|pipelined|abc|2048u"]["sm_count"] == 132
    # Nearest class of the same alignment: 8192 -> 4096, 512 -> 1024, 1000x37x2049 (512u) -> 2048u.
    params = lambda shape: format_params(tuning_cache.lookup(cache, H200, PIPELINED, "abc", shape).params)  # noqa: E731
    assert params(Shape(8192, 8192, 8192)) == best["4096"]["params"]
    assert params(Shape(512, 512, 512)) == best["1024"]["params"]
    assert params(Shape(1000, 37, 2049)) == best["2048u"]["params"]
    # Another kernel source, or a GPU of another architecture or SM count: nothing.
    assert tuning_cache.lookup(cache, H200, PIPELINED, "changed", Shape(2048, 2048, 2048)) is None
    assert tuning_cache.lookup(cache, H100_PCIE, PIPELINED, "abc", Shape(2048, 2048, 2048)) is None
    assert tuning_cache.lookup(cache, tuning_cache.DeviceId("NVIDIA B200", "sm_100", 132), PIPELINED, "abc", Shape(8, 8, 8)) is None
    assert tuning_cache.lookup(cache, tuning_cache.DeviceId("NVIDIA H100 80GB HBM3"), PIPELINED, "abc", Shape(8, 8, 8)) is None


def test_a_gpu_without_entries_borrows_those_of_its_architecture_and_sm_count(tmp_path, recorded):
    path = tmp_path / "cache.json"
    best = strategies.best_per_class(recorded, "pipelined")
    tuning_cache.record(path, H200, "pipelined", "abc", best, RECORDED)
    got = tuning_cache.lookup(yours(path), H100, PIPELINED, "abc", Shape(4096, 4096, 4096))
    assert got.borrowed and got.device == "NVIDIA H200" and format_params(got.params) == best["4096"]["params"]
    # Its own entries, once it has any, come first.
    tuning_cache.record(path, H100, "pipelined", "abc", {"4096": {**best["1024"], "gflops": 1.0}}, RECORDED)
    own = tuning_cache.lookup(yours(path), H100, PIPELINED, "abc", Shape(4096, 4096, 4096))
    assert not own.borrowed and format_params(own.params) == best["1024"]["params"]


def test_run_uses_the_tuning_cache_and_says_so(tmp_path, monkeypatch, recorded):
    from mmbench import device

    monkeypatch.setattr(device, "device_identity", lambda: H200)
    monkeypatch.setattr(places, "SHIPPED_CACHE", tmp_path / "shipped.json")  # none: the given cache alone
    path = tmp_path / "cache.json"
    best = strategies.best_per_class(recorded, "pipelined")
    tuning_cache.record(path, H200, "pipelined", source.source_hash(PIPELINED), best, RECORDED)
    result = CliRunner().invoke(main, ["run", "-v", "pipelined", "-s", "2048,2049", "--tuning-cache", str(path),
                                       "--dry-run", "-o", str(tmp_path / "x.csv")])
    assert result.exit_code == 0, result.output
    assert f"pipelined: tuned parameters from your cache {path}" in result.output and "plan: 2 points" in result.output
    assert "for NVIDIA H200:" in result.output
    # Another GPU of the same architecture and SM count borrows the entries, and says whose.
    monkeypatch.setattr(device, "device_identity", lambda: H100)
    result = CliRunner().invoke(main, ["run", "-v", "pipelined", "-s", "2048", "--tuning-cache", str(path),
                                       "--dry-run", "-o", str(tmp_path / "x.csv")])
    assert result.exit_code == 0, result.output
    assert ("of NVIDIA H200: NVIDIA H100 80GB HBM3 has no entry, and NVIDIA H200 has the same architecture (sm_90) "
            "and SM count (132)") in result.output
    monkeypatch.setattr(device, "device_identity", lambda: H100_PCIE)
    result = CliRunner().invoke(main, ["run", "-v", "pipelined", "-s", "2048", "--tuning-cache", str(path),
                                       "--dry-run", "-o", str(tmp_path / "x.csv")])
    assert "using defaults" in result.output
    monkeypatch.setattr(device, "device_identity", lambda: H200)
    # --params overrides the cache
    result = CliRunner().invoke(main, ["run", "-v", "pipelined", "-s", "2048", "--tuning-cache", str(path),
                                       "--params", "STAGES=2", "--dry-run", "-o", str(tmp_path / "y.csv")])
    assert "tuned parameters" not in result.output
    # A changed kernel source invalidates the entries.
    data = json.loads(path.read_text())
    path.write_text(json.dumps({k.replace(source.source_hash(PIPELINED), "old"): {**v, "source_hash": "old"}
                                for k, v in data.items()}))
    result = CliRunner().invoke(main, ["run", "-v", "pipelined", "-s", "2048", "--tuning-cache", str(path),
                                       "--dry-run", "-o", str(tmp_path / "z.csv")])
    assert "have no entry for this GPU (NVIDIA H200 (sm_90, 132 SMs)), nor for one of its architecture and SM count, " \
           "with this kernel source; using defaults" in result.output


def test_tune_replay_command(tmp_path, monkeypatch):
    for suffix in (".csv", ".meta.json"):
        shutil.copy(RECORDED.with_suffix(suffix), tmp_path / f"rec{suffix}")
    # The recorded run measured warptile.cu before its shared code moved into kernels/common/; the
    # committed cache records that the PTX stayed the same (rehashed_from), so the run still counts.
    cache = tmp_path / "cache.json"
    shutil.copy(places.SHIPPED_CACHE, cache)
    before = len(json.loads(cache.read_text()))
    result = CliRunner().invoke(main, ["tune", "-v", "pipelined", "--strategy", "brute", "--replay",
                                       str(tmp_path / "rec.csv"), "--tuning-cache", str(cache)])
    assert result.exit_code == 0, result.output
    assert "the same PTX as today's" in result.output and "best n~2048u:" in result.output
    assert len(json.loads(cache.read_text())) == before  # the same four classes, kept or replaced
    # Caches that do not vouch for the old source (the shipped one would: it records the rehash): stale.
    monkeypatch.setattr(places, "SHIPPED_CACHE", tmp_path / "shipped.json")
    without = tmp_path / "none.json"
    result = CliRunner().invoke(main, ["tune", "-v", "pipelined", "--strategy", "brute", "--replay",
                                       str(tmp_path / "rec.csv"), "--tuning-cache", str(without)])
    assert result.exit_code == 2 and "would be stale" in result.output
    meta = json.loads((tmp_path / "rec.meta.json").read_text())
    for entry in meta["kernels"].values():
        entry["source_hash"] = source.source_hash(PIPELINED)  # as if measured on today's source
    (tmp_path / "rec.meta.json").write_text(json.dumps(meta))
    cache = tmp_path / "cache2.json"
    result = CliRunner().invoke(main, ["tune", "-v", "pipelined", "--strategy", "brute", "--replay",
                                       str(tmp_path / "rec.csv"), "--tuning-cache", str(cache)])
    assert result.exit_code == 0, result.output
    assert "best n~2048u:" in result.output and len(json.loads(cache.read_text())) == 4
    meta = json.loads((tmp_path / "rec.meta.json").read_text())
    for entry in meta["kernels"].values():
        entry["source_hash"] = "0123456789abcdef"
    (tmp_path / "rec.meta.json").write_text(json.dumps(meta))
    stale = CliRunner().invoke(main, ["tune", "-v", "pipelined", "--strategy", "brute", "--replay",
                                      str(tmp_path / "rec.csv"), "--tuning-cache", str(cache)])
    assert stale.exit_code == 2 and "would be stale; tune again" in stale.output


def test_pinned_parameters_narrow_the_space():
    pinned = {"BK": (16,), "BM": (128,), "BN": (128,), "THREADS": (256,), "TM": (4,), "TN": (4,), "WM": (32,),
              "WN": (64,), "WNITER": (2,)}
    configs = strategies.choose(PIPELINED, "brute", None, pinned=pinned)
    assert sorted(dict(c)["STAGES"] for c in configs) == [2, 3]  # STAGES=4 needs 64 KiB of shared memory
    with pytest.raises(tuning_cache.TuneError, match="has no parameter BLOCK"):
        strategies.choose(PIPELINED, "brute", None, pinned={"BLOCK": (8,)})
    with pytest.raises(tuning_cache.TuneError, match="no configuration"):
        strategies.choose(PIPELINED, "brute", None, pinned={"BM": (64,), "WM": (128,)})


def test_record_keeps_the_faster_entry(tmp_path):
    path = tmp_path / "cache.json"
    entry = {"params": "A=1", "gflops": 100.0, "shapes": 1, "tried": 1}
    tuning_cache.record(path, G, "pipelined", "h", {"4096": entry}, RECORDED)
    tuning_cache.record(path, G, "pipelined", "h", {"4096": {**entry, "params": "A=2", "gflops": 90.0}}, RECORDED)
    assert tuning_cache.load_cache(path)["G|pipelined|h|4096"]["params"] == "A=1"
    tuning_cache.record(path, G, "pipelined", "h", {"4096": {**entry, "params": "A=3", "gflops": 110.0}}, RECORDED)
    assert tuning_cache.load_cache(path)["G|pipelined|h|4096"]["params"] == "A=3"


def test_per_shape_entries_win_over_size_classes(tmp_path, recorded):
    """--per-shape keeps one entry per exact shape; lookup takes it first, other shapes of its
    class still get the class entry, and shape entries never stand in for a class."""
    path = tmp_path / "cache.json"
    per_class = strategies.best_per_class(recorded, "pipelined")
    per_shape = strategies.best_per_class(recorded, "pipelined", per_shape=True)
    assert set(per_shape) == {"1024x1024x1024", "2048x2048x2048", "2049x2049x2049", "4096x4096x4096"}
    assert strategies.describe(per_shape)[0].startswith("n~1024x1024x1024:")
    # Make the exact shape's pick differ from its class's, as it would after a per-shape pass.
    other = next(p for p in recorded[recorded.status == "ok"].params.unique() if p != per_class["2048u"]["params"])
    shape_entry = {**per_shape["2049x2049x2049"], "params": other}
    tuning_cache.record(path, H200, "pipelined", "abc", {**per_class, "2049x2049x2049": shape_entry}, RECORDED)
    cache = yours(path)
    got = lambda shape: format_params(tuning_cache.lookup(cache, H200, PIPELINED, "abc", shape).params)  # noqa: E731
    assert got(Shape(2049, 2049, 2049)) == other
    assert got(Shape(2047, 2047, 2047)) == per_class["2048u"]["params"]
    only_shapes = tmp_path / "shapes.json"
    tuning_cache.record(only_shapes, H200, "pipelined", "abc", {"2049x2049x2049": shape_entry}, RECORDED)
    assert tuning_cache.lookup(yours(only_shapes), H200, PIPELINED, "abc", Shape(2047, 2047, 2047)) is None


def test_candidates_are_the_fastest_at_any_shape(recorded):
    ok = recorded[(recorded.variant == "pipelined") & (recorded.status == "ok")]
    picks = {format_params(p) for p in strategies.candidates(recorded, PIPELINED, 2)}
    expected = set()
    for _, g in ok.groupby(["m", "n", "k"]):
        expected |= set(g.sort_values("gflops_median", ascending=False).params.head(2))
    assert picks == expected and 2 <= len(picks) <= 8
    assert {format_params(p) for p in strategies.candidates(recorded, PIPELINED, 1)} < picks


def test_candidates_recorded_before_a_new_parameter_take_each_of_its_values():
    import pandas as pd

    dbuf = REGISTRY["dbuf"]
    old = "BK=16,BM=128,BN=128,MINB=2,SPLITK=1,THREADS=256,TM=8,TN=4,VEC4=1,WM=64,WN=32,WNITER=2"  # no STAGE, STRIP, SK, ORDER
    gone = "BK=16,BM=128,BN=128,MINB=2,SPLITK=1,THREADS=256,TM=8,TN=4,VEC4=1,WM=64,WN=32,WNITER=2,STAGE=1,STRIP=3"
    rows = pd.DataFrame({"variant": "dbuf", "status": "ok", "m": [64, 64], "n": 64, "k": 64,
                         "gflops_median": [2.0, 1.0], "params": [old, gone]})
    picks = {format_params(p) for p in strategies.candidates(rows, dbuf, 2)}
    # the old point stands for STAGE 0/1 x STRIP 0/4 x SK 0/1 x ORDER 0/1; STRIP=3 is outside today's space
    assert picks == {format_params(parse_params(f"{old},STAGE={a},STRIP={b},SK={c},ORDER={d}"))
                     for a in (0, 1) for b in (0, 4) for c in (0, 1) for d in (0, 1)}


def test_tune_candidates_narrow_the_search(tmp_path):
    for suffix in (".csv", ".meta.json"):
        shutil.copy(RECORDED.with_suffix(suffix), tmp_path / f"rec{suffix}")
    result = CliRunner().invoke(main, ["tune", "-v", "pipelined", "-s", "512:600", "--strategy", "brute", "--per-shape",
                                       "--candidates", str(tmp_path / "rec.csv"), "--top", "1", "--dry-run"])
    assert result.exit_code == 0, result.output
    top1 = len(strategies.candidates(read_results(tmp_path / "rec.csv"), PIPELINED, 1))
    assert f"trying {top1} (brute) at 8 shape(s)" in result.output
    missing = CliRunner().invoke(main, ["tune", "-v", "pipelined", "--candidates", str(tmp_path / "none.csv"),
                                        "--dry-run"])
    assert missing.exit_code == 2 and "none.csv" in missing.output
    foreign = CliRunner().invoke(main, ["tune", "-v", "warptile", "--candidates", str(tmp_path / "rec.csv"), "--dry-run"])
    assert foreign.exit_code == 2 and "no verified configuration of warptile" in foreign.output


def test_every_shipped_cache_entry_names_its_gpu_architecture_and_sm_count():
    cache = tuning_cache.load_cache(places.SHIPPED_CACHE)
    assert cache and all(e["arch"].startswith("sm_") and e["sm_count"] > 0 for e in cache.values())


def test_every_shipped_cache_entry_is_of_a_kernel_source_that_exists():
    """A run takes an entry only at its variant's current source hash: an entry of an older source is
    never read, only carried (scripts/same_code.py moves entries whose machine code did not change)."""
    cache = tuning_cache.load_cache(places.SHIPPED_CACHE)
    current = {name: source.source_hash(REGISTRY[name]) for name in {e["variant"] for e in cache.values()}}
    stale = sorted({(e["variant"], e["source_hash"]) for e in cache.values() if e["source_hash"] != current[e["variant"]]})
    assert not stale, f"entries of sources no kernel has now: {stale}"


# -- where the caches live: the shipped one inside the package, the user's own read first --------------
def _sha(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def _shipped_params(shape: Shape) -> str:
    """What the shipped cache alone gives pipelined at a shape on an H200."""
    shipped = (tuning_cache.CacheFile.read(places.SHIPPED_CACHE, tuning_cache.SHIPPED),)
    return format_params(tuning_cache.lookup(shipped, H200, PIPELINED, source.source_hash(PIPELINED), shape).params)


def test_run_from_an_unrelated_folder_takes_the_shipped_cache_and_says_so(tmp_path, monkeypatch):
    """The issue's bug: the cache was read from configs/ under the current folder, so a run from
    any other folder silently used the defaults."""
    from mmbench import device

    monkeypatch.setattr(device, "device_identity", lambda: H200)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["run", "-v", "pipelined", "-s", "2048", "--dry-run", "-o", "x.csv"])
    assert result.exit_code == 0, result.output
    tuned = _shipped_params(Shape(2048, 2048, 2048))
    assert tuned != format_params(param_points(PIPELINED)[0])  # the shipped tuning is not the defaults
    assert (f"pipelined: tuned parameters from the shipped cache {places.SHIPPED_CACHE} for NVIDIA H200: {tuned}"
            in result.output)
    assert list(tmp_path.iterdir()) == []  # a dry run writes nothing


def test_your_cache_wins_over_the_shipped_one_per_size_class(tmp_path, monkeypatch):
    """An entry of the user's cache (here through $MMBENCH_TUNING_CACHE) replaces the shipped entry
    of its GPU, variant, source and size class; the shipped entries still serve the other classes."""
    from mmbench import device

    monkeypatch.setattr(device, "device_identity", lambda: H200)
    monkeypatch.chdir(tmp_path)
    mine = tmp_path / "mine" / "cache.json"
    monkeypatch.setenv(places.CACHE_ENV, str(mine))
    defaults = format_params(param_points(PIPELINED)[0])
    tuning_cache.record(mine, H200, "pipelined", source.source_hash(PIPELINED),
                {"2048": {"params": defaults, "gflops": 1.0, "shapes": 1, "tried": 1}}, RECORDED)
    result = CliRunner().invoke(main, ["run", "-v", "pipelined", "-s", "2048,4096", "--dry-run", "-o", "x.csv"])
    assert result.exit_code == 0, result.output
    assert f"pipelined: tuned parameters from your cache {mine} for NVIDIA H200: {defaults}" in result.output
    assert (f"pipelined: tuned parameters from the shipped cache {places.SHIPPED_CACHE} for NVIDIA H200: "
            f"{_shipped_params(Shape(4096, 4096, 4096))}") in result.output
    # --tuning-cache PATH stands for the user's cache in this run: the variable's file is not read.
    other = tmp_path / "other.json"
    other.write_text("{}\n")
    result = CliRunner().invoke(main, ["run", "-v", "pipelined", "-s", "2048", "--tuning-cache", str(other),
                                       "--dry-run", "-o", "x.csv"])
    assert result.exit_code == 0 and "from your cache" not in result.output
    assert f"from the shipped cache {places.SHIPPED_CACHE}" in result.output


def test_lookup_merges_the_caches_entry_by_entry():
    """One lookup over the caches in order: the user's entry wins for its key only; a user's entry
    of another GPU of the kind does not displace the shipped entries of this GPU."""
    def entry(device, cls, params):
        return {"device": device, "variant": "pipelined", "source_hash": "h", "size_class": cls, "params": params,
                "gflops": 1.0, "arch": "sm_90", "sm_count": 132}

    defaults, other = format_params(param_points(PIPELINED)[0]), _shipped_params(Shape(64, 64, 64))
    shipped = tuning_cache.CacheFile(Path("shipped.json"), tuning_cache.SHIPPED,
                             {"a": entry(H200.name, "1024", other), "b": entry(H200.name, "4096", other)})
    mine = tuning_cache.CacheFile(Path("mine.json"), tuning_cache.YOURS,
                          {"c": entry(H200.name, "1024", defaults), "d": entry(H100.name, "4096", defaults)})
    got = lambda shape: tuning_cache.lookup((mine, shipped), H200, PIPELINED, "h", shape)  # noqa: E731
    assert got(Shape(1024, 1024, 1024)) == tuning_cache.Tuned(parse_params(defaults), H200.name, False, Path("mine.json"),
                                                      tuning_cache.YOURS)
    assert got(Shape(4096, 4096, 4096)) == tuning_cache.Tuned(parse_params(other), H200.name, False, Path("shipped.json"),
                                                      tuning_cache.SHIPPED)
    # The H100 has its own entry in the user's cache only: it takes it, not the H200's borrowed ones.
    assert tuning_cache.lookup((mine, shipped), H100, PIPELINED, "h", Shape(4096, 4096, 4096)).origin == tuning_cache.YOURS
    assert tuning_cache.lookup((shipped,), H100, PIPELINED, "h", Shape(4096, 4096, 4096)).borrowed
    # A shipped entry of the exact shape does not hide the class you tuned; yours of the shape wins over both.
    shipped.entries["e"] = entry(H200.name, "1024x1024x1024", other)
    assert got(Shape(1024, 1024, 1024)).origin == tuning_cache.YOURS
    assert got(Shape(1000, 1000, 1000)).origin == tuning_cache.YOURS  # its class, 1024, is yours
    mine.entries["f"] = entry(H200.name, "4096x4096x4096", defaults)
    assert got(Shape(4096, 4096, 4096)).cache == Path("mine.json")
    assert got(Shape(4095, 4096, 4096)).cache == Path("shipped.json")  # its class: your entry is another shape's


def test_tuning_caches_can_be_switched_off_for_one_run(tmp_path, monkeypatch):
    from mmbench import device

    monkeypatch.setattr(device, "device_identity", lambda: H200)
    result = CliRunner().invoke(main, ["run", "-v", "pipelined,cublas", "-s", "2048", "--tuning-cache", "none",
                                       "--dry-run", "-o", str(tmp_path / "x.csv")])
    assert result.exit_code == 0, result.output
    assert "pipelined: tuning caches off; default parameters" in result.output
    assert "tuned parameters from" not in result.output


def test_without_a_gpu_a_run_says_it_takes_the_defaults(tmp_path, monkeypatch):
    from mmbench import device

    monkeypatch.setattr(device, "device_identity", lambda: None)
    result = CliRunner().invoke(main, ["run", "-v", "pipelined", "-s", "2048", "--dry-run", "-o", str(tmp_path / "x.csv")])
    assert result.exit_code == 0, result.output
    assert "pipelined: no GPU found here to look up its tuned parameters for; using defaults" in result.output


def _one_line_exit_2(result, needle: str) -> None:
    lines = result.output.rstrip("\n").splitlines()
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and lines[0].startswith("Error: ") and needle in lines[0], result.output


def _snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): _sha(p) if p.is_file() else "dir" for p in sorted(root.rglob("*"))}


BAD_CACHES = {  # what a file holds -> what the one line says of it
    "list.json": ("[]", "expected a JSON object of entries, found a list"),
    "number.json": ("3", "expected a JSON object of entries, found a number"),
    "scalar-entry.json": ('{"k": 1}', "entry 'k' is a number, not an object"),
    "no-keys.json": ('{"k": {"device": "G"}}', "entry 'k' has no variant"),
    "bad-params.json": ('{"k": {"device": "G", "variant": "v", "source_hash": "h", "size_class": "1024", '
                        '"params": "BM", "gflops": 1}}', "entry 'k' has params 'BM'; expected NAME=VALUE"),
    "no-score.json": ('{"k": {"device": "G", "variant": "v", "source_hash": "h", "size_class": "1024", '
                      '"params": "BM=1"}}', "entry 'k' has no score"),
    "bad.json": ("{", "is not a tuning cache (bad JSON"),
}


@pytest.mark.parametrize("how", ["option", "variable"])
@pytest.mark.parametrize("name", sorted(BAD_CACHES))
@pytest.mark.parametrize("command", [["run", "-v", "pipelined", "-s", "64", "-o", "r.csv"],
                                     ["tune", "-v", "pipelined", "-s", "64", "-o", "t.csv", "--budget", "2"]])
def test_a_cache_of_the_wrong_shape_is_one_line_naming_it(tmp_path, monkeypatch, command, name, how):
    """Valid JSON that is no tuning cache (a list, a number, entries that are not objects or lack
    what lookup reads), given by option or by $MMBENCH_TUNING_CACHE: one line naming the file, exit
    2, nothing written (tune refuses before measuring)."""
    monkeypatch.chdir(tmp_path)
    text, needle = BAD_CACHES[name]
    (tmp_path / name).write_text(text)
    if how == "option":
        command = [*command, "--tuning-cache", name]
    else:
        monkeypatch.setenv(places.CACHE_ENV, name)
    before = _snapshot(tmp_path)
    _one_line_exit_2(CliRunner().invoke(main, command), f"{name} is not a tuning cache")
    _one_line_exit_2(CliRunner().invoke(main, command), needle)
    assert _snapshot(tmp_path) == before


def test_a_tuning_cache_that_is_not_there_is_an_error_for_run(tmp_path, monkeypatch):
    """run reads --tuning-cache PATH: a path with no file was silently an empty cache."""
    monkeypatch.chdir(tmp_path)
    for args in (["run", "-v", "pipelined", "-s", "64", "-o", "r.csv", "--tuning-cache", "nope.json"],
                 ["run", "-v", "blas", "-s", "64", "--tuning-cache", "nope.json"],
                 ["run", "-v", "pipelined", "-s", "64", "--tuning-cache", "nope.json", "--dry-run"]):
        _one_line_exit_2(CliRunner().invoke(main, args), f"--tuning-cache '{args[args.index('--tuning-cache') + 1]}': "
                                                         f"no such file")
    _one_line_exit_2(CliRunner().invoke(main, ["run", "-v", "pipelined", "-s", "64", "--tuning-cache", str(tmp_path)]),
                     f"--tuning-cache '{tmp_path}': a folder; name an existing tuning cache (a .json file)")
    assert list(tmp_path.iterdir()) == []


def test_a_place_where_no_cache_can_be_written_is_refused_before_tuning(tmp_path, monkeypatch):
    from mmbench.engine import session

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(session, "execute", lambda *a, **k: pytest.fail("measured before refusing"))
    Path("a-file").write_text("")
    for args, needle in (([], "tuning cache a-file/cache.json cannot be created: a-file is not a folder"),
                         (["--tuning-cache", "none"], "--tuning-cache none is for run")):
        _one_line_exit_2(CliRunner().invoke(main, ["tune", "-v", "pipelined", "-s", "64", "--budget", "2", "-o", "t.csv",
                                                   *(args or ["--tuning-cache", "a-file/cache.json"])]), needle)
    monkeypatch.setenv(places.CACHE_ENV, "a-file/cache.json")
    _one_line_exit_2(CliRunner().invoke(main, ["tune", "-v", "pipelined", "-s", "64", "--budget", "2", "-o", "t.csv"]),
                     "tuning cache a-file/cache.json cannot be created")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


def test_tune_writes_to_your_cache_never_the_shipped_one(tmp_path, monkeypatch):
    """Both ways a tuning records (the points engine's record_tuning, a replay) go to the user's
    cache by default, and say so; the shipped file is unchanged."""
    from mmbench.engine import session

    monkeypatch.chdir(tmp_path)
    mine = tmp_path / "data" / "mmbench" / "tuning-cache.json"
    monkeypatch.setenv(places.CACHE_ENV, str(mine))
    shipped = _sha(places.SHIPPED_CACHE)

    def measured(points, settings, output, about, **kwargs):  # the recorded run stands for the GPU's
        for suffix in (".csv", ".meta.json"):
            shutil.copy(RECORDED.with_suffix(suffix), output.with_suffix(suffix))
        return session.Outcome(output, "finished")

    monkeypatch.setattr(session, "execute", measured)
    result = CliRunner().invoke(main, ["tune", "-v", "pipelined", "-s", "1024,2048,2049,4096", "--budget", "3",
                                       "--strategy", "random", "-o", "t.csv"])
    assert result.exit_code == 0, result.output
    assert f"written to your cache {mine} (NVIDIA H200, pipelined source" in result.output
    assert {e["size_class"] for e in tuning_cache.load_cache(mine).values()} == {"1024", "2048", "2048u", "4096"}
    mine.unlink()
    for suffix in (".csv", ".meta.json"):
        shutil.copy(RECORDED.with_suffix(suffix), tmp_path / f"rec{suffix}")
    result = CliRunner().invoke(main, ["tune", "-v", "pipelined", "--strategy", "brute", "--replay", "rec.csv"])
    assert result.exit_code == 0, result.output
    assert f"written to your cache {mine}" in result.output and len(tuning_cache.load_cache(mine)) == 4
    dry = CliRunner().invoke(main, ["tune", "-v", "pipelined", "--budget", "3", "--dry-run"])
    assert f"tuning cache: your cache {mine}" in dry.output
    assert _sha(places.SHIPPED_CACHE) == shipped


def test_the_batched_tuner_records_in_your_cache(tmp_path, monkeypatch):
    from mmbench.tuning import batched_run

    mine = tmp_path / "tuning-cache.json"
    monkeypatch.setenv(places.CACHE_ENV, str(mine))
    given = {}

    def tuned(request, *args, **kwargs):
        given["cache"] = request.cache_path
        return {}, G, {}

    monkeypatch.setattr(batched_run, "tune_batched", tuned)
    result = CliRunner().invoke(main, ["tune", "-v", "gemv_tuned", "-s", "cell:3x3", "--budget", "2",
                                       "-o", str(tmp_path / "t.csv")])
    assert result.exit_code == 0, result.output
    assert given["cache"] == mine and f"written to your cache {mine}" in result.output


def test_the_default_user_cache_is_in_the_user_data_folder(monkeypatch):
    from platformdirs import user_data_path

    monkeypatch.delenv(places.CACHE_ENV, raising=False)
    assert places.user_cache() == user_data_path("mmbench") / "tuning-cache.json"
    assert tuning_cache.read_caches()[0].path == places.user_cache()
    assert [c.origin for c in tuning_cache.read_caches()] == [tuning_cache.YOURS, tuning_cache.SHIPPED]
    assert [c.origin for c in tuning_cache.read_caches(places.SHIPPED_CACHE)] == [tuning_cache.SHIPPED]  # read once


def test_the_metadata_records_where_each_variants_parameters_came_from(tmp_path, monkeypatch):
    """The run hands the caches' record to the session (per variant: the cache, yours or shipped, the
    GPU its entries were measured on, borrowed or not), which keeps it in its invocation."""
    from mmbench import device
    from mmbench.engine import session
    from mmbench.engine.plan import Point, Settings

    monkeypatch.setattr(device, "device_identity", lambda: GH200)  # borrows the shipped entries of its kind
    handed, execute = {}, session.execute
    monkeypatch.setattr(session, "execute", lambda *a, **k: handed.update(k) or session.Outcome(a[2], "finished"))
    monkeypatch.setattr("mmbench.cli.running._summary", lambda output: "")
    result = CliRunner().invoke(main, ["run", "-v", "pipelined,multistage,tile2d", "-s", "2048,4096",
                                       "-o", str(tmp_path / "r.csv")])
    assert result.exit_code == 0, result.output
    record = handed["tuning"]
    assert [c["origin"] for c in record["read"]] == [tuning_cache.YOURS, tuning_cache.SHIPPED]
    assert record["read"][1] == {"path": str(places.SHIPPED_CACHE), "origin": tuning_cache.SHIPPED,
                                 "entries": len(tuning_cache.load_cache(places.SHIPPED_CACHE))}
    shipped = {"cache": str(places.SHIPPED_CACHE), "origin": tuning_cache.SHIPPED,
               "measured_on": "NVIDIA H100 80GB HBM3", "borrowed": True, "shapes": 2}  # the first of its kind by name
    assert record["variants"]["pipelined"] == record["variants"]["multistage"] == [shipped]
    assert record["variants"]["tile2d"] == [{"cache": None, "origin": "defaults", "measured_on": None,
                                            "borrowed": False, "shapes": 2}]
    # The session writes it into this invocation's record (a resume may read other caches).
    out = tmp_path / "blas.csv"
    outcome = execute([Point(REGISTRY["blas"], (), Shape(32, 32, 32), "hot")], Settings(runs=1), out, {"name": "t"},
                           ["mmbench"], say=lambda _: None, tuning=record)
    assert outcome.state == "finished"
    meta = json.loads(out.with_suffix(".meta.json").read_text())
    assert meta["invocations"][-1]["tuning_caches"] == record


def test_the_wheel_ships_the_tuning_cache_beside_the_kernels(tmp_path):
    """hatchling (the build backend) puts mmbench/ into the wheel: the shipped cache travels with it."""
    import zipfile

    from hatchling.builders.wheel import WheelBuilder

    (wheel,) = WheelBuilder(str(REPO)).build(directory=str(tmp_path), versions=["standard"])
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "mmbench/data/tuning-cache.json" in names and "mmbench/kernels/gemm/dbuf.cu" in names
    assert zipfile.ZipFile(wheel).read("mmbench/data/tuning-cache.json") == places.SHIPPED_CACHE.read_bytes()


def test_the_shipped_cache_is_package_data():
    from importlib.resources import files

    assert (files("mmbench") / "data" / "tuning-cache.json").is_file()
    assert Path(str(files("mmbench") / "data" / "tuning-cache.json")) == places.SHIPPED_CACHE


def test_the_strategy_benchmark_replays_each_strategy_on_each_recorded_space(tmp_path):
    """tune-benchmark on the recorded pipelined run (4 classes, one shape each): a row per space and
    strategy in results.csv, the summary printed, the curves drawn; random search's expectation is
    exact (by enumeration on a small space) and the score pins its formula."""
    pytest.importorskip("optuna")
    import itertools

    import numpy as np
    import pandas as pd

    from mmbench.tuning import benchmark

    out = tmp_path / "b"
    result = CliRunner().invoke(main, ["tune-benchmark", "-v", "pipelined", str(RECORDED), "--seeds", "3",
                                       "--budget", "0.2", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "4 recorded spaces, budget 20% of each, 3 seeds" in result.output
    rows = pd.read_csv(out / "results.csv")
    assert len(rows) == 16 and set(rows.strategy) == {"random", "tpe", "ga", "forest"} and (out / "strategies.png").exists()
    assert (rows.median_fraction <= 1).all() and (rows.budget == (0.2 * rows["size"]).round()).all()
    values = [3.0, 1.0, 4.0, None, 5.0, 9.0, 2.0, 6.0]
    space = benchmark.Space("t", {(("A", i),): v for i, v in enumerate(values)})
    for b in (1, 3, 8):
        exact = np.mean([max(v or 0.0 for v in c) for c in itertools.combinations(values, b)]) / 9
        assert benchmark.random_expected(space, b) == pytest.approx(exact)
    found = np.array([[4 / 9, 5 / 9, 1.0]])  # one seed: 4, then 5, then 9 after three evaluations
    base = [benchmark.random_expected(space, b) for b in (1, 3)]
    assert benchmark.score(found, space, [1, 3]) == pytest.approx(np.mean([(4 / 9 - base[0]) / (1 - base[0]),
                                                                             (1.0 - base[1]) / (1 - base[1])]))
    bad = CliRunner().invoke(main, ["tune-benchmark", "-v", "pipelined", str(RECORDED), "--strategy", "sa"])
    assert bad.exit_code == 2 and "--strategy 'sa'; choose from: random, tpe, ga, forest" in bad.output


def test_a_recorded_space_replays_under_kernel_tuners_simulation_mode():
    """The converter writes a space as KernelTuner's cache (score the objective, failed runs as it
    writes them); its strategies then replay it: distinct configurations, at most the budget, all
    recorded ones, the best found never above the recorded best."""
    pytest.importorskip("kernel_tuner")
    from mmbench.tuning import benchmark

    classes, _ = strategies.read_recorded(RECORDED, PIPELINED)
    space = benchmark.spaces_of(classes, "rec")[0]
    doc = benchmark.kernel_tuner_cache(space, PIPELINED)
    assert doc["tune_params_keys"] == sorted(PIPELINED.space) and len(doc["cache"]) == len(space.scores)
    scores = {e["score"] for e in doc["cache"].values()}
    assert max(s for s in scores if isinstance(s, float)) == space.best
    for strategy in ("kt:random_sample", "kt:genetic_algorithm"):
        curve = benchmark.trace(space, PIPELINED, strategy, 10, seed=1)
        assert 1 <= len(curve) <= 10 and (np.diff(curve) >= 0).all() and curve[-1] <= 1.0


def test_the_strategy_benchmark_replays_our_searches_in_the_gpus_batches():
    """--batch 8: the forest proposes 8 before hearing them, as on the GPU: as many evaluations as the
    budget, each recorded, the first batch's choices those of one-by-one up to where the model starts,
    and the curve then differs from one-by-one's (the choices are not the same)."""
    from mmbench.tuning import benchmark, search

    classes, _ = strategies.read_recorded(RECORDED, PIPELINED)
    space = benchmark.spaces_of(classes, "rec")[0]
    one = search.search(PIPELINED, "forest", 24, 2, space.scores.get, space.scores)
    eight = search.search(PIPELINED, "forest", 24, 2, space.scores.get, space.scores, batch=8)
    assert len(one) == len(eight) == 24 and {e.params for e in eight} <= set(space.scores)
    assert [e.params for e in one][:8] == [e.params for e in eight][:8]  # the defaults and the seed's draws
    assert [e.params for e in one] != [e.params for e in eight]
    curve = benchmark.trace(space, PIPELINED, "forest", 24, 2, batch=8)
    assert len(curve) == 24 and (np.diff(curve) >= 0).all()
    result = CliRunner().invoke(main, ["tune-benchmark", "-v", "pipelined", str(RECORDED), "--seeds", "2",
                                       "--strategy", "forest", "--batch", "8", "--budget", "0.2"])
    assert result.exit_code == 0, result.output
    assert "batches of 8" in result.output


def test_a_tuning_measures_its_costliest_shape_first(tmp_path):
    """With a cold compile cache the first shape's points wait on nvcc module by module, so its
    measuring overlaps the builds: the costliest shape goes first (ties keep the order given), each
    shape's configurations in the strategy's order."""
    from mmbench.sizes import Shape
    from mmbench.tuning.points_run import points_of
    from mmbench.tuning.request import TuneRequest
    from mmbench.variants import REGISTRY, param_points

    configs = tuple(param_points(REGISTRY["dbuf"])[:1]) + (tuple(sorted({"BM": 64, "BN": 64}.items())),)
    shapes = (Shape(2048, 2048, 2048), Shape(4096, 4096, 4096), Shape(1000, 37, 2049), Shape(37, 1000, 2049))
    request = TuneRequest(REGISTRY["dbuf"], shapes, configs, tmp_path / "t.csv", tmp_path / "c.json", "x")
    points = points_of(request)
    assert [p.shape for p in points[::2]] == [shapes[1], shapes[0], shapes[2], shapes[3]]
    assert [p.params for p in points[:2]] == list(configs)
