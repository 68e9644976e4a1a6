"""scripts/same_code.py's record of why a tuning entry moved to a new source hash: each move's reason after
the earlier ones (the metadata keeps its history)."""
import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "same_code.py"


def _same_code():
    spec = importlib.util.spec_from_file_location("same_code", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_second_rehash_keeps_the_first_ones_reason():
    reason = _same_code().rehash_reason
    first = reason("d69e7d0", "SPLITK=1", None)
    assert first == ("kernel text changed since d69e7d0; code identical (scripts/same_code.py); "
                     "SPLITK=1 added, the new parameter's default")
    second = reason("3d8779d", "", first)
    assert second == first + " | then: kernel text changed since 3d8779d; code identical (scripts/same_code.py)"
