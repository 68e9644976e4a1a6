import pytest

from mmbench.results import (COLUMNS, CsvSink, ResultsError, done_keys, join_samples, read_metadata,
                             read_results, samples_of, write_metadata)


def row(n, status="ok", **extra):
    return {"variant": "best", "label": "CUDA-Best", "backend": "cuda", "params": "BLOCK=32", "m": n, "n": n, "k": n,
            "cache": "cold", "status": status, "time_ms_samples": join_samples([0.5, 0.25]), **extra}


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
    assert done_keys(path) == {("best", "BLOCK=32", 64, 64, 64, "cold"), ("best", "BLOCK=32", 96, 96, 96, "cold")}
    assert path.read_text().count("variant,") == 1


def test_unknown_columns_refuse_to_append(tmp_path):
    path = tmp_path / "other.csv"
    path.write_text("a,b\n1,2\n")
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


def test_git_commit_named_by_the_environment_wins(monkeypatch):
    """The GPU machine's copy may carry a stale .git; the commit the caller names is the truth."""
    from mmbench.environment import git_info

    monkeypatch.setenv("MMBENCH_GIT_COMMIT", "abc1234")
    assert git_info() == {"commit": "abc1234", "from": "MMBENCH_GIT_COMMIT"}
    monkeypatch.delenv("MMBENCH_GIT_COMMIT")
    info = git_info()
    assert "from" in info or len(info["commit"]) == 40
