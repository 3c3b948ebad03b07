"""Watching framejit: metrics, timing, logs, profiler, records and replay, explain, the HTML report.

It hangs beside the pipeline: a conversion reports to it through the observation the runtime gives
it, so these modules import only each other, backends/ and the leaves (errors, config). The parts
that re-run or read the running system sit on top: replay.py (re-runs a conversion), explain.py
(compiles and runs once) and report/ (reads the cache).
"""
