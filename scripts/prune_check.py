"""Does pruning change a cell's winner? Compare two batched tunings of the same cells made in one
device call: one exhaustive (--prune 0), one pruned. For each cell: the pruned tuning's pick, scored
by the exhaustive file's mean GFLOP/s, against the exhaustive best.

    python3 scripts/prune_check.py EXHAUSTIVE.csv[.gz] PRUNED.csv[.gz]
"""

import sys
from pathlib import Path

import pandas as pd

from mmbench.batched import best_per_class, read_rows


def compare(exhaustive: pd.DataFrame, pruned: pd.DataFrame) -> pd.DataFrame:
    full, picks = best_per_class(exhaustive), best_per_class(pruned)
    ok = exhaustive[exhaustive.status == "ok"].set_index(["size_class", "params"]).gflops
    rows = []
    for cell, best in sorted(full.items()):
        pick = picks.get(cell, {}).get("params")
        scored = ok.get((cell, pick), float("nan"))
        counts = pruned[pruned.size_class == cell].status.value_counts()
        there = pruned[(pruned.size_class == cell) & (pruned.params == best["params"])].status
        rows.append({"cell": cell, "exhaustive_best": best["params"], "gflops_best": best["gflops"],
                     "pruned_pick": pick, "gflops_pick": scored, "pick_vs_best": scored / best["gflops"],
                     "best_in_pruned": there.iloc[0] if len(there) else "absent",
                     "pruned_rows": int(counts.get("pruned", 0)), "ok_rows": int(counts.get("ok", 0))})
    return pd.DataFrame(rows)


if __name__ == "__main__":
    table = compare(read_rows(Path(sys.argv[1])), read_rows(Path(sys.argv[2])))
    print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print(f"worst pick / best: {table.pick_vs_best.min():.4f} over {len(table)} cells; the exhaustive best was pruned "
          f"in {int((table.best_in_pruned == 'pruned').sum())} of them")
