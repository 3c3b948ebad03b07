"""Translator: symbolic execution of one frame (and the frames it inlines).

The translator walks the frame's decoded instructions, keeping a stack and locals of symbolic Values.
Tensor work goes into the shared GraphBuilder, every Source read gets a Guard, mutations of Python
state go into SideEffects. A handler that cannot continue raises GraphBreak; the root translator keeps a
snapshot of its state from before each instruction so the converter can split the graph exactly there.

Inlining: calling a Python function creates a child Translator over the callee's code that shares the
graph, guards and side effects; its return value is pushed on the caller's stack. A break inside a
callee propagates to the root, which then restarts and stops at the call instead (the callee is then
called through a compiled wrapper at run time).
"""
import builtins
import linecache

import torch

from ..errors import GraphBreak
from . import calls
from .dispatch import HANDLERS, RETURN
from .source import DictKeySource
from .source import GlobalSource, ItemSource, LocalSource, NamespaceSource
from .values.base import Value
from .values.objects.lookup_steps import DELETED
# the handler families register their handlers when imported
from .ops import (calls as ops_calls, containers as ops_containers, control as ops_control,  # noqa: F401
                  exceptions as ops_exceptions, imports as ops_imports, load_store as ops_load_store,
                  match as ops_match, operators as ops_operators)
from .values.managers.state_managers import unwind
from .ops.exceptions import check_ops_in_handled_region
from .values.objects.exception_values import raise_in_frame


class Snapshot:
    __slots__ = ("index", "stack", "locals", "kw_names", "graph_mark", "effects_mark", "cells", "handling")

    def __init__(self, index, stack, locals_, kw_names, graph_mark, effects_mark, cells=None, handling=0):
        self.index = index
        self.handling = handling            # how many exceptions the frame is handling (except/finally)
        self.stack = stack
        self.locals = locals_
        self.cells = cells or {}            # cellvar name -> its contents then (EMPTY if unset)
        self.kw_names = kw_names
        self.graph_mark = graph_mark
        self.effects_mark = effects_mark


