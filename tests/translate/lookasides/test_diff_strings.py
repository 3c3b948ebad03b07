"""Differential tests: building and formatting strings inside a frame.

Model code formats names for parameters, logs shapes and picks branches by string options. framejit
folds f-strings, %-formatting, str.format, format() and the str methods on constants (and on shapes,
dtypes and other values known at translation time); text that depends on tensor values needs a
graph break. Either way the text -- and anything printed -- must be exactly what Python produces.
"""

import pytest
import torch

from tests.differential import CASE_FIELDS, case, randn, run_case

ONE = dict(fullgraph=True, graphs=1)
PY = dict(fullgraph=True)

x34 = randn(3, 4, seed=21)
y34 = randn(3, 4, seed=22)
i34 = x34.to(torch.int64)
g34 = randn(3, 4, seed=23, requires_grad=True)


def bug(fn, *args, reason, kwargs=None, **options):
    """A case framejit gets wrong today: strict xfail whose reason says what is wrong."""
    return pytest.param(fn, args, kwargs or {}, options, id=fn.__name__,
                        marks=[pytest.mark.xfail(strict=True, reason=reason)])


class Point:
    def __init__(self, x, y):
        self.x = x
        self.y = y


# ---------------------------------------------------------------- f-strings


def fstring_width_precision_alignment():
    v = 3.14159
    return f"[{v:8.3f}]", f"[{v:<8.2f}]", f"[{v:^9.1f}]", f"[{42:>5}]", f"[{'ab':*^6}]"


def fstring_sign_and_grouping():
    return f"{1234567:,}", f"{1234567:_}", f"{5:+d}", f"{-5: d}", f"{0.25:.1%}", f"{1e-5:.2e}"


def fstring_conversions():
    s = "it's"
    return f"{s!r}", f"{s!s}", f"{(1, 'a')!r}", f"{s!r:>10}", f"{'é'!a}"


def fstring_of_list_built_in_frame():
    items = [1, "a"]
    return f"{items}", f"{items!r}"


def fstring_nested_format_spec():
    width, prec = 10, 3
    return f"{2.718281:{width}.{prec}f}|", f"{'x':{'>' if width > 5 else '<'}{width}}"


def fstring_integer_bases():
    n = 255
    return f"{n:x}", f"{n:#X}", f"{n:o}", f"{n:#b}", f"{n:08b}", f"{n:c}"


def fstring_expressions_inside():
    items = [1, 2, 3]
    d = {"k": "v"}
    return f"{len(items)} items, sum={sum(items)}, {d['k']}, {items[-1] * 2}, {'yes' if items else 'no'}"


def fstring_self_documenting():
    alpha = 0.5
    return f"{alpha=}", f"{alpha * 2=:.2f}"


def fstring_of_shapes_and_dtype(x):
    return f"{x.shape}", f"{x.dtype}", f"{x.shape[0]}x{x.shape[1]}", f"{x.ndim}d", f"{x.size(-1):>3}"


def fstring_of_shape_tuple(x):
    return f"{tuple(x.shape)}", f"{list(x.shape)}"


def fstring_of_device_and_dtype_names(x):
    return f"{x.device}", f"{x.device.type}", str(x.dtype).replace("torch.", "")


def split_result_indexed(x):
    return str(x.dtype).split(".")[-1], "a.b.c".split(".")[1], "k=v".partition("=")[2]


def fstring_selects_tensor_op(x, name):
    op = f"{name}_{x.ndim}"
    if op == "double_2":
        return x * 2
    return x


def fstring_of_tensor_item_breaks(x):
    return f"{x.sum().item():.3f}", x + 1


# ---------------------------------------------------------------- %-formatting


def percent_formatting_basic():
    return "%d %s %r" % (3, "a", "b"), "%5.2f|" % 3.14159, "%-5d|" % 7, "%x %o %e" % (255, 8, 1234.5)


def percent_formatting_escapes_and_tuples():
    return "100%%" % (), "%s" % (1,), "%.1f" % 2, "%s|%s" % ((3, 4), "t"), "%c%c" % (104, "i")


def percent_formatting_mapping():
    return "%(name)s is %(age)03d" % {"name": "ann", "age": 7}


def percent_formatting_list_value():
    return "%s" % [1, 2]


def percent_format_of_shape(x):
    return "shape=%s rows=%d" % (tuple(x.shape), x.shape[0])


