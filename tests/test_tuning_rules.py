"""dbuf's and kmajor's parameters by rule where no cache has an entry: which configuration each shape
gets on a GPU of a given SM count, and that a run without caches takes them (and says so)."""

import pytest

from mmbench.sizes import Shape
from mmbench.tuning import rules
from mmbench.vocabulary import DeviceId
from mmbench.variants import REGISTRY, format_params
from mmbench.variants.model import tuning_space

H100 = DeviceId("NVIDIA H100 80GB HBM3", "sm_90", 132)


def square(n):
    return Shape(n, n, n)


@pytest.mark.parametrize("n, expected", [
    (512, rules.DBUF_SMALL),     # 16 tiles of 128 x 128: under half of 132 SMs
    (1024, rules.DBUF_SMALL),    # 64 tiles: still under 66
    (1280, rules.DBUF_STREAM),   # 100 tiles; split-K 3: 300 blocks over 264 places, the second wave 14 % full
    (1152, rules.DBUF_SPLIT3),   # 81 tiles: 243 of 264 places, 92 %
    (2048, rules.DBUF_SPLIT3),   # 256 tiles: 768 blocks, 2.91 waves, the last 91 % full
    (1920, rules.DBUF_STREAM),   # 225 tiles: 675 blocks, 2.56 waves
    (4096, rules.DBUF_STREAM),   # 1024 tiles: 11.6 waves
])
def test_the_rule_on_132_sms(n, expected):
    assert rules.dbuf_rule(square(n), H100) == expected


def test_the_rule_follows_the_sm_count():
    """The same shape on a GPU of half the SMs has twice the tiles per SM: no longer a small grid."""
    assert rules.dbuf_rule(square(1000), H100) == rules.DBUF_SMALL
    assert rules.dbuf_rule(square(1000), DeviceId("small", "sm_90", 40)) != rules.DBUF_SMALL


def test_a_shallow_k_is_not_split_three_ways():
    assert rules.dbuf_rule(Shape(1152, 1152, 256), H100) == rules.DBUF_STREAM


@pytest.mark.parametrize("params", [rules.DBUF_SMALL, rules.DBUF_SPLIT3, rules.DBUF_STREAM], ids=format_params)
def test_each_configuration_is_a_whole_point_of_dbufs_space(params):
    assert params in tuning_space(REGISTRY["dbuf"])  # every parameter set, every constraint met


@pytest.mark.parametrize("shape, expected", [
    (square(1600), rules.KMAJOR_SMALL),             # 13 x 7 = 91 tiles of 128 x 256: 0.69 of a wave
    (square(1857), rules.KMAJOR_LARGE_UNALIGNED),   # 15 x 8 = 120 tiles: 0.91 of a wave; rows unaligned
    (square(2048), rules.KMAJOR_LARGE_ALIGNED),     # 16 x 8 = 128: 0.97
    (square(2049), rules.KMAJOR_SMALL),             # 17 x 9 = 153: a second wave 16 % full
    (square(3072), rules.KMAJOR_SMALL),             # 24 x 12 = 288: 2.18 waves
    (square(4096), rules.KMAJOR_LARGE_ALIGNED),     # 32 x 16 = 512: 3.88 waves, the last 88 % full
    (square(4097), rules.KMAJOR_SMALL),             # 33 x 17 = 561: 4.25 waves
    (square(8191), rules.KMAJOR_LARGE_UNALIGNED),   # 64 x 32 = 2048: 15.5 waves, many
    (Shape(2048, 2048, 2047), rules.KMAJOR_LARGE_UNALIGNED),  # A's rows (k long) unaligned
])
def test_kmajors_rule_on_132_sms(shape, expected):
    assert rules.kmajor_rule(shape, H100) == expected


def test_kmajors_rule_follows_the_sm_count():
    assert rules.kmajor_rule(square(2048), DeviceId("more", "sm_90", 160)) == rules.KMAJOR_SMALL  # 0.8 of a wave


@pytest.mark.parametrize("params", [rules.KMAJOR_SMALL, rules.KMAJOR_LARGE_ALIGNED, rules.KMAJOR_LARGE_UNALIGNED],
                         ids=format_params)
def test_each_configuration_is_a_whole_point_of_kmajors_space(params):
    assert params in tuning_space(REGISTRY["kmajor"])


def test_a_run_without_caches_takes_the_rule_and_says_so(monkeypatch):
    from mmbench import device
    from mmbench.engine.plan import Selection
    from mmbench.tuning import for_runs

    monkeypatch.setattr(device, "device_identity", lambda: H100)
    sel = Selection(variants=(REGISTRY["dbuf"], REGISTRY["warptile"]), spec="512,2048")
    said = []
    got = for_runs.with_tuned(sel, [], said.append)
    assert got.tuned[("dbuf", square(512), "fp32", "nn")].params == rules.DBUF_SMALL
    assert got.tuned[("dbuf", square(2048), "fp32", "nn")].origin == for_runs.RULE
    assert ("warptile", square(512)) not in got.tuned  # no rule: its defaults
    assert said == ["warptile: tuning caches off; default parameters",
                    "dbuf: tuning caches off; parameters by its rule over the shape and this GPU's 132 SMs "
                    "(mmbench/tuning/rules.py) at 2 shapes"]
