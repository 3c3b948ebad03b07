"""The compile cache: code object -> per-options state -> list of generated entries.

Keys are weak on the code object, so a compiled function that dies frees its graphs. Each state holds
the entries (tried in order on every call: the first whose guards pass runs), the reason the frame
runs eagerly (if it does), and the recompile history used in reports. Conversion holds one re-entrant
lock; the fast path (iterating the entry list) takes none.
"""
import threading
import weakref

LOCK = threading.RLock()
_CACHE = weakref.WeakKeyDictionary()      # code -> {options key: CodeState}


class CodeState:
    def __init__(self, code):
        self.code_name = code.co_qualname
        self.entries = []            # generated entry functions (fast path iterates this)
        self.results = []            # ConvertResult per entry, same order
        self.eager_reason = None     # set: this frame runs as plain Python
        self.recompile_reasons = []
        self.warned_limit = False
        self.conversions = 0
        self.listeners = []          # weak refs to dispatchers to regenerate when entries change

    def changed(self):
        """Entries were added or cleared: let every live dispatcher regenerate its fast path."""
        alive = []
        for ref in self.listeners:
            dispatcher = ref()
            if dispatcher is not None:
                alive.append(ref)
                dispatcher._framejit_refresh()
        self.listeners[:] = alive


def state_for(code, key):
    with LOCK:
        per_code = _CACHE.get(code)
        if per_code is None:
            per_code = _CACHE[code] = {}
        st = per_code.get(key)
        if st is None:
            st = per_code[key] = CodeState(code)
        return st


def all_states():
    with LOCK:
        return [(code, st) for code, per in list(_CACHE.items()) for st in per.values()]


def reset():
    """Forget every cached entry (existing wrappers re-convert on their next call)."""
    with LOCK:
        for per in list(_CACHE.values()):
            for st in per.values():
                st.entries.clear()
                st.results.clear()
                st.eager_reason = None
                st.recompile_reasons.clear()
                st.warned_limit = False
                st.changed()
        _CACHE.clear()
