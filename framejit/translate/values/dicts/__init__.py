"""Dict kinds beyond the plain dict: dict subclasses (OrderedDict, defaultdict, Counter, user subclasses)
and their instance attributes, transformers' ModelOutput, and keys that hash by identity (tensors,
objects made in the frame).
"""
