"""Where framejit.distributed.execution_order listens to a capture (it needs no fx tracer: framejit's
translator already walks every module call and sees every parameter an op reads).

While `LISTENER[0]` is set, each conversion's GraphBuilder keeps `order_events`: ("enter", module) and
("exit", module) around every inlined module call (lookasides/modules.py's call_impl) and ("use", [nodes])
for every op whose positional arguments include parameters (graph inputs). The converter hands the
events of the attempt that produced its outcome to the listener (`commit`), so attempts restarted at a
call that breaks leave nothing behind. Nobody listening: one attribute test per module call and op at
translation, nothing at run time.
"""
LISTENER = [None]


def new_event_log():
    return [] if LISTENER[0] is not None else None


def commit(builder, fn, arguments, outcome):
    """The conversion of `fn` ended with `outcome` ("entry", "eager", "once") using `builder`."""
    listener = LISTENER[0]
    if listener is not None and builder is not None and builder.order_events is not None:
        listener.commit(builder, fn, arguments, outcome)
