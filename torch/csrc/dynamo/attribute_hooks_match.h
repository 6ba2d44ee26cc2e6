// ATTRIBUTE_HOOKS_MATCH: the Python code that answers `value.name` for a
// class with its own `__getattribute__` is still the code Dynamo's trace
// inlined: type(value)'s attribute slot is the one it was, the classes of
// its MRO define `__getattribute__` with the very objects the trace saw, in
// the same order, and `__getattr__` is still the object (or absence) it was.
//
// For such a class, Python's `obj.name` calls the first `__getattribute__`
// of the MRO; each `super().__getattribute__(key)` in it calls the next one
// along the MRO, down to `object.__getattribute__` (PyObject_GenericGetAttr);
// an AttributeError then calls `__getattr__`, when the class has one. Dynamo
// traces that chain, but guards neither which function the class answers
// `__getattribute__` with nor which one `super()` reaches: torch 2.13-2.15
// take the first from `inspect.getattr_static` without a guard, and guard
// a later one only by its code. The fork reads the values that trace
// obtained through `object.__getattribute__` generically
// (traced_getattribute.py), so these facts are what keep such a read equal
// to Python's: a class of the MRO that gains, loses or replaces a
// `__getattribute__` or `__getattr__` fails here. What each function runs
// (`f.__code__ = g`, which changes no class) is FUNCTION_CODE_MATCH's,
// installed beside this leaf for every function of the chain.
//
// Fast path: a ClassVerdictCache of type(value) (a class or base modified
// changes the tag) and one slot compare; in a memo, the type's version tag
// (the slot is updated with the class, under a tag change). The expected
// objects are held weakly where they allow it (a replaced method is not
// kept alive by the guard), so a died one never matches a newcomer at its
// address.
#pragma once

#include <vector>

#include "torch/csrc/dynamo/held_object.h"
#include "torch/csrc/dynamo/leaf_guard.h"
#include "torch/csrc/dynamo/module_attr_guards.h"

namespace dynamo_guards {

class ATTRIBUTE_HOOKS_MATCH : public LeafGuard {
 public:
  // `cls`: the class the trace read (its attribute slot is the expected
  // one); `getattribute_chain`: the `__getattribute__` of each class of its
  // MRO that defines one, in MRO order; `getattr`: what `cls.__getattr__`
  // finds, or None.
  ATTRIBUTE_HOOKS_MATCH(py::object cls, py::object getattribute_chain, py::object getattr, py::object parts, py::object stack);
  bool check(PyObject* value) override;
  const char* kind() const override { return "ATTRIBUTE_HOOKS_MATCH"; }
  void record(MemoRecorder& recorder, PyObject* value) override { recorder.type_tag(value); }

 private:
  bool hooks_match(PyTypeObject* type) const;

  getattrofunc getattro_;
  std::vector<HeldObject> chain_;
  bool has_getattr_;
  HeldObject getattr_;
  ClassVerdictCache cache_;
};

}  // namespace dynamo_guards
