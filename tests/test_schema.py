"""The row schema (mmbench/schema.py): one table of columns, the producers that fill them (those
that read a point: engine/rows.py), and the format version written into a run's metadata; files
from before the version still read."""

import json

from mmbench import schema
from mmbench.engine import rows, session
from mmbench.engine.plan import Point, Settings
from mmbench.results import read_metadata, read_results, recorded_settings
from mmbench.sizes import Shape
from mmbench.variants import get_variant


def test_the_derived_lists_come_from_the_one_table():
    assert len(set(schema.COLUMNS)) == len(schema.COLUMNS)
    assert set(schema.KEY) <= set(schema.COLUMNS) and set(schema.REQUIRED) <= set(schema.COLUMNS)
    assert set(schema.ADDED_COLUMNS) <= set(schema.COLUMNS) and not set(schema.INTS) & set(schema.FLOATS)
    assert list(schema.ADDED_COLUMNS) == [c for c in schema.COLUMNS if c in schema.ADDED_COLUMNS]  # the file's order
    assert schema.ADDED_COLUMNS["op"] == "gemm" and "variant" not in schema.ADDED_COLUMNS


def test_every_field_a_producer_fills_is_a_column():
    point = Point(get_variant("blas"), (), Shape(8, 8, 8), "hot")
    row = rows.row(point, Settings(), "ok", **rows.timing_fields(point, [1.0, 2.0]),
                   **schema.kernel_fields(([1.0], [0.5], 2)),
                   **schema.clock_fields(1980, 1970, False, {"gpu_temp_c_before": 40}, {"gpu_temp_c_after": 41}))
    assert set(row) <= set(schema.COLUMNS), set(row) - set(schema.COLUMNS)


def test_a_run_records_its_format_and_a_file_without_one_still_reads(tmp_path):
    out = tmp_path / "r.csv"
    points = [Point(get_variant("blas"), (), Shape(8, 8, 8), "hot")]
    outcome = session.execute(points, Settings(runs=1, warmup=0, cache="hot"), out, {"name": "r"}, ["t"],
                              say=lambda _: None)
    assert outcome.state == "finished" and read_metadata(out)["format"] == schema.FORMAT == 3
    # A file of format 1 (no "format" in its metadata, no columns added since): read as before.
    old = tmp_path / "old.csv"
    keep = [c for c in schema.COLUMNS if c not in schema.ADDED_COLUMNS]
    row = read_results(out).iloc[0]
    old.write_text(",".join(keep) + "\n" + ",".join("" if str(row[c]) == "nan" else str(row[c]) for c in keep) + "\n")
    meta = {k: v for k, v in read_metadata(out).items() if k != "format"}
    old.with_suffix(".meta.json").write_text(json.dumps(meta))
    df = read_results(old)
    assert "format" not in read_metadata(old) and list(df.op) == ["gemm"] and list(df.scope) == ["kernel"]
    assert recorded_settings(old, read_metadata(old))["runs"] == 1
