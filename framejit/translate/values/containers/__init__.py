"""Lists, tuples and their relatives: subscripts and container methods on every kind, deques, lists the
frame only appends to, and namedtuples' own attributes.
"""
