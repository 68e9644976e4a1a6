"""A search (tpe, ga) on the GPU's path, the GPU stood in for by an engine whose times are a known
function of the configuration: batches proposed and measured until the budget, the best few timed
again beside the tuning, the cache given the best of those."""

from __future__ import annotations

from contextlib import nullcontext

import pytest

import mmbench
from mmbench import places
from mmbench.engine import session
from mmbench.engine.interface import Engine
from mmbench.engine.rows import row, timing_fields
from mmbench.results import read_metadata, read_results
from mmbench.tuning import cache as tuning_cache
from mmbench.tuning.searching import BATCH, FINALISTS, RETIME, configuration_scores, finalists_path
from mmbench.variants import get_variant, parse_params

pytest.importorskip("optuna")
VARIANT = get_variant("pipelined")


def known_time(params) -> float:
    """A configuration's time: faster the earlier each value stands in its domain, 1 ms at the best."""
    return 1.0 + sum(0.1 * VARIANT.space[name].index(value) for name, value in params)


class StandIn(Engine):
    """Stands for the GPU: each point ok at known_time (one configuration value always fails)."""

    def __init__(self, settings, *_):
        self.settings, self.kernels, self.batches = settings, {}, []

    def run(self, points, on_row):
        self.batches.append(list(points))
        for p in points:
            if dict(p.params)["BK"] == VARIANT.space["BK"][-1]:
                on_row(row(p, self.settings, "failed", "compile: stands for a failure"))
            else:
                on_row(row(p, self.settings, "ok", **timing_fields(p, [known_time(p.params)] * self.settings.runs)))

    def gpu_names(self):
        return set()

    def spending(self, phase):
        return nullcontext()

    def time_spent(self):
        return {}

    def library_meta(self):
        return {}

    def close(self):
        pass