class Translator:
    def __init__(self, ctx, code, instructions, f_globals, *, args=None, locals_=None, closure=(),
                 closure_sources=None, globals_source=None, parent=None, fn_name=None):
        self.ctx = ctx                      # ConversionContext: graph, guards, side effects, config
        self.code = code
        self.instructions = instructions
        position = getattr(instructions, "position", None)      # shared decodes carry their index
        self.index = position if position is not None else {inst: i for i, inst in enumerate(instructions)}
        self.f_globals = f_globals
        self.globals_source = globals_source   # None: same globals as the root frame
        self.closure = closure               # tuple of Values (CellValue) for inlined, real cells for root
        self.closure_sources = closure_sources
        self.parent = parent
        self.depth = 0 if parent is None else parent.depth + 1
        self.fn_name = fn_name or code.co_name
        self.stack = []
        self.locals = dict(locals_ or {})
        self.frame_args = args or {}         # root only: real argument values, wrapped lazily
        self.cells = {}                      # cellvar name -> CellValue
        self.closures_made = set()           # names of the code objects of closures made over self.cells
        self.kw_names = None
        self.inst = None
        self.return_value = None
        self.snapshot = None
        self.break_at = ctx.break_at if parent is None else ()
        self.deleted = set()                 # root args deleted with `del`
        # torch state managers entered and not yet exited (shared by the whole translation)
        self.active_managers = ctx.active_managers
        # exceptions being handled (innermost last): what PUSH_EXC_INFO saves and a bare `raise` re-raises
        self.handled_exceptions = [] if parent is None else parent.handled_exceptions

    # ---- stack helpers ------------------------------------------------------------------------
    def push(self, v):
        assert isinstance(v, Value), v
        self.stack.append(v)

    def pop(self):
        return self.stack.pop()

    def popn(self, n):
        if n == 0:
            return []
        items = self.stack[-n:]
        del self.stack[-n:]
        return items

    def peek(self, k=1):
        return self.stack[-k]

    # ---- running ------------------------------------------------------------------------------
    def run(self, start=0):
        if self.parent is not None:
            return self._run(start)
        try:
            return self._run(start)
        finally:
            # real grad mode / autocast back to how they were at entry (a grad-mode block the frame started
            # inside may have ended in it: state_managers.resumed_grad_block)
            unwind(self.active_managers, self.ctx.entry_state[torch.is_grad_enabled])

    def _run(self, start):
        instructions = self.instructions
        i = start
        root = self.parent is None
        graph = self.ctx.graph
        while True:
            inst = instructions[i]
            self.inst = inst
            if root:
                self.snapshot = Snapshot(i, list(self.stack), dict(self.locals), self.kw_names,
                                         graph.mark(), self.ctx.side_effects.mark(),
                                         {n: c.contents for n, c in self.cells.items()} if self.cells else None,
                                         len(self.handled_exceptions))
                if i in self.break_at:
                    raise self.graph_break("call", f"the called function has a graph break inside "
                                           f"({self.break_at[i]}); it is called through a compiled wrapper")
            graph.current_stack_trace = None
            handler = HANDLERS.get(inst.opname)
            if handler is None:
                raise self.graph_break("opcode", f"the instruction {inst.opname} is not supported")
            created = len(graph.created)
            try:
                nxt = handler(self, inst)
                if inst.exn is not None and len(graph.created) > created:
                    check_ops_in_handled_region(self, inst, graph.created[created:])
            except GraphBreak as gb:
                handler_start = raise_in_frame(self, inst, gb)      # a Python exception this frame catches
                if handler_start is not None:
                    i = self.index[handler_start]
                    continue
                if gb.where is None:
                    gb.where = self.where(inst)
                if not root:
                    gb.inlined = True
                raise
            if nxt is None:
                i += 1
            elif nxt is RETURN:
                return self.return_value
            else:
                i = self.index[nxt]

    def graph_break(self, kind, reason, hint=None):
        gb = GraphBreak(kind, reason, hint)
        gb.where = self.where(self.inst)
        return gb

    # ---- source positions ---------------------------------------------------------------------
    def where(self, inst):
        """`File "f.py", line 12, in fn` plus the source line with a caret under the expression."""
        return format_position(self.code, inst)

    def line_of(self, inst):
        pos = inst.positions if inst is not None else None
        return pos.lineno if pos is not None and pos.lineno is not None else self.code.co_firstlineno

    # ---- locals -------------------------------------------------------------------------------
    def load_local(self, name):
        v = self.locals.get(name)
        if v is None:
            if name in self.frame_args and name not in self.deleted:
                v = self.ctx.wrap(self.frame_args[name], LocalSource(name))
                self.locals[name] = v
            else:
                raise self.graph_break("unbound local", f"local variable {name!r} referenced before assignment")
        return v

    def load_global(self, name):
        """The Value of global `name` as this frame reads it (a pending store, its module's globals,
        then builtins), guarded through its Source and reported to the recorder."""
        ctx = self.ctx
        if self.globals_source is None:
            pending = ctx.side_effects.globals.get(name)
            if pending is not None:
                return pending
            if name in self.f_globals:
                obj = self.f_globals[name]
                if ctx.recorder is not None:
                    ctx.recorder.record_global(name, obj)
                return ctx.wrap(obj, GlobalSource(name))
            obj = self._builtin_or_name_error(name, NamespaceSource())
            if ctx.recorder is not None:
                ctx.recorder.record_builtin(name, obj)
            return ctx.builtin_value(name, obj)
        pending = ctx.side_effects.pending_module_global(self.f_globals, name)
        if pending is DELETED:
            raise GraphBreak("global", f"reading global {name!r} after the frame deleted it")
        if pending is not None:
            return pending
        if name in self.f_globals:
            obj = self.f_globals[name]
            if isinstance(self.globals_source, tuple):      # callee globals without a reachable source
                return ctx.wrap_foreign_global(obj)
            # torch's own modules are trusted like TRUSTED_MODULES: their globals are not guarded
            trusted = (self.f_globals.get("__name__") or "").startswith("torch.")
            return ctx.wrap(obj, ItemSource(self.globals_source, name), guard=not trusted)
        source = None if isinstance(self.globals_source, tuple) else self.globals_source
        obj = self._builtin_or_name_error(name, source)
        return ctx.builtin_value(name, obj)

    def _builtin_or_name_error(self, name, globals_dict):
        """A name missing from the globals: the builtin (not guarded: see builtin_value), or a NameError
        whose cause -- the name in neither dict -- is guarded, so a global defined later is noticed."""
        try:
            return self.lookup_builtin(name)
        except GraphBreak:
            if globals_dict is not None:
                guards = self.ctx.guards
                guards.add("CONST_MATCH", DictKeySource(globals_dict, name, lookup=False), False)
                if isinstance(globals_dict, NamespaceSource):
                    guards.add("CONST_MATCH", DictKeySource(NamespaceSource(builtins=True), name, lookup=False), False)
            raise

    def lookup_builtin(self, name):
        b = self.f_globals.get("__builtins__", builtins)
        b = b if isinstance(b, dict) else b.__dict__
        if name not in b:
            raise self.graph_break("name error", f"name {name!r} is not defined")
        return b[name]


    # ---- the way back into the call dispatch ------------------------------------------------------
    # An interpreter is mutually recursive: calling a function runs its code, whose instructions call
    # more functions. The value kinds and lookaside tables below calls.py call back through these
    # methods of the translator they are handed, never by importing calls.py or this module.
    def call(self, fn, args, kwargs):
        """fn(*args, **kwargs) for a symbolic callable and arguments (calls.call_value)."""
        return calls.call_value(self, fn, args, kwargs)

    def call_method(self, receiver, name, args, kwargs):
        """receiver.name(*args, **kwargs) (calls.call_method)."""
        return calls.call_method(self, receiver, name, args, kwargs)

    def inline(self, fn, fn_source, args, kwargs):
        """Python function fn called with symbolic arguments: its code runs in a child translator
        (calls.inline_function); fn_source reaches fn, or None."""
        return calls.inline_function(self, fn, fn_source, args, kwargs)

    def child(self, code, f_globals, **frame):
        """A translator over `code` called from this frame: it shares this conversion (graph, guards,
        side effects) one inline level deeper. frame: locals_, closure, globals_source, fn_name."""
        return Translator(self.ctx, code, self.ctx.decode(code), f_globals, parent=self, **frame)


def format_position(code, inst):
    pos = getattr(inst, "positions", None)
    lineno = pos.lineno if pos is not None and pos.lineno is not None else code.co_firstlineno
    head = f'  File "{code.co_filename}", line {lineno}, in {code.co_name}'
    text = linecache.getline(code.co_filename, lineno).rstrip("\n")
    if not text:
        return head
    stripped = text.lstrip()
    indent = len(text) - len(stripped)
    out = f"{head}\n    {stripped}"
    if pos is not None and pos.col_offset is not None and pos.end_col_offset is not None and pos.end_lineno == lineno:
        start = max(pos.col_offset - indent, 0)
        width = max(pos.end_col_offset - pos.col_offset, 1)
        out += "\n    " + " " * start + "^" * width
    return out
