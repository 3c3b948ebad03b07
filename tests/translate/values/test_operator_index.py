"""operator.index (values/operator_rules.py): ints, bools and negative ints answer as Python does; a
non-integer raises TypeError eagerly and in the compiled call alike."""
import operator

from tests.differential import check, randn


def index_of_constants(x):
    return x * operator.index(3) + operator.index(True) + operator.index(-2)


def index_of_a_float(x):
    return x + operator.index(1.5)


def test_operator_index_of_integers_in_one_graph():
    check(index_of_constants, randn(3), fullgraph=True, graphs=1)


def test_operator_index_of_a_float_raises_type_error():
    check(index_of_a_float, randn(3))