# ---------------------------------------------------------------- str.format and format()


def str_format_positional_and_keyword():
    return "{}-{}".format(1, 2), "{1}{0}{1}".format("a", "b"), "{x}/{y}".format(x=1, y=2)


def str_format_specs():
    return "{:>8}|".format("r"), "{:08.3f}".format(-3.5), "{:,}".format(10 ** 6), "{!r}".format("q")


def str_format_attribute_and_item():
    return "{0[1]}".format("xyz"), "{0.real}".format(3), "{0.imag:.1f}".format(2j)


def str_format_attribute_of_object():
    p = Point(1, 2)
    return "{0.x},{0.y}".format(p)


def str_format_fields_of_non_constants(x):
    p = Point(3, "b")
    d = {"k": 1, "t": x}                        # a dict holding a tensor: only d['k'] becomes text
    width = Point(6, None)
    return "{.x}-{}|{p.y!r:>4}|{d[k]:0{w.x}d}".format(p, "s", p=p, d=d, w=width), \
        "{0.x:{1}}".format(p, ">3"), x * 2


def str_format_of_a_tensor_field_breaks(x):
    p = Point(x, 1)
    return "{0.y} {0.x}".format(p)


def str_format_item_of_dict_argument():
    return "{d[k]}{d[j]}".format(d={"k": 1, "j": 2})


def str_format_unpacked_dict():
    opts = {"a": "unpacked", "b": 2}
    return "{a}-{b}".format(**opts), "{0}{a}".format("p", **opts)


def str_format_map_from_dict():
    return "{a}+{b}".format_map({"a": 1, "b": 2})


def format_builtin():
    return format(3.14159, ".2f"), format(42, "08b"), format("s", ">3"), format(7), format(0.5, "%")


def str_format_of_tensor_shape(x):
    return "{}x{}".format(*x.shape), x.reshape(-1)


# ---------------------------------------------------------------- str methods on constants


def split_and_join():
    s = "a,b,,c"
    return s.split(","), s.split(",", 1), s.rsplit(",", 1), " x  y ".split(), "-".join(["p", "q"])


def strip_family():
    s = "  --hi--  "
    return s.strip(), s.lstrip(), s.rstrip(), s.strip(" -"), "xxhixx".strip("x")


def search_methods():
    s = "hello world"
    return s.find("o"), s.rfind("o"), s.index("w"), s.count("l"), s.find("z"), "lo" in s


def prefix_suffix_methods():
    name = "layer1.weight"
    return name.startswith("layer"), name.endswith((".bias", ".weight")), \
        name.removeprefix("layer1."), name.removesuffix(".weight")


def partition_methods():
    key = "encoder.block.0.attn"
    return key.partition("."), key.rpartition("."), key.partition("#")


def case_methods():
    s = "hELLo wOrld"
    return s.lower(), s.upper(), s.title(), s.capitalize(), s.swapcase(), s.casefold()


def padding_methods():
    return "7".zfill(3), "-7".zfill(4), "ab".center(6, "*"), "ab".ljust(4, "."), "ab".rjust(4)


def predicate_methods():
    return "123".isdigit(), "abc".isalpha(), "a1".isalnum(), " ".isspace(), "Ab".isupper(), \
        "ab".islower(), "Title Case".istitle(), "x_1".isidentifier()


def replace_and_translate():
    return "a-b-c".replace("-", "+"), "a-b-c".replace("-", "", 1), "a\tb".expandtabs(4)


def str_translate_with_table():
    return "abc".translate({97: "A"}), "abc".translate(str.maketrans("ab", "xy"))


def maketrans_of_bytes_and_deletions():
    table = str.maketrans({"a": "1", "b": None})
    return "abcab".translate(table), b"abc".translate(bytes.maketrans(b"ab", b"xy")), \
        "xyz".translate(str.maketrans("x", "X", "z"))


def splitlines_and_encode():
    return "l1\nl2\r\nl3".splitlines(), "é".encode("utf-8"), b"abc".decode(), "ab".encode()


def string_iteration_and_ord():
    return [ord(c) - ord("a") for c in "cab"], "".join(chr(ord(c) + 1) for c in "abc")


def string_comparisons_and_sorting():
    return "apple" < "banana", "Z" < "a", sorted(["b", "A", "a"]), max("abc", "abd"), "ab" * 3


