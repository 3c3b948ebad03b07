"""The runtime: what runs on every call of a compiled function.

compiled.py: the wrappers `framejit.compile` returns (api.py), whose cache miss converts under the
cache lock, counts recompiles against the limit and falls back to plain Python; cache.py: entries
per code object; dispatcher.py: the generated function that tries them; failures.py: what a framejit
failure turns into. Imports convert/ and what it may import, backends/, and observe/ (it runs each
conversion inside an observation and hands observe/ the failure policy). Above it are only api.py and
observe/'s replay, explain and report.
"""
