"""Tuning plans (`mmbench tune --plan`): the shipped ladder plan, bad plans, the points a plan
runs, its write-back per shape and variant, and its resume, all without a GPU."""

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from mmbench import places
from mmbench.cli import main
from mmbench.config import ConfigError, load_config
from mmbench.ops import get_op
from mmbench.tuning import cache as tuning_cache
from mmbench.tuning.plan import SHIPPED_PLANS, load_plan
from mmbench.variants import REGISTRY, format_params, tuning_space

REPO = Path(__file__).resolve().parent.parent
RECORDED = REPO / "tests" / "data" / "recorded" / "tune-pipelined-h200.csv"  # an H200 tuning of pipelined


def _plan(tmp_path: Path, body: str, head: str = 'sizes = "1024,2048,2049,4096"\n[run]\nruns = 5\nwarmup = 2\n') -> Path:
    path = tmp_path / "p.toml"
    path.write_text(head + body)
    return path


def _recorded_configs(n: int) -> list[str]:
    return list(pd.read_csv(RECORDED).params.unique()[:n])


def _one_line_exit_2(result, needle: str) -> None:
    assert result.exit_code == 2, result.output
    (line,) = result.output.strip().splitlines()
    assert needle in line, line


def test_the_ladder_plan_tunes_at_the_limits_studys_sizes_within_each_space():
    plan = load_plan("ladder")
    limits = load_config(REPO / "configs" / "limits.toml")
    gemm = get_op("gemm")
    wanted = {s for sweep in limits.sweeps for s in gemm.parse_sizes(sweep.sizes)}
    assert set(gemm.parse_sizes(plan.sizes)) == wanted and len(wanted) == 153
    assert {s.variant.name for s in plan.searches} <= {v.name for sweep in limits.sweeps for v in sweep.variants}
    for s in plan.searches:
        assert set(s.configs) <= set(tuning_space(s.variant)) and s.configs
    points = plan.points()
    assert len(points) == len({p.key for p in points}) == sum(len(s.shapes) * len(s.configs) for s in plan.searches)
    volumes = [p.shape.m * p.shape.n * p.shape.k for p in points]
    assert volumes == sorted(volumes)  # shape by shape, small first: an interrupted plan has whole shapes
    assert plan.path == SHIPPED_PLANS / "ladder.toml" and len(plan.digest) == 64


@pytest.mark.parametrize("body,needle", [
    ('[[search]]\nvariant = "dbuff"\nparams = "BK=8"\n', "search[0].variant: unknown variant 'dbuff'"),
    ('[[search]]\nvariant = "pipelined"\n', "search[0]: give either configurations"),
    ('[[search]]\nvariant = "pipelined"\nparams = "BK=8"\nconfigurations = ["BK=8"]\n', "give either configurations"),
    ('[[search]]\nvariant = "pipelined"\nconfigurations = ["BK=8,BM=64"]\n',
     "search[0].configurations[0]: 'BK=8,BM=64' is not a configuration of pipelined's tuning space (it lacks BN"),
    ('[[search]]\nvariant = "pipelined"\nconfigurations = ["nonsense"]\n', "(expected K=V,... pairs)"),
    ('[[search]]\nvariant = "pipelined"\nparams = "BQ=8"\n', "search[0].params: 'pipelined' has no parameter BQ"),
    ('[[search]]\nvariant = "pipelined"\nsizes = "0:3"\nparams = "BK=8"\n', "search[0].sizes:"),
    ('[[search]]\nvariant = "cublas"\nparams = "BK=8"\n', "'cublas' has no tuning space"),
    ('[[serch]]\nvariant = "pipelined"\n', "unknown key 'serch'"),
    ('[[search]]\nvariant = "pipelined"\nparams = "BK=8"\ndtype = "bf16"\n',
     "search[0].dtype: 'bf16'; pipelined takes fp32"),
    ('[[search]]\nvariant = "tc_ws"\nparams = "BN=64"\nlayout = "nn"\n', "search[0].layout: 'nn'; tc_ws takes nt"),
])
def test_a_bad_plan_is_one_line_naming_the_file_and_key(tmp_path, monkeypatch, body, needle):
    monkeypatch.chdir(tmp_path)
    plan = _plan(tmp_path, body)
    with pytest.raises(ConfigError, match="p.toml"):
        load_plan(str(plan))
    _one_line_exit_2(CliRunner().invoke(main, ["tune", "--plan", str(plan), "--tuning-cache", "c.json"]), needle)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.toml"]


