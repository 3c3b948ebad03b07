"""Converting one frame: translate, split at graph breaks, compile the graph, generate the entry.

frame.py runs the translator and decides the outcome; resume.py makes break and resume functions;
callees.py the compiled wrappers of callees that break; codegen.py the entry's Python source;
hooks.py the user's bytecode hooks. Imports translate/, bytecode/ and the leaves (errors, config); it
reports to observe/ only through the observation it is handed.
"""
