"""Break functions and resume functions: how a graph break continues as plain Python and then resumes.

At a graph break before original instruction N (stack S, live locals L):

  entry (convert/codegen.py)  runs the graph, replays side effects, then calls
  break function      __fj_break_N(*S_without_NULLs, *L): pushes S back (NULLs by PUSH_NULL), runs the
                      breaking instruction(s) for real (e.g. KW_NAMES/PRECALL/CALL of `print(x)`), and for
                      each successor K calls the compiled resume function with the new stack and L;
  resume function     __fj_resume_at_K(*S', *L): a copy of the whole original code with a prologue that
                      pushes S' and jumps to K. It is wrapped by framejit.compile, so the code after the
                      break gets its own graphs through the same cache and guards.

Resume functions are made from the *original* code (a break inside a resume function maps back to the
original instruction), so a chain of breaks never nests copies. They are cached per original code,
weakly: the entries whose break functions call them hold them.

Closures: functions sharing a code object share its entries, so neither a break function nor a resume
function may hold one function's cells. For a code with free variables the entry passes its `__fj_cl`
to the break function (`ClosureTaking`: the break code made into a function over those cells at the
call), and the break function passes its cells on (LOAD_CLOSURE..., BUILD_TUPLE) to a resume wrapper
that takes the closure as its first argument (api: `closure_arg`).
"""
import dis
import types
import weakref

from ..bytecode import assemble, copy_instructions, decode, make
from .identity_keys import WeakIdentityMap

CO_VARARGS, CO_VARKEYWORDS = 0x04, 0x08

# resume code -> (weak ref to the original code, number of prologue instructions)
RESUME_ORIGIN = WeakIdentityMap()
# original code -> {(K, null layout, locals, globals, options): weak ref to the compiled resume wrapper}
_RESUME_CACHE = WeakIdentityMap()


class ClosureTaking:
    """A break function of a code with free variables, called as `(closure, *stack, *locals)`: its code
    runs as a function over the caller's closure."""

    __slots__ = ("code", "f_globals", "name")

    def __init__(self, code, f_globals, name):
        self.code, self.f_globals, self.name = code, f_globals, name

    def __call__(self, closure, *args):
        return types.FunctionType(self.code, self.f_globals, self.name, None, closure)(*args)


def _function(code, f_globals, name):
    """The break function for `code`: a plain function, or a ClosureTaking one for free variables."""
    if code.co_freevars:
        return ClosureTaking(code, f_globals, name)
    return types.FunctionType(code, f_globals, name)


def empty_closure(code):
    """Cells holding nothing, one per free variable: a template function's closure that keeps no
    caller's objects alive."""
    return tuple(types.CellType() for _ in code.co_freevars) if code.co_freevars else None


def resume_origin(code):
    """(the code a resume function's `code` continues, its prologue length), or None for any other code."""
    origin = RESUME_ORIGIN.get(code)
    original = origin[0]() if origin is not None else None
    return (original, origin[1]) if original is not None else None


def note_resume_origin(code, original, prologue_length):
    """`code` continues `original` after `prologue_length` prologue instructions (a replayed record's
    resume function: framejit.tools.replay hands that over through runtime/compiled.replay_conversion)."""
    RESUME_ORIGIN[code] = (weakref.ref(original), prologue_length)


def original_position(code, index):
    """(original code, original instruction index) for instruction `index` of `code`."""
    origin = RESUME_ORIGIN.get(code)
    orig_code = origin[0]() if origin is not None else None
    if orig_code is None:
        return code, index
    return orig_code, index - origin[1]


def _prologue(code, stack_nulls, positions, cells=True, iter_slots=()):
    """Frame setup, then the stack pushed back. A copy of the original code makes the original's cells
    (those holding a value arrive as arguments of the same name; MAKE_CELL wraps them). A stack slot's
    argument is deleted once pushed: as in the original frame, the value is on the stack only (a local
    would keep it alive longer, and an exception raised from it would hold its own frame: a cycle)."""
    out = [make("MAKE_CELL", name) for name in code.co_cellvars] if cells else []
    if code.co_freevars:
        out.append(make("COPY_FREE_VARS", len(code.co_freevars)))
    out.append(make("RESUME", 0))
    k = 0
    for is_null in stack_nulls:
        if is_null:
            out.append(make("PUSH_NULL"))
        else:
            out.append(make("LOAD_FAST", f"__fj_s{k}"))
            out.append(make("DELETE_FAST", f"__fj_s{k}"))
            if iter_slots and _slot_index(stack_nulls, k) in iter_slots:
                out.append(make("GET_ITER"))      # a for loop's iterator, passed as its remaining items
            k += 1
    for ins in out:
        ins.positions = positions
    return out


