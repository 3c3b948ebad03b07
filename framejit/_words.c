/* framejit._words: the few per-call reads that are cheaper in one C call than in many Python ones.

Why this exists: after a compiled graph has run, each object the next call's checks touch is a cache
miss, and from Python each miss is waited for in turn. Here:
  unchanged / gather  the version words (dict and class tags, pointer fields: translate/dict_versions.py)
                      compared with their stamp in one tight loop, so the misses overlap; gather reads
                      them into bytes only when a new stamp is taken;
  tensor_check        an input tensor's metadata, from its TensorImpl words (translate/tensor_words.py);
  state_is            grad mode, CPU autocast, jit tracing and the default dtype (translate/native_state.py);
  same_atoms          a list or tuple of strings/ints/bools/None against its expected items (guards.py).
Optional: without this module (not built, another platform) framejit does the same checks in Python.
The addresses read are those of fields of objects the caller keeps alive. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static PyObject *
gather(PyObject *module, PyObject *addresses)
{
    if (!PyBytes_CheckExact(addresses)) {
        PyErr_SetString(PyExc_TypeError, "gather() expects bytes holding 64-bit addresses");
        return NULL;
    }
    Py_ssize_t size = PyBytes_GET_SIZE(addresses);
    if (size % 8 != 0) {
        PyErr_SetString(PyExc_ValueError, "gather(): the length of the addresses is not a multiple of 8");
        return NULL;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, size);
    if (out == NULL)
        return NULL;
    const char *src = PyBytes_AS_STRING(addresses);
    char *dst = PyBytes_AS_STRING(out);
    for (Py_ssize_t offset = 0; offset < size; offset += 8) {
        uintptr_t address;
        memcpy(&address, src + offset, 8);
        uint64_t word = *(const volatile uint64_t *)address;
        memcpy(dst + offset, &word, 8);
    }
    return out;
}

/* unchanged(addresses, stamp) -> bool: do the words at `addresses` equal `stamp` (bytes as gather made
   them)? The per-call check: it compares in the loop, so nothing is allocated or written; False also
   for a stamp that is not yet bytes of the same length (never stamped). */
static PyObject *
unchanged(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyBytes_CheckExact(args[0])) {
        PyErr_SetString(PyExc_TypeError, "unchanged(addresses: bytes, stamp)");
        return NULL;
    }
    Py_ssize_t size = PyBytes_GET_SIZE(args[0]);
    if (!PyBytes_CheckExact(args[1]) || PyBytes_GET_SIZE(args[1]) != size || size % 8 != 0)
        Py_RETURN_FALSE;
    const char *src = PyBytes_AS_STRING(args[0]);
    const char *stamp = PyBytes_AS_STRING(args[1]);
    for (Py_ssize_t offset = 0; offset < size; offset += 8) {
        uintptr_t address;
        uint64_t expected;
        memcpy(&address, src + offset, 8);
        memcpy(&expected, stamp + offset, 8);
        if (*(const volatile uint64_t *)address != expected)
            Py_RETURN_FALSE;
    }
    Py_RETURN_TRUE;
}

/* tensor_check(t, spec) -> bool: does tensor `t` have the metadata `spec` describes? spec is bytes of
   native 64-bit words: the exact type t must have, the offset of the TensorImpl pointer in the Python
   object, then (word index, mask, value) triples over the TensorImpl's words (translate/tensor_words.py
   builds it from a layout probed at import). Nothing is read before the type has matched exactly, so
   the object is a torch.Tensor and the pointer is its TensorImpl. False is only "not shown equal":
   callers fall back to the plain checks. */
static PyObject *
tensor_check(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyBytes_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "tensor_check(t, spec: bytes)");
        return NULL;
    }
    Py_ssize_t size = PyBytes_GET_SIZE(args[1]);
    if (size < 16 || (size - 16) % 24 != 0) {
        PyErr_SetString(PyExc_ValueError, "tensor_check(): malformed spec");
        return NULL;
    }
    const char *spec = PyBytes_AS_STRING(args[1]);
    uint64_t type_pointer, pointer_offset;
    memcpy(&type_pointer, spec, 8);
    memcpy(&pointer_offset, spec + 8, 8);
    if ((uintptr_t)Py_TYPE(args[0]) != type_pointer)
        Py_RETURN_FALSE;
    const char *impl;
    memcpy(&impl, (const char *)args[0] + pointer_offset, sizeof(impl));
    if (impl == NULL)
        Py_RETURN_FALSE;
    for (Py_ssize_t offset = 16; offset < size; offset += 24) {
        uint64_t index, mask, value, word;
        memcpy(&index, spec + offset, 8);
        memcpy(&mask, spec + offset + 8, 8);
        memcpy(&value, spec + offset + 16, 8);
        memcpy(&word, impl + 8 * index, 8);
        if ((word & mask) != value)
            Py_RETURN_FALSE;
    }
    Py_RETURN_TRUE;
}

/* state_is(mask, value) -> bool: libtorch's thread-local and global state as one integer, grad mode
   (bit 0), CPU autocast (bit 1), jit tracing (bit 2), default dtype's ScalarType (bits 8-15), compared
   under mask. The readers are libtorch's own functions (c10::GradMode::is_enabled,
   at::autocast::is_autocast_enabled(kCPU), c10::impl::tls_is_dispatch_key_included(Tracer),
   c10::get_default_dtype_as_scalartype), whose addresses translate/native_state.py looks up and checks
   against torch's Python answers before handing them over with set_state_functions(); until then
   state_is raises. Tracing is the Tracer dispatch key, which torch::jit::tracer::setTracingState
   includes exactly while a tracing state is set; its number is probed, not assumed. */
