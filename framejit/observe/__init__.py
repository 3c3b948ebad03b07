"""Watching framejit: metrics, timing, logs, profiler, records and their files, break warnings.

It hangs beside the pipeline: a conversion reports to it through the observation the runtime gives
it, so these modules import only each other, backends/ and the leaves (errors, config). What re-runs
a conversion or reads the cache (replay, explain, the HTML report) is in framejit/tools/, above runtime/.
"""