def test_tune_takes_a_variant_or_a_plan_and_a_plan_refuses_what_it_names(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(places.CACHE_ENV, str(tmp_path / "c.json"))
    _one_line_exit_2(CliRunner().invoke(main, ["tune"]), "give --variant NAME (the variant to tune) or --plan PLAN "
                                                         "(shipped: ladder, tensor-cores)")
    for extra in (["-v", "dbuf"], ["--runs", "5"], ["-s", "64"], ["--per-shape"], ["--params", "BK=8"]):
        _one_line_exit_2(CliRunner().invoke(main, ["tune", "--plan", "ladder", *extra]),
                         "the plan (--plan ladder) names the variants, sizes, configurations and measurement settings")
    _one_line_exit_2(CliRunner().invoke(main, ["tune", "--plan", "nope"]), "--plan nope: no such plan file; shipped "
                                                                          "plans: ladder")
    _one_line_exit_2(CliRunner().invoke(main, ["tune", "--plan", "ladder", "--resume"]), "give it as --output")
    # a plan's points spread over a cluster's GPUs: one worker per GPU, never --workers CPU processes
    _one_line_exit_2(CliRunner().invoke(main, ["tune", "--plan", "ladder", "--cluster", "local", "--workers", "3"]),
                     "--workers 3 sizes a local cluster of CPU processes; these points need a GPU")
    for extra in ([], ["--pool-gpus"]):
        dry = CliRunner().invoke(main, ["tune", "--plan", "ladder", "--cluster", "local", *extra, "--dry-run"])
        assert dry.exit_code == 0, dry.output
    dry = CliRunner().invoke(main, ["tune", "--plan", "ladder", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert f"plan ladder ({SHIPPED_PLANS / 'ladder.toml'}): 8 searches, {len(load_plan('ladder').points())} points" \
        in dry.output and f"tuning cache: your cache {tmp_path / 'c.json'}" in dry.output
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_plans_recording_pools_gpus_of_several_models_only_when_asked(tmp_path, monkeypatch):
    """--pool-gpus reaches each of the plan's variants' recording (writeback refuses mixed models without it)."""
    from mmbench.tuning import plan_run
    from mmbench.vocabulary import DeviceId

    asked = []

    def record(request):
        asked.append((request.variant.name, request.pool_gpus))
        return {}, DeviceId("NVIDIA H200")

    monkeypatch.setattr(plan_run, "record_tuning", record)
    plan = load_plan("ladder")
    for pool in (False, True):
        plan_run._record(plan, tmp_path / "t.csv", tmp_path / "c.json", lambda _: None, pool)
    names = list(dict.fromkeys(name for name, _ in asked))
    assert asked == [(n, False) for n in names] + [(n, True) for n in names] and "kmajor" in names


def test_a_plan_records_each_variants_best_per_shape_in_your_cache(tmp_path, monkeypatch):
    from mmbench.engine import session

    monkeypatch.chdir(tmp_path)
    mine = tmp_path / "mine.json"
    monkeypatch.setenv(places.CACHE_ENV, str(mine))
    configs = _recorded_configs(4)
    plan = _plan(tmp_path, f'[[search]]\nvariant = "pipelined"\nconfigurations = {json.dumps(configs)}\n')
    handed = {}

    def measured(points, settings, output, about, **kwargs):  # the recorded run stands for the GPU's
        handed.update(points=points, settings=settings, about=about, **kwargs)
        for suffix in (".csv", ".meta.json"):
            shutil.copy(RECORDED.with_suffix(suffix), output.with_suffix(suffix))
        return session.Outcome(output, "finished")

    monkeypatch.setattr(session, "execute", measured)
    result = CliRunner().invoke(main, ["tune", "--plan", str(plan), "-o", "t.csv"])
    assert result.exit_code == 0, result.output
    assert len(handed["points"]) == 4 * 4 and (handed["settings"].runs, handed["settings"].warmup) == (5, 2)
    assert handed["settings"].skip_spills and handed["about"]["tuning"]["plan_sha256"] == load_plan(str(plan)).digest
    assert f"pipelined: the best of 4 configuration(s) at 4 of 4 shape(s) written to your cache {mine}" in result.output
    entries = tuning_cache.load_cache(mine).values()
    assert {e["size_class"] for e in entries} == {"1024x1024x1024", "2048x2048x2048", "2049x2049x2049",
                                                  "4096x4096x4096"}  # per shape
    rows = pd.read_csv(RECORDED)
    for e in entries:  # the best of everything measured at that shape (the file holds all 60)
        n = int(e["size_class"].split("x")[0])
        assert e["params"] == rows.loc[rows[rows.n == n].gflops_median.idxmax(), "params"]


def test_a_plans_search_runs_at_its_precision_and_layout_and_each_form_is_recorded_apart(tmp_path, monkeypatch):
    """A search names a form its variant takes (its first by default); the points run at it, the plan
    says it, and each form's best per shape goes into the cache under that form, from its rows alone."""
    from mmbench.engine import session
    from mmbench.tuning.cache import entry_form

    monkeypatch.chdir(tmp_path)
    mine = tmp_path / "mine.json"
    monkeypatch.setenv(places.CACHE_ENV, str(mine))
    plan_path = _plan(tmp_path, '[[search]]\nvariant = "tc_ws"\nconfigurations = ["BN=128,CLUSTER=1,CONSUMERS=2,'
                      'ORDER=0,OVERLAP=0,STAGES=4,TMA_STORE=0,WALK=0,WM=1", "BN=256,CLUSTER=1,CONSUMERS=2,ORDER=0,'
                      'OVERLAP=0,STAGES=4,TMA_STORE=0,WALK=0,WM=1"]\n[[search]]\nvariant = "tc_ws"\ndtype = "fp16"\n'
                      'configurations = ["BN=128,CLUSTER=1,CONSUMERS=2,ORDER=0,OVERLAP=0,STAGES=4,TMA_STORE=0,WALK=0,'
                      'WM=1"]\n', head='sizes = "4096"\n')
    plan = load_plan(str(plan_path))
    assert [s.form for s in plan.searches] == [("bf16", "nt"), ("fp16", "nt")]
    assert sorted((p.dtype, p.layout, p.params[0]) for p in plan.points()) == [
        ("bf16", "nt", ("BN", 128)), ("bf16", "nt", ("BN", 256)), ("fp16", "nt", ("BN", 128))]
    assert set(plan.variants()) == {("tc_ws", "bf16", "nt", "shape"), ("tc_ws", "fp16", "nt", "shape")}

    def measured(points, settings, output, about, **kwargs):  # a GPU's rows: the 256 tile wins at bf16
        rows = [{"op": "gemm", "variant": "tc_ws", "params": format_params(p.params), "m": 4096, "n": 4096, "k": 4096,
                 "dtype": p.dtype, "layout": p.layout, "status": "ok",
                 "gflops_median": 700e3 if dict(p.params)["BN"] == 256 else 600e3} for p in points]
        pd.DataFrame(rows).to_csv(output, index=False)
        meta = json.loads(RECORDED.with_suffix(".meta.json").read_text())
        output.with_suffix(".meta.json").write_text(json.dumps(meta))
        return session.Outcome(output, "finished")

    monkeypatch.setattr(session, "execute", measured)
    monkeypatch.setattr("mmbench.tuning.writeback.read_results", lambda path: pd.read_csv(path))
    dry = CliRunner().invoke(main, ["tune", "--plan", str(plan_path), "--dry-run"])
    assert "  tc_ws bf16 nt: 2 configuration(s) at 1 shape(s)" in dry.output, dry.output
    result = CliRunner().invoke(main, ["tune", "--plan", str(plan_path), "-o", "t.csv"])
    assert result.exit_code == 0, result.output
    assert "tc_ws bf16 nt: the best of 2 configuration(s) at 1 of 1 shape(s)" in result.output
    assert "tc_ws fp16 nt: the best of 1 configuration(s) at 1 of 1 shape(s)" in result.output
    by_form = {entry_form(e): e["params"] for e in tuning_cache.load_cache(mine).values()}
    assert by_form[("bf16", "nt")].startswith("BN=256") and by_form[("fp16", "nt")].startswith("BN=128")


def test_a_search_kept_per_class_records_its_classes_from_its_own_shapes(tmp_path, monkeypatch):
    """per = "class": the best over the search's shapes of each size class (geometric mean) goes in as the
    class's entry, beside a per-shape search of the same variant whose other shapes it does not see."""
    from mmbench.engine import session

    monkeypatch.chdir(tmp_path)
    mine = tmp_path / "mine.json"
    monkeypatch.setenv(places.CACHE_ENV, str(mine))
    small, large = ("BN=128,CLUSTER=1,CONSUMERS=2,ORDER=0,OVERLAP=0,STAGES=4,STREAMK=0,TMA_STORE=0,WALK=0,WM=1",
                    "BN=256,CLUSTER=1,CONSUMERS=2,ORDER=0,OVERLAP=0,STAGES=4,STREAMK=0,TMA_STORE=0,WALK=0,WM=1")
    plan_path = _plan(tmp_path, f'[[search]]\nvariant = "tc_ws"\nconfigurations = ["{small}", "{large}"]\n'
                      f'[[search]]\nvariant = "tc_ws"\nper = "class"\nsizes = "2048,2304"\n'
                      f'configurations = ["{small}", "{large}"]\n', head='sizes = "2048,2304,2560"\n')
    plan = load_plan(str(plan_path))
    assert set(plan.variants()) == {("tc_ws", "bf16", "nt", "shape"), ("tc_ws", "bf16", "nt", "class")}
    assert len(plan.points()) == 6  # the class search's points are the shape search's
    speed = {(2048, 128): 600e3, (2048, 256): 700e3, (2304, 128): 650e3, (2304, 256): 500e3,  # class 2048:
             (2560, 128): 100e3, (2560, 256): 800e3}  # 128 by geometric mean over 2048 and 2304 alone

    def measured(points, settings, output, about, **kwargs):
        rows = [{"op": "gemm", "variant": "tc_ws", "params": format_params(p.params), "m": p.shape.m, "n": p.shape.n,
                 "k": p.shape.k, "dtype": p.dtype, "layout": p.layout, "status": "ok",
                 "gflops_median": speed[p.shape.m, dict(p.params)["BN"]]} for p in points]
        pd.DataFrame(rows).to_csv(output, index=False)
        output.with_suffix(".meta.json").write_text(RECORDED.with_suffix(".meta.json").read_text())
        return session.Outcome(output, "finished")

    monkeypatch.setattr(session, "execute", measured)
    monkeypatch.setattr("mmbench.tuning.writeback.read_results", lambda path: pd.read_csv(path))
    dry = CliRunner().invoke(main, ["tune", "--plan", str(plan_path), "--dry-run"])
    assert "  tc_ws bf16 nt: 2 configuration(s) at 2 shape(s), kept per size class" in dry.output, dry.output
    result = CliRunner().invoke(main, ["tune", "--plan", str(plan_path), "-o", "t.csv"])
    assert result.exit_code == 0, result.output
    assert "tc_ws bf16 nt: the best of 2 configuration(s) at 1 size class(es) of 2 shape(s)" in result.output
    entries = {e["size_class"]: e for e in tuning_cache.load_cache(mine).values()}
    assert entries["2048"]["params"] == small and entries["2048"]["gflops"] == pytest.approx((600e3 * 650e3) ** 0.5)
    assert {c: entries[c]["params"] for c in ("2048x2048x2048", "2304x2304x2304", "2560x2560x2560")} == {
        "2048x2048x2048": large, "2304x2304x2304": small, "2560x2560x2560": large}
    bad = _plan(tmp_path, f'[[search]]\nvariant = "tc_ws"\nper = "size"\nconfigurations = ["{small}"]\n',
                head='sizes = "2048"\n')
    _one_line_exit_2(CliRunner().invoke(main, ["tune", "--plan", str(bad), "--dry-run"]), "per: 'size'; choose from: shape, class")


def test_a_plan_resumes_only_its_own_file_and_keeps_the_earlier_invocations(tmp_path, monkeypatch):
    from mmbench.engine import session

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(places.CACHE_ENV, str(tmp_path / "mine.json"))
    monkeypatch.setattr("mmbench.tuning.plan_run._record", lambda *a: {})
    configs = _recorded_configs(2) + ["BK=8,BM=64,BN=64,STAGES=2,THREADS=128,TM=4,TN=4,WM=32,WN=32,WNITER=1"]
    plan = _plan(tmp_path, f'[[search]]\nvariant = "pipelined"\nconfigurations = {json.dumps(configs)}\n')
    for suffix in (".csv", ".meta.json"):
        shutil.copy(RECORDED.with_suffix(suffix), tmp_path / f"t{suffix}")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    monkeypatch.setattr(session, "execute", lambda *a, **k: pytest.fail("measured a file of another plan"))
    _one_line_exit_2(CliRunner().invoke(main, ["tune", "--plan", str(plan), "-o", "t.csv", "--resume"]),
                     "t.csv was measured with another plan")
    _one_line_exit_2(CliRunner().invoke(main, ["tune", "--plan", str(plan), "-o", "t.csv"]), "pass --resume")
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    meta = json.loads(Path("t.meta.json").read_text())
    meta["tuning"] = load_plan(str(plan)).about()  # the file this plan began
    Path("t.meta.json").write_text(json.dumps(meta))
    handed = {}
    monkeypatch.setattr(session, "execute", lambda points, settings, output, *a, **k:
                        handed.update(points=points, **k) or session.Outcome(output, "finished"))
    result = CliRunner().invoke(main, ["tune", "--plan", str(plan), "-o", "t.csv", "--resume"])
    assert result.exit_code == 0, result.output
    assert "plan p (p.toml): 1 searches, 12 points, 8 already measured" in result.output.replace(str(tmp_path) + "/", "")
    assert len(handed["points"]) == 4 and {p.params for p in handed["points"]} == {load_plan(str(plan)).searches[0].configs[2]}
    assert handed["resume"] and handed["previous"]["started_at"] == meta["started_at"]  # its history goes on


def test_a_listed_configuration_may_leave_out_what_its_space_holds_at_one_value(tmp_path):
    """tc_cluster's space holds STREAMK at 0 (a switch the kernel gained later): a configuration without
    it reads as STREAMK=0; tc_tiles tunes it, so there it must be named."""
    body = ('[[search]]\nvariant = "{v}"\nconfigurations = ["BN=256,CLUSTER=2,CONSUMERS=2,ORDER={o},OVERLAP=1,'
            'STAGES=4,TMA_STORE={s},WALK=1,WM=1"]\n')
    plan = load_plan(str(_plan(tmp_path, body.format(v="tc_cluster", o=0, s=0))))
    (search,) = plan.searches
    assert [dict(c)["STREAMK"] for c in search.configs] == [0]
    with pytest.raises(ConfigError, match=r"not a configuration of tc_tiles's tuning space \(it lacks STREAMK\)"):
        load_plan(str(_plan(tmp_path, body.format(v="tc_tiles", o=8, s=1))))
