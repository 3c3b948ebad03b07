"""Python numbers the graph computes from symbolic sizes (SymValue, SliceValue), and the rule that a
symbolic number never folds into a constant.
"""
