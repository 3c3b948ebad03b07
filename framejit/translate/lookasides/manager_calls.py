"""`manager.clone()` of torch's grad-mode managers (what their decorator wrappers call on every call): a new
manager of the same mode (values/managers/manager_call_paths.py), stood in for by the clone's code object.
"""
from ..dispatch import CODE_LOOKASIDES
from ..values.managers.manager_call_paths import CLONED_KINDS, manager_clone

for _kind in CLONED_KINDS:
    CODE_LOOKASIDES[_kind.clone.__code__] = manager_clone
