"""The tools a person runs on framejit: replay a record, explain a call, write the HTML report.

Why a package of their own: each of them re-runs a conversion (replay.py, explain.py) or reads the
compile cache (report/), so they sit on top of runtime/, while observe/ sits beside the pipeline and
imports none of it. Keeping them apart keeps every arrow of the layout pointing down.
"""
