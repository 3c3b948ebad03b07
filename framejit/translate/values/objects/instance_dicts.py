"""Is this real dict some object's instance __dict__?

Why this exists: a bound method of a dict can reach a frame on its own, without the object whose
attributes the dict holds (`B.__dict__.update` left on the stack across a graph break, handed to the
resume function). Modelled as a plain dict, a write through it would be invisible to the frame's model
of that object's attributes (`getattr(B, "extra", 0)` right after would read the old state). Only such
stray receivers are checked, at translation time: gc's referrers of the dict, looking for an object
whose vars() is that very dict. A method the frame looked up on a dict it reached by a path (a module
global, an item, an attribute: `_VALIDATORS.get(t)`) is not checked: gc.get_referrers scans the whole
heap, which in a large process cost seconds per conversion (huggingface_hub's dataclass validation
calls such a `.get` per field); such a dict being also some object's __dict__ is not modelled.
"""
import gc


def is_instance_dict(d):
    if type(d) is not dict:
        return False
    for owner in gc.get_referrers(d):
        if type(owner) is dict or owner is d:
            continue
        try:
            if getattr(owner, "__dict__", None) is d:
                return True
        except Exception:       # an object whose __dict__ lookup runs code that fails
            continue
    return False
