"""Tuning: search a variant's parameter space, keep the best configuration per size class, and
give runs those parameters.

- strategies.py: which configurations a tuning tries (brute, random, narrowed by candidates or
  pinned parameters) and the best per size class of what it measured; a replay of recorded rows.
- cache.py: the tuning caches (the user's, then the shipped one): read, checked, looked up,
  recorded into (the GPU identity an entry is keyed by, DeviceId, is vocabulary.py's).
- for_runs.py: a run's tunable variants given their tuned parameters from the caches.
- request.py: one `mmbench tune` as data (what it tunes, where, with which engine).
- writeback.py: a finished tuning's best configurations into the cache, for both engines.
- batched_run.py: the batched engine's tuning run (resumable by whole size class).
"""
