"""Context managers whose enter and exit are performed symbolically: grad mode, inference mode,
autocast, nullcontext and managers written as generators, with the exit values a with-block keeps.
"""
