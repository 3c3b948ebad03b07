"""The compile cache: (code, globals, options) -> CodeState -> list of generated entries.

A state is found by the identity of its code object and globals dict (two equal code objects are two
functions: convert/identity_keys.py says why) and the compile options. The compiled modules of one class
share it (`framejit.compile(block)` for each block of a model, a deep copy): an entry's guards say which
modules it serves (translate/guards/instance_guards.py), and each module's dispatcher inlines the first
entry. Functions that share all of these (closures of one `def`, decorator wrappers) share entries:
each entry guards the cells of the function actually called (`__fj_cl`), and break and resume
functions take that closure at run time (convert/resume.py), so no entry depends on which of them made it.

Ownership: a state is held by the compiled functions using it (their dispatchers) and by the entries
that call its resume functions; the table here holds it weakly. So a compiled function that dies frees
its graphs, and nothing here keeps a function, its globals or its module alive. Each state holds the
entries (tried in order on every call: the first whose guards pass runs), the reason the frame runs
eagerly (if it does), and the recompile history used in reports. Conversion holds one re-entrant lock;
the fast path (iterating the entry list) takes none.
"""
import collections
import sys
import threading
import weakref

from ..shapes.memory import ShapeMemory

LOCK = threading.RLock()
_STATES = weakref.WeakValueDictionary()    # (id(code), id(globals), options, id(owner)) -> CodeState
_WRAPPERS = weakref.WeakSet()              # every live WrapperState, for reset()
MAX_RECOMPILE_REASONS = 64                 # kept per state, for reports (newest last)
# What the report shows of the last states that died (tools/report/collect.py's FrameInfo, plain data: no
# graph, guard object or function kept), so a report still lists a function compiled and dropped.
DEAD_FRAMES = collections.deque(maxlen=64)
# how a dying state is summed up for the report: tools/report/collect.py's frame_info, which it puts here
# when imported (the runtime does not import the report, which reads the cache)
DEAD_FRAME_INFO = [lambda code, state, with_source: None]


class CodeState:
    def __init__(self, code, f_globals, owner):
        self.code = code             # held, so the ids in the table's key stay this state's
        self.f_globals = f_globals
        self.owner = owner
        self.code_name = code.co_qualname
        self.entries = []            # generated entry functions (fast path iterates this)
        self.results = []            # ConvertResult per conversion whose entry is here, same order
        self.eager_reason = None     # set: this frame runs as plain Python
        self.recompile_reasons = collections.deque(maxlen=MAX_RECOMPILE_REASONS)
        self.warned_limit = False
        self.conversions = 0
        self.listeners = weakref.WeakSet()   # dispatchers to regenerate when entries change
        self.shape_memory = ShapeMemory()     # automatic dynamic: sizes and numbers seen to change

    def __del__(self):
        if self.results or self.recompile_reasons or self.eager_reason is not None:
            try:
                DEAD_FRAMES.append(DEAD_FRAME_INFO[0](self.code, self, with_source=False))
            except Exception:          # interpreter shutdown; a report is not worth a failure here
                pass

    def changed(self):
        """Entries were added or cleared: let every live dispatcher regenerate its fast path."""
        for dispatcher in list(self.listeners):
            dispatcher._framejit_refresh()

    def add(self, result):
        self.entries.append(result.entry)
        self.results.append(result)
        companion = getattr(result, "companion", None)
        if companion is not None:
            # the shared entry over the same graph (guards/instance_guards.py), tried after it; listed
            # in `results` (one per conversion) only once the identity entry is gone
            self.entries.append(companion.entry)
        # the entry matches these modules by id (guards.WeakIdentity): it must go before one's id can be
        # another object's, i.e. when it dies (weak reference callbacks run before its memory is reused)
        result.watchers = [weakref.ref(obj, _forget_entry(self, result.entry))
                           for obj in (ref() for ref in getattr(result, "dies_with", ())) if obj is not None]
        self.changed()

    def remove(self, entry):
        """Forget `entry` (one of its modules died), if it is still here."""
        for i, e in enumerate(self.entries):
            if e is entry:
                del self.entries[i]
                kept = []
                for r in self.results:
                    if r.entry is not entry:
                        kept.append(r)
                    elif getattr(r, "companion", None) is not None and \
                            any(x is r.companion.entry for x in self.entries):
                        kept.append(r.companion)     # the shared entry lives on
                self.results[:] = kept
                self.changed()
                return

    def evict_oldest(self):
        """Forget the oldest entry (its dispatchers regenerate): a shared state keeps a bounded number."""
        self.remove(self.entries[0])

    def clear(self):
        self.entries.clear()
        self.results.clear()
        self.eager_reason = None
        self.recompile_reasons.clear()
        self.warned_limit = False
        self.changed()


def _forget_entry(state, entry):
    """A weak-reference callback forgetting `entry` from `state` (both reached weakly: the callback is
    held by the entry's result, and must not keep either alive)."""
    state_ref, entry_ref, lock, finalizing = weakref.ref(state), weakref.ref(entry), LOCK, sys.is_finalizing

    def forget(_):
        st, e = state_ref(), entry_ref()
        if st is not None and e is not None and not finalizing():    # at exit, nothing runs again
            with lock:
                st.remove(e)
    return forget


class WrapperState:
    """What one compiled function (not its code object) has settled: functions made by one decorator
    share a code object (HF's forward wrappers), and one of them running eagerly or hitting the
    recompile limit must not stop the others."""

    __slots__ = ("fn", "eager_reason", "eager_fn", "conversions", "_watchers", "__weakref__")

    MAX_KEYS = 1024                  # combinations counted (those of live modules always are)

    def __init__(self, fn):
        self.fn = fn
        self.reset()
        _WRAPPERS.add(self)

    def reset(self):
        self.eager_reason = None     # set: this function runs as plain Python (or eager_fn)
        self.eager_fn = self.fn
        self.conversions = {}        # key (ids of the modules a call passes, api._instances) -> count
        self._watchers = {}          # key -> weak refs to those modules: the count goes when one dies

    def count(self, key, modules):
        """One more conversion for `key`. A module's id is another module's once it dies, so the count
        of a combination goes with its modules (a new module must not inherit a dead one's count and
        hit the recompile limit); keys without modules (a closure's cells) are kept to MAX_KEYS."""
        if key not in self.conversions:
            if modules:
                me = weakref.ref(self)

                def forget(_, key=key):
                    wrapper = me()
                    if wrapper is not None:
                        wrapper.conversions.pop(key, None)
                        wrapper._watchers.pop(key, None)
                self._watchers[key] = [weakref.ref(m, forget) for m in modules]
            elif len(self.conversions) >= self.MAX_KEYS:
                oldest = next((k for k in self.conversions if k not in self._watchers), None)
                self.conversions.pop(oldest, None)
        self.conversions[key] = self.conversions.get(key, 0) + 1


def state_for(code, f_globals, key, owner=None):
    table_key = (id(code), id(f_globals), key, id(owner))
    with LOCK:
        st = _STATES.get(table_key)
        if st is None:
            st = _STATES[table_key] = CodeState(code, f_globals, owner)
        return st


def all_states():
    with LOCK:
        return [(st.code, st) for st in list(_STATES.values())]


def reset():
    """Forget every cached entry and every compiled function's eager/limit decision: existing wrappers
    convert again on their next call."""
    with LOCK:
        for st in list(_STATES.values()):
            st.clear()
        for wrapper in list(_WRAPPERS):
            wrapper.reset()
        DEAD_FRAMES.clear()
