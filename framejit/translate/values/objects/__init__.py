"""Python objects: the ones the frame makes (NewObject, super()), the attribute lookup model of real
objects it reaches, calling a class, the dunder protocol of user objects, descriptors called by hand,
instance __dict__s, typing forms and exceptions raised inside the frame.
"""
