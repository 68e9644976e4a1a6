from pathlib import Path

import pytest

from mmbench.results import (CsvSink, ResultsError, done_keys, history, runs_newest_first, read_metadata, read_results,
                             recorded_settings, scan, set_aside_torn, torn_path, write_metadata)
from mmbench.schema import COLUMNS, KEY, join_samples, samples_of


def row(n, status="ok", **extra):
    return {"op": "gemm", "variant": "best", "label": "CUDA-Best", "backend": "cuda", "params": "BLOCK=32", "m": n, "n": n, "k": n,
            "cache": "cold", "status": status, "runs": 2, "warmup": 1, "time_ms_samples": join_samples([0.5, 0.25]),
            "time_ms_median": 0.375 if status == "ok" else "",
            "finished_at": "2026-11-23T08:00:00+00:00", **extra}


def test_rows_stream_to_disk_and_read_back(tmp_path):
    path = tmp_path / "r.csv"
    sink = CsvSink(path)
    sink.write(row(64, gflops_mean=1.5))
    # Flushed at once: another reader sees the row before the sink closes.
    assert len(read_results(path)) == 1
    sink.write(row(65, status="wrong", reason="NaN, everywhere"))
    sink.close()
    df = read_results(path)
    assert list(df.columns) == list(COLUMNS)
    assert list(df.status) == ["ok", "wrong"] and df.reason[1] == "NaN, everywhere"
    assert samples_of(df.time_ms_samples[0]) == [0.5, 0.25] and df.gflops_mean[0] == 1.5


def test_resume_appends_and_knows_what_is_done(tmp_path):
    path = tmp_path / "r.csv"
    sink = CsvSink(path)
    sink.write(row(64))
    sink.close()
    sink = CsvSink(path)  # reopening appends, no second header
    sink.write(row(96))
    sink.close()
    assert done_keys(path) == {("gemm", "best", "BLOCK=32", 64, 64, 64, "cold", "kernel", 0, "fp32", "nn"),
                               ("gemm", "best", "BLOCK=32", 96, 96, 96, "cold", "kernel", 0, "fp32", "nn")}
    assert path.read_text().count("variant,") == 1


def test_unknown_columns_refuse_to_append(tmp_path):
    path = tmp_path / "other.csv"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(ResultsError, match=r"not an mmbench results CSV: it has no column variant.*\(its columns: a, b\)"):
        CsvSink(path)
    path.write_text(",".join(KEY + ("status",)) + "\n")
    with pytest.raises(ResultsError, match="other columns"):
        CsvSink(path)


@pytest.mark.parametrize("content,needle", [(None, "no results file"), ("", "is empty"), ("a,b\n1,2\n", "not an mmbench results CSV")])
def test_bad_results_files(tmp_path, content, needle):
    path = tmp_path / "r.csv"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ResultsError, match=needle):
        read_results(path)


def test_metadata_beside_the_csv(tmp_path):
    path = tmp_path / "r.csv"
    written = write_metadata(path, {"gpu": {"name": "X"}})
    assert written == tmp_path / "r.meta.json" and read_metadata(path) == {"gpu": {"name": "X"}}


def test_a_finished_runs_metadata_may_be_kept_gzipped_beside_it(tmp_path):
    """X.meta.json.gz is read where X.meta.json is absent (a large tuning's, kept small); a torn one is
    a clear error."""
    import gzip

    path = tmp_path / "t.csv.gz"
    (tmp_path / "t.meta.json.gz").write_bytes(gzip.compress(b'{"gpu": {"name": "X"}}'))
    assert read_metadata(path) == {"gpu": {"name": "X"}}
    (tmp_path / "t.meta.json.gz").write_bytes(gzip.compress(b'{"gpu": {"name": "X"}}')[:-6])
    with pytest.raises(ResultsError, match="t.meta.json.gz is not mmbench metadata"):
        read_metadata(path)


