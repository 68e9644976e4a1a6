"""An installed mmbench needs no checkout: the wheel, installed alone into a folder of its own, runs a
study's report by the config's name from an empty folder (its configs, kernels and tuning cache in it)."""

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_the_installed_wheel_reports_a_study_by_its_configs_name_from_an_empty_folder(tmp_path):
    from hatchling.builders.wheel import WheelBuilder

    (wheel,) = WheelBuilder(str(REPO)).build(directory=str(tmp_path / "dist"), versions=["standard"])
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"mmbench/configs/limits.toml", "mmbench/configs/companions/lab3-tiles.toml"} <= names
    site = tmp_path / "site"  # the wheel's package alone; its dependencies are this Python's
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-compile", "--target", str(site),
                    wheel], check=True, capture_output=True)
    here = tmp_path / "empty"
    here.mkdir()
    for name in ("amd-tiling-h100.csv", "amd-tiling-h100.meta.json", "amd-tiling-h100.profile.csv",
                 "amd-tiling-h100.profile.meta.json"):
        shutil.copy(REPO / "results" / "amd-tiling-h100" / name, here / name)
    env = {**os.environ, "PYTHONPATH": str(site), "MMBENCH_RUNS": str(tmp_path / "runs")}
    env.pop("MMBENCH_VARIANT_FILES", None)
    done = subprocess.run([sys.executable, "-m", "mmbench", "report", "--config", "amd-tiling", "amd-tiling-h100.csv",
                           "--out", "report"], cwd=here, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (here / "report" / "REPORT.md").is_file()
    where = subprocess.run([sys.executable, "-c", "import mmbench; print(mmbench.__file__)"], cwd=here, env=env,
                           capture_output=True, text=True).stdout
    assert where.startswith(str(site)), where  # the wheel's mmbench ran, not the checkout's
    missing = subprocess.run([sys.executable, "-m", "mmbench", "report", "--config", "amd-tiling"], cwd=here, env=env,
                             capture_output=True, text=True)
    assert missing.returncode == 2 and "the reference run is the source repository's" in missing.stderr
