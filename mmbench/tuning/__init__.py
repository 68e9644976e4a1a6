"""Tuning: search a variant's parameter space, keep the best configuration per size class, and
give runs those parameters. `mmbench tune` and `mmbench.tune(...)` both call workflow.perform.

- workflow.py: one tuning from its options to the cache, the one function both callers share.
- request.py: a tuning as asked for (TuneOptions: the options as given) and as resolved
  (TuneRequest: what it tunes, where, with which engine).
- asked.py: the options checked (ranges, what a replay or a plan ignores, the cache written);
  resolve.py: the options turned into a TuneRequest (variant, shapes, configurations, engine).
- points_run.py, batched_run.py: the points engine's and the batched engine's tuning runs;
  measure.py: the points' run and what the caller hears of it (Hooks).
- replaying.py: a strategy replayed on a recorded tuning, its picks recorded; no GPU.
- plan.py, plan_run.py: tuning plans (several variants per shape) read, and run.
- strategies.py, search.py: which configurations a tuning tries (brute, random, narrowed by
  candidates or pinned parameters; tpe, ga) and the best per size class of what it measured.
- cache.py: the tuning caches (the user's, then the shipped one): read, checked, looked up,
  recorded into (the GPU identity an entry is keyed by, DeviceId, is vocabulary.py's).
- writeback.py: a finished tuning's best configurations into the cache, for both engines.
- for_runs.py, rules.py: a run's tunable variants given their tuned parameters from the caches
  (or a variant's rule).
- benchmark.py: the strategies scored on recorded spaces (`mmbench tune-benchmark`).
"""