def test_git_commit_named_by_the_environment_wins(monkeypatch):
    """The GPU machine's copy may carry a stale .git; the commit the caller names is the truth."""
    from mmbench.environment import git_info

    monkeypatch.setenv("MMBENCH_GIT_COMMIT", "abc1234")
    assert git_info() == {"commit": "abc1234", "from": "MMBENCH_GIT_COMMIT"}
    monkeypatch.delenv("MMBENCH_GIT_COMMIT")
    info = git_info()
    assert "from" in info or len(info["commit"]) == 40


def written(path, *ns):
    sink = CsvSink(path)
    for n in ns:
        sink.write(row(n))
    sink.close()
    return path.read_bytes().decode()


@pytest.mark.parametrize("cut", [1, 5, 12, 40, 60, 75, 90, 99])
def test_a_torn_last_line_is_recognized_wherever_the_cut_falls(tmp_path, cut):
    """A crash mid-row leaves a prefix of the row: cut inside the key columns, a number, the
    samples or the timestamp, it is never taken for a finished point."""
    path = tmp_path / "r.csv"
    text = written(path, 64, 96, 128)
    lines = text.split("\r\n")[:-1]
    last = lines[-1]
    path.write_text("\r\n".join(lines[:-1] + [last[: len(last) * cut // 100]]), newline="")
    found = scan(path)
    assert found.torn is not None and found.torn.line == 4
    assert found.keys == {("gemm", "best", "BLOCK=32", n, n, n, "cold", "kernel", 0, "fp32", "nn") for n in (64, 96)}
    df = read_results(path)
    assert list(df.n) == [64, 96] and "torn row" in df.attrs["warning"] and "left out" in df.attrs["warning"]
    message = set_aside_torn(path, found)
    assert "set aside in" in message and str(torn_path(path)) in message
    assert path.read_bytes().decode() == "\r\n".join(lines[:-1]) + "\r\n"  # whole rows only, each ended
    assert last[: len(last) * cut // 100] in torn_path(path).read_text()
    written(path, 128)
    assert list(read_results(path).n) == [64, 96, 128]


def test_a_complete_last_row_without_its_line_end_is_kept_and_ended(tmp_path):
    path = tmp_path / "r.csv"
    text = written(path, 64, 96)
    path.write_text(text.rstrip("\r\n"), newline="")
    found = scan(path)
    assert found.torn is None and len(found.rows) == 2
    assert set_aside_torn(path, found) is None and not torn_path(path).exists()
    written(path, 128)
    assert list(read_results(path).n) == [64, 96, 128]


@pytest.mark.parametrize("damage,needle", [
    (lambda line: line[:30], "fields where the header has"),
    (lambda line: line.replace(",ok,", ",okay,"), "status 'okay'"),
    (lambda line: line.replace(",96,96,96,", ",96,9x6,96,"), "n '9x6' is not an integer"),
    (lambda line: line.replace("0.5;0.25", "0.5"), "1 samples where runs is 2"),
    (lambda line: line + line, "fields where the header has"),  # two rows glued into one line
])
def test_a_damaged_row_before_the_last_is_refused_naming_its_line(tmp_path, damage, needle):
    path = tmp_path / "r.csv"
    lines = written(path, 64, 96, 128).split("\r\n")
    lines[2] = damage(lines[2])
    path.write_text("\r\n".join(lines), newline="")
    with pytest.raises(ResultsError, match=f"line 3 is not a complete row .*{needle}"):
        scan(path)


def test_each_row_is_one_write(tmp_path, monkeypatch):
    import os

    calls = []
    real = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: calls.append(data) or real(fd, data))
    path = tmp_path / "r.csv"
    written(path, 64, 96)
    assert len(calls) == 3 and all(c.endswith(b"\r\n") and c.count(b"\r\n") == 1 for c in calls)


def test_a_reason_with_line_breaks_stays_on_one_line(tmp_path):
    path = tmp_path / "r.csv"
    sink = CsvSink(path)
    sink.write(row(64, status="failed", reason="first\nsecond"))
    sink.close()
    assert read_results(path).reason[0] == "first second"


def test_binary_and_foreign_files_are_clear_errors(tmp_path):
    path = tmp_path / "r.csv"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    with pytest.raises(ResultsError, match="binary file"):
        read_results(path)
    path.write_bytes(b"variant,\xff\xfe\n")
    with pytest.raises(ResultsError, match="not UTF-8"):
        read_results(path)


def test_runs_newest_first_by_their_metadata_not_their_files(tmp_path):
    import os

    root = tmp_path / "runs"
    (root / "a").mkdir(parents=True)
    old, new = root / "old.csv", root / "a" / "new.csv"
    for path, start in ((old, "2026-11-20T10:00:00+00:00"), (new, "2026-11-21T10:00:00+00:00")):
        written(path, 64)
        write_metadata(path, {"started_at": start, "wall_s": 5.0})
    derived = root / "a" / "new" / "table1.csv"  # a table drawn from a run: no metadata, not results
    derived.parent.mkdir()
    derived.write_text("n,BLAS\n64,1.0\n")
    orphan = root / "orphan.csv"  # results without metadata do not qualify
    written(orphan, 64)
    tuning = root / "tuning" / "t" / "t.csv"  # the tunings, left out when asked
    tuning.parent.mkdir(parents=True)
    written(tuning, 64)
    write_metadata(tuning, {"started_at": "2026-11-23T10:00:00+00:00"})
    os.utime(old, (2e9, 2e9))  # the newest file by mtime is not the newest run
    assert runs_newest_first(root, skip=root / "tuning") == [new, old]
    assert runs_newest_first(root) == [tuning, new, old]
    write_metadata(old, {"started_at": "2026-11-20T10:00:00+00:00", "finished_at": "2026-11-22T00:00:00+00:00"})
    assert runs_newest_first(root, skip=root / "tuning") == [old, new]
    assert runs_newest_first(tmp_path / "none") == []


def test_history_of_metadata_written_before_histories():
    old = {"command": ["mmbench", "run"], "started_at": "2026-11-20T10:00:00+00:00", "wall_s": 60.0,
           "state": "finished", "status_counts": {"ok": 3}, "gpu": {"name": "X"}}
    [one] = history(old)
    assert one["command"] == ["mmbench", "run"] and one["finished_at"] == "2026-11-20T10:01:00+00:00"
    assert one["status_counts"] == {"ok": 3} and "gpu" not in one
    assert history({"invocations": [{"a": 1}, {"b": 2}]}) == [{"a": 1}, {"b": 2}] and history({}) == []


def test_recorded_settings_from_metadata_else_from_rows(tmp_path):
    path = tmp_path / "r.csv"
    assert recorded_settings(path) == {}
    written(path, 64, 96)
    # a file that does not say how its L2 was flushed is from before the read flush: it was written
    assert recorded_settings(path) == {"runs": 2, "warmup": 1, "cache": "cold", "l2_flush": "write"}
    write_metadata(path, {"settings": {"runs": 5, "warmup": 0, "cache": "hot", "threads": None, "seed": 1,
                                       "clock_sag": 0.9}})
    # nor its sampling: from before adaptive sampling, every point took exactly `runs` samples
    assert recorded_settings(path) == {"runs": 5, "warmup": 0, "cache": "hot", "threads": None, "seed": 1,
                                       "l2_flush": "write", "max_noise": None, "max_interval": None, "noise_clock": "events"}
    write_metadata(path, {"settings": {"runs": 5, "warmup": 0, "cache": "cold", "threads": None, "seed": 1,
                                       "l2_flush": "read"}})
    assert recorded_settings(path)["l2_flush"] == "read"


def test_a_file_ending_in_a_bare_carriage_return_is_ended_before_appending(tmp_path):
    path = tmp_path / "r.csv"
    text = written(path, 64, 96)
    path.write_bytes(text.encode()[:-1])  # cut between \r and \n
    found = scan(path)
    assert found.torn is None and len(found.rows) == 2
    assert set_aside_torn(path, found) is None
    written(path, 128)
    assert list(read_results(path).n) == [64, 96, 128]


@pytest.mark.parametrize("cut", [3, 40, -1])
def test_a_header_cut_short_is_torn_and_the_file_starts_anew(tmp_path, cut):
    path = tmp_path / "r.csv"
    header = written(path, 64).split("\r\n")[0]
    path.write_text(header[:cut], newline="")
    found = scan(path)
    assert found.torn.problem == "a header cut short" and found.rows == [] and found.header == COLUMNS
    with pytest.raises(ResultsError, match="nothing but a header cut short"):
        read_results(path)
    assert "set aside" in set_aside_torn(path, found) and path.stat().st_size == 0
    written(path, 64)
    assert list(read_results(path).n) == [64]


@pytest.mark.parametrize("meta,needle", [
    ({"settings": "runs"}, "'settings' is not a JSON object"),
    ({"settings": {"cache": "warm"}}, "settings.cache is 'warm'"),
    ({"settings": {"runs": "1"}}, "settings.runs is '1'"),
    ({"gpu": "H100"}, "'gpu' is not a JSON object"),
    ({"invocations": 5}, "'invocations' is not a JSON array"),
    ({"invocations": [1]}, "an entry of 'invocations' is not a JSON object"),
])
def test_metadata_of_the_wrong_shape_is_a_clear_error(tmp_path, meta, needle):
    path = tmp_path / "r.csv"
    write_metadata(path, meta)
    with pytest.raises(ResultsError, match=needle):
        read_metadata(path)


def test_a_killed_resumed_run_counts_from_its_last_start():
    from mmbench.results import finished_at

    meta = {"started_at": "2026-11-20T10:00:00+00:00",
            "invocations": [{"started_at": "2026-11-20T10:00:00+00:00", "finished_at": "2026-11-20T11:00:00+00:00"},
                            {"started_at": "2026-11-22T09:00:00+00:00"}]}
    assert finished_at(meta).isoformat() == "2026-11-22T09:00:00+00:00"


def test_a_run_writes_into_its_own_folder_and_draws_there():
    from mmbench.results import figure_dir, run_csv

    csv = run_csv("zosa2017-h100", Path("runs"))
    assert csv == Path("runs/zosa2017-h100/zosa2017-h100.csv") and figure_dir(csv) == csv.parent
    assert run_csv("tune-dbuf-1", Path("runs/tuning")) == Path("runs/tuning/tune-dbuf-1/tune-dbuf-1.csv")
    assert figure_dir(Path("results/tuning/dbuf-h200j/compare.csv")) == Path("results/tuning/dbuf-h200j/compare")
    assert figure_dir(Path("r.csv")) == Path("r")


def test_a_gzipped_results_csv_reads_as_it_is_with_its_metadata_beside_it(tmp_path):
    import gzip

    from mmbench.results import figure_dir, metadata_path, sibling, torn_path

    path = tmp_path / "run" / "run.csv"
    sink = CsvSink(path)
    sink.write(row(64))
    sink.write(row(65, status="wrong", reason="NaN"))
    sink.close()
    packed = path.with_name("run.csv.gz")
    packed.write_bytes(gzip.compress(path.read_bytes(), mtime=0))
    assert read_results(packed).equals(read_results(path)) and done_keys(packed) == done_keys(path)
    assert metadata_path(packed) == metadata_path(path) == tmp_path / "run" / "run.meta.json"
    assert torn_path(packed) == tmp_path / "run" / "run.torn.txt" and figure_dir(packed) == tmp_path / "run"
    assert sibling(packed, ".profile.csv") == tmp_path / "run" / "run.profile.csv"
    packed.write_bytes(packed.read_bytes()[:-20])  # a cut stream is an error naming the file, not a traceback
    with pytest.raises(ResultsError, match="run.csv.gz cannot be read"):
        read_results(packed)
