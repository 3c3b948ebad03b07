"""Lazy iterators consumed inside the frame: generators and genexprs, enumerate / zip / map / filter,
and the itertools iterators.
"""