def _slot_index(stack_nulls, k):
    """The stack position of the k-th non-NULL slot."""
    seen = -1
    for i, is_null in enumerate(stack_nulls):
        if not is_null:
            seen += 1
            if seen == k:
                return i
    return -1


def _argnames(stack_nulls, live_locals):
    """The live locals first, then the stack slots: a method's `self` stays its first argument, which is
    where zero-argument super() looks for it."""
    n = sum(1 for x in stack_nulls if not x)
    return list(live_locals) + [f"__fj_s{i}" for i in range(n)]


def _varnames(code, argnames):
    rest = [v for v in code.co_varnames if v not in argnames]
    return tuple(argnames) + tuple(rest)


def make_resume_function(orig_code, f_globals, k_index, stack_nulls, live_locals, wrap, options_key,
                         iter_slots=(), varying_numbers=()):
    """The compiled resume function continuing `orig_code` at instruction `k_index`. For a code with
    free variables it takes the caller's closure as its first argument (see the module docstring).
    `iter_slots`: stack positions holding a for loop's iterator, passed as a tuple of its remaining
    items and turned back into an iterator (GET_ITER) by the prologue. `varying_numbers`: the names of
    its int arguments that differ on every call (see runtime/compiled.py's `_compile_function`)."""
    per_code = _RESUME_CACHE.setdefault(orig_code, {})
    key = (k_index, tuple(stack_nulls), tuple(live_locals), id(f_globals), options_key, tuple(iter_slots),
           tuple(varying_numbers))
    ref = per_code.get(key)
    hit = ref() if ref is not None else None
    if hit is not None:
        return hit
    original = copy_instructions(decode(orig_code))
    name = f"__fj_resume_at_{original[k_index].offset}_{orig_code.co_name}"
    code, prologue_length = _entered_copy(orig_code, original, k_index, stack_nulls, live_locals, name,
                                          iter_slots=iter_slots)
    # weak: the original's cache holds this resume function, so a strong ref here would keep it alive
    RESUME_ORIGIN[code] = (weakref.ref(orig_code), prologue_length)
    fn = types.FunctionType(code, f_globals, name, None, empty_closure(code))
    compiled = wrap(fn, closure_arg=bool(code.co_freevars), varying_numbers=varying_numbers)
    per_code[key] = weakref.ref(compiled)
    return compiled


def _entered_copy(orig_code, instrs, target_index, stack_nulls, live_locals, name, extra_varnames=(),
                  iter_slots=()):
    """Code for `instrs` (a copy of orig_code's instructions, maybe edited) entered at `target_index`:
    a prologue takes the stack slots and live locals as arguments, pushes the stack back and jumps
    there. Returns the code and the number of instructions put before the copy."""
    target = instrs[target_index]
    prologue = _prologue(orig_code, stack_nulls, target.positions, iter_slots=iter_slots)
    jump = make("JUMP_FORWARD", target=target)
    jump.positions = target.positions
    argnames = _argnames(stack_nulls, live_locals)
    code = assemble(prologue + [jump] + instrs, orig_code,
                    co_varnames=_varnames(orig_code, argnames) + tuple(extra_varnames),
                    co_argcount=len(argnames), co_posonlyargcount=0, co_kwonlyargcount=0,
                    co_flags=orig_code.co_flags & ~(CO_VARARGS | CO_VARKEYWORDS), co_name=name, co_qualname=name)
    return code, len(prologue) + 1


def call_group_start(instrs, call_index):
    """Index of the first instruction of the call at `call_index` (its KW_NAMES / PRECALL, if any)."""
    start = call_index
    while start > 0 and instrs[start - 1].opname in ("PRECALL", "KW_NAMES"):
        start -= 1
    return start


# What the code after a break may hold for the break function to run it itself: it only returns.
_PLAIN_TAIL_OPS = frozenset({"NOP", "POP_TOP", "LOAD_CONST", "LOAD_FAST", "RETURN_VALUE"})


class PlainTail:
    """The original code after a break when all it does is return (`return f(x)`; `f(x)` then the
    implicit `return None`; `return y` of a live local): the break function runs these instructions
    itself, as dynamo does, instead of calling a resume function that would be one more conversion, one
    more guarded call per run, and no graph."""

    __slots__ = ("instructions",)

    def __init__(self, instructions):
        self.instructions = instructions


def plain_tail(instrs, index, live_locals):
    """A PlainTail for the code from `index` on, or None when it does more than return. LOAD_FAST only
    of a live local (the break function takes it by that name); no instruction inside a try block."""
    out = []
    for ins in instrs[index:]:
        if ins.opname not in _PLAIN_TAIL_OPS or ins.exn is not None:
            return None
        if ins.opname == "LOAD_FAST" and ins.argval not in live_locals:
            return None
        out.append(ins)
        if ins.opname == "RETURN_VALUE":
            return PlainTail(out)
    return None


