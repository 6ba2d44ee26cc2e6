// The CPython facts the engine reads that differ between the releases it
// supports (3.11, 3.12, 3.13), one function per concern. The rest of the
// engine is written once, against these; a new release changes this file.
//
// What differs, and where it is handled:
// - Dict version tags (PEP 509): maintained by 3.11 to 3.13, deprecated by
//   PEP 699 in 3.12, gone in 3.14. `dict_version` (here).
// - Dict and type watchers: 3.12 and later. `watchers.h`.
// - Objects' __dict__ storage: 3.11 and 3.12 move an object's inline values
//   into its dict when the dict is first asked for; from 3.13 the dict and
//   the object share them, and 3.13.0 reports no change made through the
//   object to the shared values. `inline_values.h`.
// - The dicts of static builtin types: 3.12 keeps them per interpreter, so
//   `tp_dict` is NULL for `object`, `int`, ... `type_dict` (here).
// - Type version tags: 3.13 drops Py_TPFLAGS_VALID_VERSION_TAG.
//   `type_version_tag` (here).
// - Weak references: 3.13 adds PyWeakref_GetRef and deprecates
//   PyWeakref_GetObject. `weakref_referent`, `own_weakref_referent` (here).
#pragma once

#include <Python.h>

#include <cstdint>

namespace dynamo_guards {

// How many low bits of a dict's version tag are flags, not version: from
// 3.12 the dict's watcher bits (DICT_MAX_WATCHERS, 8), and from 3.13 also 4
// bits counting watched mutations (DICT_WATCHED_MUTATION_BITS). Fixed per
// minor release (pycore_dict_state.h).
#if PY_VERSION_HEX >= 0x030D0000
constexpr int kDictTagFlagBits = 12;
#elif PY_VERSION_HEX >= 0x030C0000
constexpr int kDictTagFlagBits = 8;
#else
constexpr int kDictTagFlagBits = 0;
#endif

// The dict's version: its version tag without the flag bits, so that
// watching a dict (ours or another extension's watcher) does not change it.
// Every creation and modification of any dict draws a new tag from one
// interpreter-wide counter, so an equal version means the very same
// contents, never a dict that died and was replaced at the same address
// (but see inline_values.h for what 3.13.0 does not count).
inline uint64_t dict_version(PyObject* dict) {
  _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wdeprecated-declarations\"")
  uint64_t tag = reinterpret_cast<PyDictObject*>(dict)->ma_version_tag;
  _Pragma("GCC diagnostic pop")
  return tag >> kDictTagFlagBits;
}

// The type's version tag while it is valid, else 0. CPython invalidates a
// type's tag whenever the type or one of its bases is modified, and assigns
// a fresh one, never reused, on the next lookup through the type cache
// (_PyType_Lookup); so an equal, valid tag means the type is unchanged.
// 3.11 and 3.12 mark a valid tag with Py_TPFLAGS_VALID_VERSION_TAG; 3.13
// no longer sets that flag and uses 0 for "no valid tag".
inline unsigned int type_version_tag(PyTypeObject* type) {
#if PY_VERSION_HEX >= 0x030D0000
  return type->tp_version_tag;
#else
  return PyType_HasFeature(type, Py_TPFLAGS_VALID_VERSION_TAG) ? type->tp_version_tag : 0;
#endif
}

// The type's valid version tag, assigning one first if it has none (the
// type was not looked up through the type cache since its last change);
// 0 where none can be assigned. Before 3.12 there is no public way to
// assign one short of a lookup; the engine watches no types there.
inline unsigned int assigned_type_version_tag(PyTypeObject* type) {
#if PY_VERSION_HEX >= 0x030C0000
  if (type_version_tag(type) == 0) {
    PyUnstable_Type_AssignVersionTag(type);
  }
#endif
  return type_version_tag(type);
}

// The interpreter-wide dict version counter, read by making an empty dict
// (one allocation from the dict free list): every dict created or changed
// anywhere (any thread) draws the next version. Readings are counted, since
// each draws a version itself; `dicts_untouched_since` then tells whether
// anything but those readings created or changed a dict since `since` (and
// moves `since` to now). Readings happen with the GIL held.
struct DictClock {
  uint64_t version = 0;  // 0: no reading (no dict could be made)
  uint64_t readings = 0;
};
inline uint64_t dict_clock_readings = 0;

inline DictClock read_dict_clock() {
  PyObject* probe = PyDict_New();  // new
  if (probe == nullptr) {
    PyErr_Clear();
    return {};
  }
  DictClock now{dict_version(probe), ++dict_clock_readings};
  Py_DECREF(probe);
  return now;
}

inline bool dicts_untouched_since(DictClock& since) {
  DictClock now = read_dict_clock();
  bool quiet = since.version != 0 && now.version != 0 && now.version - since.version == now.readings - since.readings;
  since = now;
  return quiet;
}

// A type's own attribute dict (borrowed: it lives as long as the type, and
// a static builtin type's as long as the interpreter). 3.12 moved the dicts
// of static builtin types out of tp_dict; PyType_GetDict finds them.
inline PyObject* type_dict(PyTypeObject* type) {
#if PY_VERSION_HEX >= 0x030C0000
  PyObject* d = PyType_GetDict(type);  // new
  Py_XDECREF(d);
  return d;
#else
  return type->tp_dict;
#endif
}

// The referent of a weak reference, or Py_None once it died; borrowed, and
// so only valid until Python code next runs (PyWeakref_GetObject's
// contract, which 3.13 deprecates in favour of PyWeakref_GetRef).
inline PyObject* weakref_referent(PyObject* ref) {
#if PY_VERSION_HEX >= 0x030D0000
  PyObject* obj = nullptr;
  if (PyWeakref_GetRef(ref, &obj) < 0) {
    PyErr_Clear();
    return Py_None;
  }
  if (obj == nullptr) {
    return Py_None;
  }
  // Someone other than this call holds the referent (the weakref would be
  // dead otherwise), so dropping the reference taken here frees nothing.
  Py_DECREF(obj);
  return obj;
#else
  return PyWeakref_GetObject(ref);
#endif
}

// The referent of a weak reference the engine made itself with
// PyWeakref_NewRef (so an exact weakref, laid out as PyWeakReference on
// 3.11 to 3.13), or nullptr once the referent died; borrowed. The read
// PyWeakref_GET_OBJECT made before 3.13 deprecated it, inline: CPython sets
// the referent slot to None when the referent dies, and a referent whose
// reference count has reached zero is being destroyed. For the hot path of
// guards that hold what they pin weakly; never on a user's object.
inline PyObject* own_weakref_referent(PyObject* ref) {
  PyObject* obj = reinterpret_cast<PyWeakReference*>(ref)->wr_object;
  return obj != Py_None && Py_REFCNT(obj) > 0 ? obj : nullptr;
}

}  // namespace dynamo_guards
