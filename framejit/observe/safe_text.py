"""Diagnostics never raise: text about user objects, made so that an object that cannot be shown is said
to be so instead of taking explain(), the report or a recompile reason down with it.

Why this exists: describing a guard or why it failed formats objects of the user's program and of
libraries (`repr`, `__qualname__`), and some of those raise: torch.classes answers any attribute with a
RuntimeError ("Tried to instantiate class '__qualname__.__file__'"), a module's __getattr__ can raise,
a repr can be broken. A diagnostic that raises is worse than none: explain() fails, and a recompile
reason is computed inside the user's call, so the call itself would fail. Each helper here returns
text whatever happens, naming what could not be shown and why (the exception's type and, when that
can be read, its message).
"""


def error_text(exc):
    """'RuntimeError: message' for an exception, even one whose str() raises."""
    name = type(exc).__name__
    try:
        message = str(exc)
    except Exception:
        return name
    message = message.strip().splitlines()[0] if message.strip() else ""
    return f"{name}: {message[:200]}" if message else name


def safely(make_text, what):
    """make_text() if it gives text, else '<what could not be shown (the error)>'."""
    try:
        text = make_text()
    except Exception as exc:
        return f"<{what} could not be shown ({error_text(exc)})>"
    return text if isinstance(text, str) else safely(lambda: str(text), what)


def guard_descriptions(guard_set):
    """One line per guard of a guard set; a guard whose description raises says so, with its source."""
    if guard_set is None:
        return []
    try:
        guards = list(guard_set.guards)
    except Exception:
        return [safely(lambda: "; ".join(guard_set.describe()), "the guards")]
    return [safely(guard.describe, f"guard {i} ({_guarded_name(guard)})") for i, guard in enumerate(guards, 1)]


def _guarded_name(guard):
    source = getattr(guard, "source", None)
    if source is None:
        return type(guard).__name__
    return safely(source.name, "its source")


def miss_reason(guard, env, unexplained):
    """guard.explain_miss(env) (why it failed, or None); when that raises, None, with a line for
    `unexplained` (what could not be checked and why)."""
    try:
        return guard.explain_miss(env)
    except Exception as exc:
        unexplained.append(f"{_guarded_name(guard)}: {error_text(exc)}")
        return None


def unexplained_miss(unexplained):
    """The words for a miss no guard could explain."""
    if not unexplained:
        return "a guard failed"
    return ("a guard failed (what changed could not be shown for " + "; ".join(unexplained[:3])
            + (f" and {len(unexplained) - 3} more" if len(unexplained) > 3 else "") + ")")