def make_break_function(orig_code, f_globals, break_instrs, stack_nulls, live_locals, successors):
    """A plain function that pushes the stack back, runs `break_instrs` and calls the resume functions.

    successors: list of (jump_taken: bool | None, resume_fn or PlainTail, stack_nulls_after). For a
    conditional jump the first is the fall-through (False) and the second the jump (True); None for
    straight-line.
    """
    body = [copy for copy in copy_instructions(break_instrs)]
    for ins in body:
        ins.exn = None
    positions = body[-1].positions
    prologue = _prologue(orig_code, stack_nulls, positions, cells=False)
    tails = []
    for _, resume_fn, nulls_after in successors:
        if isinstance(resume_fn, PlainTail):
            tails.append(copy_instructions(resume_fn.instructions))
            continue
        tails.append(_call_resume_tail(resume_fn, nulls_after, live_locals, positions,
                                       freevars=orig_code.co_freevars))
    last = body[-1]
    instrs = prologue + body
    if len(successors) == 2:
        last.target = tails[1][0]
        instrs += tails[0] + tails[1]
    elif len(successors) == 1:
        instrs += tails[0]
    # no successor: the instruction raises or returns
    argnames = _argnames(stack_nulls, live_locals)
    temp_count = max((len(n) for _, _, n in successors), default=0)
    varnames = tuple(argnames) + tuple(f"__fj_r{i}" for i in range(temp_count))
    name = f"__fj_break_{break_instrs[-1].offset}_{orig_code.co_name}"
    code = assemble(instrs, orig_code, co_varnames=varnames, co_argcount=len(argnames), co_posonlyargcount=0,
                    co_kwonlyargcount=0, co_flags=orig_code.co_flags & ~(CO_VARARGS | CO_VARKEYWORDS),
                    co_cellvars=(), co_name=name, co_qualname=name)
    return _function(code, f_globals, name)


def make_break_in_try_function(orig_code, f_globals, call_index, stack_nulls, live_locals, successor):
    """The break function for a call inside a try block: a copy of the whole original code whose
    prologue pushes the stack and jumps to the call (its KW_NAMES/PRECALL first), with the call to the
    compiled resume function inserted right after it. The call keeps its place in the exception table,
    so an exception it raises runs the frame's own handler (as plain Python, in this copy); the inserted
    tail is outside the table, so what the resume function raises is not handled twice (the resume
    function, a copy too, has already run the handlers that cover the code after the call)."""
    original = copy_instructions(decode(orig_code))
    _, resume_fn, nulls_after = successor
    tail = _call_resume_tail(resume_fn, nulls_after, live_locals, original[call_index].positions,
                             cells=frozenset(orig_code.co_cellvars), freevars=orig_code.co_freevars)
    name = f"__fj_break_{original[call_index].offset}_{orig_code.co_name}"
    instrs = original[:call_index + 1] + tail + original[call_index + 1:]
    code, _ = _entered_copy(orig_code, instrs, call_group_start(original, call_index), stack_nulls, live_locals,
                            name, extra_varnames=[f"__fj_r{i}" for i in range(len(nulls_after))])
    return _function(code, f_globals, name)


def callable_layout(instrs, call_index):
    """How the callable of the call at `call_index` sits on the stack at run time: "null" when it is
    certainly above a NULL (CALL_FUNCTION_EX; PUSH_NULL before it; LOAD_GLOBAL's NULL bit), ("method", i)
    when LOAD_METHOD at instruction i pushed it (which may leave [function, self] instead), None when
    that is not clear. Found by walking back over straight-line single pushes (the arguments)."""
    call = instrs[call_index]
    if call.opname == "CALL_FUNCTION_EX":
        return "null"
    targets = {id(ins.target) for ins in instrs if ins.target is not None}
    i = call_group_start(instrs, call_index) - 1
    for _ in range(call.arg):               # one plain load per argument
        ins = instrs[i] if i >= 0 else None
        if ins is None or id(ins) in targets or not _is_plain_load(ins):
            return None
        i -= 1
    ins = instrs[i] if i >= 0 else None
    if ins is None or id(ins) in targets:
        return None
    if ins.opname == "LOAD_METHOD":
        return ("method", i)
    if ins.opname == "LOAD_GLOBAL":
        return "null" if ins.arg & 1 else None
    before = instrs[i - 1] if i >= 1 else None
    plain = ins.opname in ("LOAD_FAST", "LOAD_DEREF", "LOAD_ATTR", "LOAD_CONST") and before is not None and \
        before.opname == "PUSH_NULL"
    return "null" if plain else None