def string_keyed_parameters(x, y):
    params = {}
    for i, t in enumerate([x, y]):
        params[f"layer{i}.weight"] = t
    return {k.upper(): v * 2 for k, v in params.items() if k.endswith("weight")}


def string_option_dispatch(x, act):
    acts = {"relu": torch.relu, "tanh": torch.tanh, "sigmoid": torch.sigmoid}
    return acts[act.lower()](x)


def string_built_in_loop(n):
    out = ""
    for i in range(n):
        out += str(i) if i % 2 else "_"
    return out


# ---------------------------------------------------------------- printing (graph breaks)


def print_with_sep_and_end(x):
    print("a", 1, 2.5, sep="|", end="!\n")
    return x + 1


def print_shape_dims_between_ops(x):
    y = x * 2
    print(f"y is {y.shape[0]} by {y.shape[1]}, {y.dtype}")
    return y + 1


def print_formatted_shape_between_ops(x):
    y = x * 2
    print(f"y has shape {tuple(y.shape)} and dtype {y.dtype}")
    return y + 1


def print_percent_and_format(x, n):
    print("n=%d" % n, "{:.1f}".format(n / 3))
    return x * n


def print_tensor_value(x):
    print(x.sum().item() > 1000)
    return x - 1


def grads_around_a_print(g):
    y = g.tanh()
    print("midway", tuple(y.shape))
    return y * 3


CASES = [
    case(fstring_width_precision_alignment, **PY),
    case(fstring_sign_and_grouping, **PY),
    case(fstring_conversions, **PY),
    case(fstring_of_list_built_in_frame, **PY),
    case(fstring_nested_format_spec, **PY),
    case(fstring_integer_bases, **PY),
    case(fstring_expressions_inside, **PY),
    case(fstring_self_documenting, **PY),
    case(fstring_of_shapes_and_dtype, x34, **PY),
    case(fstring_of_shape_tuple, x34, **PY),
    case(fstring_of_device_and_dtype_names, x34, **PY),
    case(split_result_indexed, x34, **PY),
    case(fstring_selects_tensor_op, x34, "double", **ONE),
    case(fstring_of_tensor_item_breaks, x34),
    case(percent_formatting_basic, **PY),
    case(percent_formatting_escapes_and_tuples, **PY),
    case(percent_formatting_mapping, **PY),
    case(percent_formatting_list_value, **PY),
    case(percent_format_of_shape, x34, **PY),
    case(str_format_positional_and_keyword, **PY),
    case(str_format_specs, **PY),
    case(str_format_attribute_and_item, **PY),
    case(str_format_attribute_of_object, **PY),
    case(str_format_fields_of_non_constants, x34, **ONE),
    case(str_format_of_a_tensor_field_breaks, x34, fullgraph=False),
    case(str_format_item_of_dict_argument, **PY),
    case(str_format_unpacked_dict, **PY),
    case(str_format_map_from_dict, **PY),
    case(format_builtin, **PY),
    case(str_format_of_tensor_shape, x34, **ONE),
    case(split_and_join, **PY),
    case(strip_family, **PY),
    case(search_methods, **PY),
    case(prefix_suffix_methods, **PY),
    case(partition_methods, **PY),
    case(case_methods, **PY),
    case(padding_methods, **PY),
    case(predicate_methods, **PY),
    case(replace_and_translate, **PY),
    case(str_translate_with_table, **PY),
    case(maketrans_of_bytes_and_deletions, **PY),
    case(splitlines_and_encode, **PY),
    case(string_iteration_and_ord, **PY),
    case(string_comparisons_and_sorting, **PY),
    case(string_keyed_parameters, x34, y34, **ONE),
    case(string_option_dispatch, x34, "Tanh", **ONE),
    case(string_built_in_loop, 5, **PY),
    case(print_with_sep_and_end, x34, breaks=1),
    case(print_shape_dims_between_ops, x34, graphs=2, breaks=1),
    case(print_formatted_shape_between_ops, x34, graphs=2, breaks=1),
    case(print_percent_and_format, x34, 4, breaks=1),
    case(print_tensor_value, x34),
    case(grads_around_a_print, g34, grads=True, graphs=2, breaks=1),
]


@pytest.mark.parametrize(CASE_FIELDS, CASES)
def test_matches_eager(fn, args, kwargs, options):
    run_case(fn, args, kwargs, options)
