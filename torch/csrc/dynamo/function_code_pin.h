// FunctionCodePin: the code a method found on a class still runs. Part of
// CLASS_ATTR_MATCH (module_attr_guards.h), not a guard kind of its own.
//
// Dynamo's trace inlines a method it finds on a class (a plain function, or
// the function a classmethod wraps) by its __code__. CLASS_ATTR_MATCH pins
// the class attribute's identity through the type's version tag, but
// `Cls.method.__code__ = other` (what IPython's %autoreload does) changes
// neither the class nor the function's identity: no version tag, dict
// version or watcher sees it. So the pin compares, on every call, the
// function's code with the code the trace read: two weak referents and a
// pointer compare (plus one member read for a classmethod).
//
// Torch itself pins the code of functions it reaches through a source of
// their own (CLOSURE_MATCH guards `fn.__code__`), including staticmethods and
// property getters on a class; it does not for a class's functions and
// classmethods, which the trace calls without such a guard (for a hook-free
// submodule's forward torch says so on purpose, to save the guard).
//
// Soundness: the code object is held weakly, so a swapped-out code object
// that dies is seen as a mismatch (its weakref is dead) and never confused
// with a new code object at its address; restoring the original code object
// passes again, which is right (the compiled code was traced from it). The
// pin runs no Python code: it reads the function's code slot and, for an
// exact classmethod, the `__func__` member the classmethod type publishes
// (what `cm.__func__` reads: a data descriptor of the builtin type, so the
// instance dict is never consulted). A classmethod re-initialized in place
// (`cm.__init__(g)`) is seen through that read.
#pragma once

#include <memory>

#include "torch/csrc/dynamo/leaf_guard.h"

namespace dynamo_guards {

class FunctionCodePin : public LeafGuard {
 public:
  // The pin for class attribute `attribute` (borrowed), or null when it is
  // neither a function nor an exact classmethod wrapping one.
  static std::shared_ptr<FunctionCodePin> for_class_attribute(
      PyObject* attribute,
      const py::list& parts,
      const py::object& stack);

  FunctionCodePin(PyObject* attribute, PyObject* function, py::list parts, py::object stack);

  // `value` is not read: the pin checks the objects it holds. Its owner
  // has already established that `value`'s class answers with the holder.
  bool check(PyObject* value) override;
  const char* kind() const override { return "CLASS_ATTR_MATCH"; }
  bool may_run_python() const override { return false; }

 private:
  // The function the class attribute is or wraps, now; nullptr (no error
  // set) when it is gone or no longer the one pinned.
  PyObject* current_function() const;  // borrowed

  // A classmethod, held strongly (classmethods take no weak references; the
  // owning CLASS_ATTR_MATCH holds it strongly too), or None for a function.
  py::object classmethod_;
  py::object function_;  // weakref to the function
  py::object code_;      // weakref to the code object the trace read
};

}  // namespace dynamo_guards