def _is_plain_load(ins):
    """An instruction pushing exactly one value and touching nothing else on the stack."""
    return ins.opname in ("LOAD_FAST", "LOAD_CONST", "LOAD_DEREF", "LOAD_CLOSURE") or \
        (ins.opname == "LOAD_GLOBAL" and not ins.arg & 1)


def make_routed_function(fn, call_index, above, route, layout="null"):
    """fn as plain Python, except that the callable of the call at `call_index` (with `above` stack
    items over it) goes through `route` first (callees.CalleeWrappers: the callee's compiled wrapper).
    The rest of fn runs exactly as written; the inserted instructions share the call's place in the
    exception table. With layout ("method", i), the LOAD_METHOD at i becomes LOAD_ATTR (a bound method
    over a NULL: the same call, with the callable in one slot)."""
    code = fn.__code__
    original = copy_instructions(decode(code))
    call = original[call_index]
    if layout != "null":
        load = original[layout[1]]
        as_attr = [make("LOAD_ATTR", load.argval), make("PUSH_NULL"), make("SWAP", 2)]
        for ins in as_attr:
            ins.positions, ins.exn, ins.starts_line = load.positions, load.exn, None
        as_attr[0].starts_line = load.starts_line
        for other in original:                        # nothing jumps to LOAD_METHOD mid-expression, but
            if other.target is load:                  # keep any jump landing on it pointed at its stand-in
                other.target = as_attr[0]
        original[layout[1]:layout[1] + 1] = as_attr
        call_index += 2
        call = original[call_index]
    start = call_group_start(original, call_index)
    temps = [f"__fj_t{i}" for i in range(above)]
    seq = [make("STORE_FAST", t) for t in reversed(temps)]
    seq += [make("PUSH_NULL"), make("SWAP", 2), make("LOAD_CONST", route), make("SWAP", 2),
            make("PRECALL", 1), make("CALL", 1)]
    # back on the stack, and out of the locals: a temp must not keep an argument alive past the call
    # (a `del` of the last other reference closes a generator or frees a tensor then, as in eager)
    seq += [ins for t in temps for ins in (make("LOAD_FAST", t), make("DELETE_FAST", t))]
    for ins in seq:
        ins.positions = call.positions
        ins.exn = call.exn
    instrs = original[:start] + seq + original[start:]
    routed = assemble(instrs, code, co_varnames=code.co_varnames + tuple(temps), co_name=code.co_name,
                      co_qualname=code.co_qualname)
    out = types.FunctionType(routed, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    out.__kwdefaults__ = fn.__kwdefaults__
    return out


def _call_resume_tail(resume_fn, stack_nulls, live_locals, positions, cells=frozenset(), freevars=()):
    """Pass the stack and the live locals to the resume function and return what it returns. `cells`:
    the live names that are cells in the code this tail ends (a copy of the original, which made them
    with MAKE_CELL): their contents are passed, as the resume function's own MAKE_CELL expects.
    `freevars`: the code's free variables, whose cells go first, as one tuple (the closure the resume
    function runs over)."""
    # A NULL cannot be popped (POP_TOP would decref NULL), so the only NULL allowed here is one at the
    # bottom of the stack, which becomes the NULL under the resume call (convert/frame.py checks this).
    assert not any(stack_nulls[1:]), "NULL above the bottom of the stack at a graph break"
    out = []
    for i in reversed(range(len(stack_nulls))):
        if not stack_nulls[i]:
            out.append(make("STORE_FAST", f"__fj_r{i}"))
    if not (stack_nulls and stack_nulls[0]):
        out.append(make("PUSH_NULL"))
    out.append(make("LOAD_CONST", resume_fn))
    n = 0
    if freevars:
        out += [make("LOAD_CLOSURE", name) for name in freevars]
        out.append(make("BUILD_TUPLE", len(freevars)))
        n += 1
    for name in live_locals:                  # in _argnames' order
        out.append(make("LOAD_DEREF" if name in cells else "LOAD_FAST", name))
    n += len(live_locals)
    for i, is_null in enumerate(stack_nulls):
        if not is_null:
            out.append(make("LOAD_FAST", f"__fj_r{i}"))
            n += 1
    out.append(make("PRECALL", n))
    out.append(make("CALL", n))
    out.append(make("RETURN_VALUE"))
    for ins in out:
        ins.positions = positions
    return out


def stack_after(opname, arg, depth_before, jump):
    return depth_before + dis.stack_effect(dis.opmap[opname], arg, jump=jump)
