#include "torch/csrc/dynamo/inline_values.h"

#include <cstdint>

#include "torch/csrc/dynamo/py_ref.h"
#include "torch/csrc/dynamo/python_compat.h"

namespace dynamo_guards {

namespace {

InlineValuesPolicy policy = InlineValuesPolicy::WritesReported;

#if PY_VERSION_HEX >= 0x030D0000
// The head of CPython 3.13's struct _dictvalues (Include/internal/
// pycore_dict.h): capacity, size, embedded, valid, then the values. Only
// `embedded` is read: nonzero when the values live inside an object, that
// is, when the dict shares an object's inline values. The probe checks this
// reading against the interpreter before anything relies on it.
struct DictValuesHead {
  uint8_t capacity;
  uint8_t size;
  uint8_t embedded;
  uint8_t valid;
};

bool shares_inline_values(PyObject* dict) {
  const auto* values = reinterpret_cast<const DictValuesHead*>(reinterpret_cast<PyDictObject*>(dict)->ma_values);
  return values != nullptr && values->embedded != 0;
}

bool is_split(PyObject* dict) {
  return reinterpret_cast<PyDictObject*>(dict)->ma_values != nullptr;
}

// Moves obj's inline values into storage its dict owns (CPython's
// `obj.__dict__ = obj.__dict__`). True when the dict no longer shares them.
bool detach(PyObject* obj, PyObject* dict) {
  if (!PyType_HasFeature(Py_TYPE(obj), Py_TPFLAGS_MANAGED_DICT)) {
    return false;
  }
  PyObject** slot = _PyObject_GetDictPtr(obj);
  if (slot == nullptr || *slot != dict) {
    PyErr_Clear();
    return false;
  }
  if (_PyObject_SetManagedDict(obj, dict) < 0) {
    PyErr_Clear();
    return false;
  }
  return !shares_inline_values(dict);
}

// An instance of a fresh plain class, with one attribute and its __dict__
// materialized: the case gh-125608 is about.
struct ProbeObject {
  OwnedRef cls;
  OwnedRef obj;
  PyObject* dict = nullptr;  // borrowed from obj

  bool make() {
    cls = OwnedRef(PyObject_CallFunction(reinterpret_cast<PyObject*>(&PyType_Type), "s()N", "_InlineValuesProbe", PyDict_New()));
    obj = OwnedRef(cls ? PyObject_CallNoArgs(cls.get()) : nullptr);
    if (!obj || PyObject_SetAttrString(obj.get(), "x", Py_None) < 0) {
      return false;
    }
    PyObject** slot = _PyObject_GetDictPtr(obj.get());
    dict = slot != nullptr ? *slot : nullptr;
    return dict != nullptr && PyDict_CheckExact(dict);
  }

  // Whether an attribute write through the object changes the dict's
  // version.
  bool write_is_counted() {
    uint64_t before = dict_version(dict);
    if (PyObject_SetAttrString(obj.get(), "x", Py_True) < 0) {
      return false;
    }
    return dict_version(dict) != before;
  }
};

InlineValuesPolicy probe() {
  ProbeObject p;
  if (!p.make()) {
    return InlineValuesPolicy::SplitDictsUnpinnable;
  }
  if (p.write_is_counted()) {
    return InlineValuesPolicy::WritesReported;
  }
  // Writes go unreported: the detach must be recognised and must work.
  if (!PyType_HasFeature(Py_TYPE(p.obj.get()), Py_TPFLAGS_INLINE_VALUES) || !shares_inline_values(p.dict) ||
      !detach(p.obj.get(), p.dict) || !p.write_is_counted()) {
    return InlineValuesPolicy::SplitDictsUnpinnable;
  }
  return InlineValuesPolicy::DetachBeforePinning;
}
#endif

}  // namespace

void probe_inline_values() {
#if PY_VERSION_HEX >= 0x030D0000
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  policy = probe();
  PyErr_Clear();
  PyErr_Restore(type, value, traceback);
#endif
}

InlineValuesPolicy inline_values_policy() {
  return policy;
}

bool dict_writes_reported(PyObject* dict) {
#if PY_VERSION_HEX >= 0x030D0000
  switch (policy) {
    case InlineValuesPolicy::WritesReported:
      return true;
    case InlineValuesPolicy::DetachBeforePinning:
      return !shares_inline_values(dict);
    case InlineValuesPolicy::SplitDictsUnpinnable:
      return !is_split(dict);
  }
#endif
  return true;
}

bool make_dict_writes_reported(PyObject* obj, PyObject* dict) {
#if PY_VERSION_HEX >= 0x030D0000
  if (dict_writes_reported(dict)) {
    return true;
  }
  return policy == InlineValuesPolicy::DetachBeforePinning && detach(obj, dict);
#else
  return true;
#endif
}

}  // namespace dynamo_guards
