/* framejit._words: read many scattered machine words in one tight loop.

Why this exists: a compiled call compares a tuple of machine words (dict and class version tags,
pointer fields: translate/dict_versions.py) with the ones it stamped. Read one by one from Python,
each word is a cache miss waited for in turn, plus an int object; here the loads are independent
and issued back to back, so their misses overlap, and the result is one bytes object compared with
the stamp by memcmp. Optional: without this module (not built, another platform) framejit reads the
same words through ctypes. The addresses are those of fields of objects the caller keeps alive. */
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

static PyMethodDef methods[] = {
    {"gather", gather, METH_O,
     "gather(addresses: bytes) -> bytes: the 64-bit words at the native-endian 64-bit addresses given."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef words_module = {PyModuleDef_HEAD_INIT, "_words", NULL, -1, methods};

PyMODINIT_FUNC
PyInit__words(void)
{
    return PyModule_Create(&words_module);
}
