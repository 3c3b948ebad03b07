"""Converting one frame: translate, split at graph breaks, compile the graph, generate the entry.

frame.py runs the translator (restarting it at a callee that breaks); graph_entry.py compiles the graph
and generates the entry; break_decision.py decides whether a break splits the frame and break_split.py
splits it; results.py holds what a conversion is given and returns; resume.py makes break and resume functions;
callees.py the compiled wrappers of callees that break; codegen.py the entry's Python source;
hooks.py the user's bytecode hooks. Imports translate/, bytecode/ and the leaves (errors, config); it
reports to observe/ only through the observation it is handed.
"""
