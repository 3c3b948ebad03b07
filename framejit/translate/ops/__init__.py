"""Opcode handlers, one module per family, registered in dispatch.HANDLERS.

Imports everything else in translate/ but translator.py, which imports these to register them.
"""
