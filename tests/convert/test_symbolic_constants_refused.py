"""The last line of defence against a SymInt leaking into run-time code (translate/values/numbers/sym_concrete.py):
generated code never binds a Sym object as a constant (convert/codegen.py's Namespace.bind), and a graph
never holds one as a literal argument (graph/builder.py finish). Either is a framejit failure, which the
runtime turns into a warning, a record and plain Python: never a crash in a real kernel at run time."""
import operator

import pytest
import torch
import torch.fx as fx

from framejit.convert.codegen import Namespace
from framejit.shapes.symbols import ShapeContext
from framejit.translate.graph.builder import _refuse_symbolic_literals


def _symbolic_int():
    return ShapeContext().number(7, "n", "n")


@pytest.mark.parametrize("wrap", [lambda s: s, lambda s: (1, s), lambda s: torch.Size([s, 2]), lambda s: [[s]]],
                         ids=["bare", "tuple", "size", "nested"])
def test_generated_code_refuses_a_symbolic_constant(wrap):
    with pytest.raises(RuntimeError, match="symbolic number"):
        Namespace({}).bind(wrap(_symbolic_int()))


def test_plain_constants_still_bind():
    ns = Namespace({})
    assert ns.bind(torch.Size([7, 2])).startswith("__fj_c") and ns.bind(7) == "7"


def test_graph_refuses_a_symbolic_literal():
    graph = fx.Graph()
    x = graph.placeholder("x")
    graph.output(graph.call_function(operator.add, (x, _symbolic_int())))
    with pytest.raises(RuntimeError, match="literal argument"):
        _refuse_symbolic_literals(graph)