static unsigned char (*grad_enabled)(void);
static unsigned char (*autocast_enabled)(signed char);
static signed char (*default_scalar_type)(void);
static unsigned char (*key_included)(unsigned short);
static unsigned short tracer_key;

static PyObject *
set_state_functions(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError,
                        "set_state_functions(grad, autocast, dtype, key_included, tracer_key) takes four "
                        "addresses and a dispatch key number");
        return NULL;
    }
    void *found[4];
    for (int i = 0; i < 4; i++) {
        found[i] = PyLong_AsVoidPtr(args[i]);
        if (found[i] == NULL && PyErr_Occurred())
            return NULL;
    }
    long key = PyLong_AsLong(args[4]);
    if (key == -1 && PyErr_Occurred())
        return NULL;
    if (key < 0 || key > 0xffff) {
        PyErr_SetString(PyExc_ValueError, "set_state_functions(): tracer_key out of range");
        return NULL;
    }
    grad_enabled = (unsigned char (*)(void))found[0];
    autocast_enabled = (unsigned char (*)(signed char))found[1];
    default_scalar_type = (signed char (*)(void))found[2];
    key_included = (unsigned char (*)(unsigned short))found[3];
    tracer_key = (unsigned short)key;
    Py_RETURN_NONE;
}

static PyObject *
state_is(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "state_is(mask, value)");
        return NULL;
    }
    if (grad_enabled == NULL || autocast_enabled == NULL || default_scalar_type == NULL || key_included == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "state_is(): the state readers are not set");
        return NULL;
    }
    long mask = PyLong_AsLong(args[0]), value = PyLong_AsLong(args[1]);
    if ((mask == -1 || value == -1) && PyErr_Occurred())
        return NULL;
    long state = 0;
    if (mask & 1)
        state |= grad_enabled() & 1;
    if (mask & 2)
        state |= (long)(autocast_enabled(0) & 1) << 1;
    if (mask & 4)
        state |= (long)(key_included(tracer_key) & 1) << 2;
    if (mask & 0xff00)
        state |= (long)(unsigned char)default_scalar_type() << 8;
    if ((state & mask) == value)
        Py_RETURN_TRUE;
    Py_RETURN_FALSE;
}

/* same_atoms(seq, expected: tuple) -> bool: seq is an exact list or tuple as long as expected, and
   each item is the expected one or of its exact type and equal to it. framejit asks this only for
   items of type str, int, bool or NoneType, whose equality runs no user code (guards.fuse_atom_items):
   the same answer as the item-by-item guards it replaces, `len(s) == n` and `type(s[i]) is T and
   s[i] == v`, in one call. */
static PyObject *
same_atoms(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyTuple_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "same_atoms(seq, expected: tuple)");
        return NULL;
    }
    PyObject *seq = args[0], *expected = args[1];
    PyObject **items;
    Py_ssize_t n;
    if (PyList_CheckExact(seq)) {
        items = ((PyListObject *)seq)->ob_item;
        n = PyList_GET_SIZE(seq);
    } else if (PyTuple_CheckExact(seq)) {
        items = ((PyTupleObject *)seq)->ob_item;
        n = PyTuple_GET_SIZE(seq);
    } else {
        Py_RETURN_FALSE;
    }
    if (n != PyTuple_GET_SIZE(expected))
        Py_RETURN_FALSE;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = items[i], *want = PyTuple_GET_ITEM(expected, i);
        if (item == want)
            continue;
        if (Py_TYPE(item) != Py_TYPE(want))
            Py_RETURN_FALSE;
        int equal = PyObject_RichCompareBool(item, want, Py_EQ);
        if (equal < 0)
            return NULL;
        if (!equal)
            Py_RETURN_FALSE;
    }
    Py_RETURN_TRUE;
}

static PyMethodDef methods[] = {
    {"set_state_functions", (PyCFunction)(void (*)(void))set_state_functions, METH_FASTCALL,
     "set_state_functions(grad, autocast, dtype, key_included, tracer_key): libtorch's state readers."},
    {"state_is", (PyCFunction)(void (*)(void))state_is, METH_FASTCALL,
     "state_is(mask, value) -> bool: grad mode, CPU autocast, tracing, default dtype (see above) under mask."},
    {"gather", gather, METH_O,
     "gather(addresses: bytes) -> bytes: the 64-bit words at the native-endian 64-bit addresses given."},
    {"unchanged", (PyCFunction)(void (*)(void))unchanged, METH_FASTCALL,
     "unchanged(addresses: bytes, stamp) -> bool: the words at the addresses equal the stamp's."},
    {"same_atoms", (PyCFunction)(void (*)(void))same_atoms, METH_FASTCALL,
     "same_atoms(seq, expected: tuple) -> bool: seq's items are expected's (see the comment above it)."},
    {"tensor_check", (PyCFunction)(void (*)(void))tensor_check, METH_FASTCALL,
     "tensor_check(t, spec: bytes) -> bool: t's metadata words match spec (see the comment above it)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef words_module = {PyModuleDef_HEAD_INIT, "_words", NULL, -1, methods};

PyMODINIT_FUNC
PyInit__words(void)
{
    return PyModule_Create(&words_module);
}