@pytest.fixture
def engines(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(places.RUNS_ENV, str(tmp_path / "runs"))
    monkeypatch.setenv(places.CACHE_ENV, str(tmp_path / "mine.json"))
    made = []
    monkeypatch.setattr(session, "open_engine", lambda settings, *a, **k: made.append(StandIn(settings)) or made[-1])
    return made


@pytest.mark.parametrize("strategy", ["tpe", "ga", "forest"])
def test_a_search_measures_batches_within_its_budget_and_records_the_best_finalist(engines, tmp_path, strategy):
    said = []
    df = mmbench.tune("pipelined", "1024,2048", strategy=strategy, budget=20, seed=3, output="s.csv", say=said.append)
    search, final = engines  # the search's engine, then the finalists'
    assert len(df) == 40 and df.params.nunique() == 20  # every configuration tried at both shapes
    assert [len(b) for b in search.batches] == [2 * BATCH, 2 * BATCH, 2 * 4]  # batches of BATCH, the last the rest
    defaults = {p.params for p in search.batches[0]}
    assert all(params in defaults for params in mmbench.variants.param_points(VARIANT))  # the defaults come first
    finalists = read_results(finalists_path(tmp_path / "s.csv"))
    assert len(finalists) == 2 * FINALISTS and set(finalists.runs) == {5 * RETIME}
    verified = df[df.status == "ok"].groupby("params").size()
    times = {params: known_time(parse_params(params)) for params in verified[verified == 2].index}
    chosen = list(finalists.params.unique())
    # the three fastest of the search (by time: equal times may stand for each other)
    assert sorted(times[p] for p in chosen) == sorted(times.values())[:FINALISTS]
    entries = tuning_cache.load_cache(tmp_path / "mine.json").values()
    assert len({e["params"] for e in entries}) == 1
    assert times[next(iter(entries))["params"]] == min(times.values())  # the cache has the fastest finalist
    assert read_metadata(finalists_path(tmp_path / "s.csv"))["tuning"]["finalists_of"].endswith("s.csv")
    assert any(line.startswith("finalists 1024: runners-up at ") for line in said)
    assert (df[df.status == "failed"].reason == "compile: stands for a failure").all()


def test_a_configurations_score_is_its_geometric_mean_over_the_shapes_and_none_where_one_failed():
    rows = [{"params": "A=1", "status": "ok", "gflops_median": 4.0}, {"params": "A=1", "status": "ok", "gflops_median": 9.0},
            {"params": "A=2", "status": "ok", "gflops_median": 4.0}, {"params": "A=2", "status": "wrong", "gflops_median": 9.0}]
    assert configuration_scores(rows, [(("A", 1),), (("A", 2),), (("A", 3),)], 2, "gflops_median") == [6.0, None, None]


@pytest.mark.parametrize("strategy", ["tpe", "forest"])
def test_a_search_of_a_space_smaller_than_its_batch_measures_it_all_and_ends(strategy):
    from mmbench.tuning.search import proposals

    asking = proposals(get_variant("best"), strategy, 5, 0, batch=BATCH)  # 3 configurations, a budget of 5
    batch = next(asking)
    assert len(batch) == len(set(batch)) == 3
    with pytest.raises(StopIteration) as finished:
        asking.send([1.0, 2.0, 3.0])
    assert [e.score for e in finished.value.value] == [1.0, 2.0, 3.0]


def test_a_search_whose_finalists_file_is_there_is_refused_before_it_measures(engines, tmp_path):
    (tmp_path / "s.finalists.csv").write_text("x")
    with pytest.raises(mmbench.RunRefused, match="s.finalists.csv already exists"):
        mmbench.tune("pipelined", "1024", strategy="tpe", budget=4, output="s.csv", say=lambda _: None)
    assert engines == [] and not (tmp_path / "s.csv").exists()


def test_the_genetic_search_spends_its_last_share_one_step_from_its_best():
    from mmbench.tuning.search import POLISH, search

    done = search(VARIANT, "ga", 20, 0, lambda params: 1.0 / known_time(params))
    polished = int(20 * POLISH["ga"])
    for i in range(20 - polished, 20):
        before = {e.params: e.score for e in done[:i] if e.score is not None}
        best, here = dict(max(before, key=before.get)), dict(done[i].params)
        moved = [n for n in best if best[n] != here[n]]
        assert len(moved) == 1, (i, best, here)
        values = VARIANT.space[moved[0]]
        assert abs(values.index(best[moved[0]]) - values.index(here[moved[0]])) == 1
    assert POLISH["tpe"] == 0


def test_the_forest_search_measures_only_the_space_given_learns_from_failures_and_repeats_with_its_seed():
    """A replay's space: a random fifth of pipelined's configurations, scored by known_time, one value of
    BK failing. The forest measures nothing outside it and nothing twice, starts from the defaults,
    comes back the same for a seed, and finds the space's best well before random draws would."""
    import random

    from mmbench.tuning.search import search
    from mmbench.tuning.surrogate import STARTUP
    from mmbench.variants import tuning_space

    space = random.Random(1).sample(tuning_space(VARIANT), len(tuning_space(VARIANT)) // 5)
    failing = VARIANT.space["BK"][-1]
    scores = {p: None if dict(p)["BK"] == failing else 1.0 / known_time(p) for p in space}
    best = max((s for s in scores.values() if s is not None))
    asked = []

    def evaluate(params):
        asked.append(params)
        return scores[params]

    done = search(VARIANT, "forest", 40, 7, evaluate, space)
    assert len(done) == 40 and len(set(asked)) == 40 and set(asked) <= set(space)
    defaults = [p for p in mmbench.variants.param_points(VARIANT) if p in scores]
    assert [e.params for e in done[:len(defaults)]] == defaults
    assert [e.params for e in search(VARIANT, "forest", 40, 7, scores.get, space)] == asked  # the seed's
    found = [i for i, e in enumerate(done) if e.score == best]
    assert 40 / len(space) < 0.2  # random draws would find the one best in 40 in under 1 seed of 5
    assert found and found[0] >= len(defaults) + STARTUP  # the forest found it, after its first draws
    after = [e for e in done[STARTUP + len(defaults):] if e.score is None]
    assert len(after) <= 3  # it learnt to avoid the failing value


@pytest.mark.parametrize("asked,resolved", [
    ({"variant": "dbuf"}, "forest"),  # the points engine: a search
    ({"variant": "gemv_tuned"}, "random"),  # auto's engine for GEMV is the batched one: chosen ahead
    ({"variant": "gemv_tuned", "engine": "points"}, "forest"),
    ({"variant": "gemv_tuned", "dtype": "bf16"}, "forest"),  # another precision: point by point
    ({"variant": "dbuf", "engine": "batched"}, "random"),
    ({"variant": "warptile", "params": "BK=16"}, "random"),  # a narrowed space
    ({"variant": "warptile", "candidates": ("x.csv",)}, "random"),
    ({"variant": "dbuf", "replay": "x.csv"}, "forest"),
    ({"variant": "dbuf", "strategy": "tpe"}, "tpe"),  # asked for: kept
    ({"variant": "gemv_tuned", "strategy": "forest"}, "forest"),
    ({"variant": "no_such_variant"}, "forest"),  # named by configurations(), not here
])
def test_the_default_strategy_is_the_forest_where_a_tuning_searches_point_by_point(asked, resolved):
    from mmbench.tuning.request import TuneOptions
    from mmbench.tuning.resolve import with_strategy

    assert TuneOptions().strategy == "auto"
    assert with_strategy(TuneOptions(**asked)).strategy == resolved


def test_the_default_strategy_without_a_budget_says_so_and_how_to_measure_every_configuration():
    from click.testing import CliRunner
    from mmbench.cli import main

    result = CliRunner().invoke(main, ["tune", "-v", "warptile", "-s", "2048", "--dry-run"])
    assert result.exit_code == 2 and result.output.splitlines() == [
        "Error: the default strategy (forest) needs --budget N: the configurations it may measure; --strategy brute "
        "measures every one"]


def test_a_forest_batch_starts_where_one_by_one_would_and_spreads_beyond_one_fits_highest():
    """_best_by_model: the batch's first pick is the one-by-one pick; the rest are distinct, none measured,
    and not simply the highest of one fit (each later fit believes the model for the picks before it)."""
    import random

    import numpy as np
    from sklearn.ensemble import ExtraTreesRegressor

    from mmbench.tuning import surrogate
    from mmbench.variants import tuning_space

    pool = random.Random(2).sample(tuning_space(VARIANT), 300)
    table = np.array([surrogate.features(VARIANT, p) for p in pool])
    measured = {p: 1.0 / known_time(p) for p in pool[:30]}
    one = surrogate._best_by_model(ExtraTreesRegressor, table, pool, dict(measured), 1, 5, measured)
    batch = surrogate._best_by_model(ExtraTreesRegressor, table, pool, dict(measured), 8, 5, measured)
    assert batch[0] == one[0] and len(set(batch)) == 8 and not set(batch) & set(measured)
    model = ExtraTreesRegressor(n_estimators=surrogate.TREES, random_state=5).fit(
        table[:30], np.array([measured[p] for p in pool[:30]]) / max(measured.values()))
    each = np.stack([tree.predict(table[30:]) for tree in model.estimators_])
    highest = {pool[30 + i] for i in np.argsort(-(each.mean(axis=0) + surrogate.KAPPA * each.std(axis=0)))[:8]}
    assert set(batch) != highest


def test_a_dry_run_of_the_default_strategy_shows_the_first_batch_the_gpu_would_measure():
    from click.testing import CliRunner
    from mmbench.cli import main
    from mmbench.tuning.search import proposals
    from mmbench.variants import format_params

    shown = CliRunner().invoke(main, ["tune", "-v", "dbuf", "-s", "2048", "--budget", "20", "--seed", "3", "--dry-run"])
    assert shown.exit_code == 0, shown.output
    assert "trying up to 20, chosen as it measures, the first 8 below (forest)" in shown.output
    listed = [line.strip() for line in shown.output.splitlines() if line.startswith("  ")]
    first = next(proposals(get_variant("dbuf"), "forest", 20, 3, batch=BATCH))
    assert listed == [format_params(p) for p in first] and len(listed) == BATCH
    assert listed[0] == format_params(mmbench.variants.param_points(get_variant("dbuf"))[0])
    df = mmbench.tune("dbuf", [2048], budget=20, seed=3, dry_run=True, say=lambda _: None)
    assert list(df.params) == listed
