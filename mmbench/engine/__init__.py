"""How points run: in this process or on a Dask cluster, a point at a time or batched.

                 this process          a Dask cluster
    points       points_local.py       points_dask.py (client), dask_worker.py (workers)
    batched      batched_local.py      batched_dask.py

The point engines stand behind one interface (interface.Engine), which a Session (session.py)
writes into a results CSV, one row (schema.py's columns, rows.py) at a time; the batched ones behind another
(interface.BatchedEngine) measure whole size classes of a tuning into their own class files.
session.open_engine and session.open_batched_engine open the one of each row a run needs.
Before a run: plan.py (what to measure, with which settings) and refusals.py (what is refused
before anything is touched); after: outcome.py (what the run says and leaves) and provenance.py
(where and with what the file was measured).
"""
