"""Symbolic execution of one frame's bytecode into a torch.fx graph (see translator.py)."""
