// FUNCTION_CODE_MATCH: a function found on a class (or the function a
// classmethod found there wraps, or the getter of a property found there)
// still runs the code Dynamo's trace inlined.
//
// Dynamo's trace inlines a method it finds on a class by its __code__.
// CLASS_ATTR_MATCH (module_attr_guards.h) pins the class attribute's
// identity through the type's version tag, but `Cls.method.__code__ = other`
// (what IPython's %autoreload does) changes neither the class nor the
// function's identity: no version tag, dict version or watcher sees it. So
// this leaf compares, on every call, the function's code with the code the
// trace read.
//
// Torch itself pins the code of functions it reaches through a source of
// their own (CLOSURE_MATCH guards `fn.__code__`), staticmethods and property
// getters on a class among them; it does not for a class's functions and
// classmethods, which the trace calls without such a guard (for a hook-free
// submodule's forward, torch says so on purpose, to save the guard). For a
// property, torch reads the getter through `prop.fget` on every check; the
// fork pins the getter here instead where it drops torch's HASATTR on the
// property (a `hasattr` the trace answered by inlining the getter,
// trace_hooks.py), so a property re-initialized in place
// (`prop.__init__(g)`: properties are mutable that way, and no class tag
// sees it) fails here even when `g` shares the old getter's code.
//
// Where: one leaf per function per frame, on the root manager, not one per
// object whose class answers with the function. CLASS_ATTR_MATCH pins, per
// object, that its class still answers with this very function; this leaf
// pins, once, what that function runs. A frame calling a hundred Linear
// layers pins Linear.forward's code once, and the per-object part stays
// inside the type's version tag (no memo step of its own).
//
// Cost: two weak referents and a pointer compare (plus one slot read for a
// classmethod or a property), on every call.
//
// Soundness: the function and its code object are held weakly, so a
// swapped-out code object that dies is seen as a mismatch (its weakref is
// dead) and never confused with a new code object at its address;
// restoring the original code object passes again, which is right (the
// compiled code was traced from it). The leaf runs no Python code: it reads
// the function's code slot and, for an exact classmethod or property, the
// `__func__` or `fget` member its type publishes (what `cm.__func__` and
// `prop.fget` read: data descriptors of builtin types, so no instance dict
// is consulted). A classmethod or property re-initialized in place
// (`cm.__init__(g)`, `prop.__init__(g)`) is seen through that read.
#pragma once

#include "torch/csrc/dynamo/leaf_guard.h"

namespace dynamo_guards {

// Where an exact classmethod (`__func__`) or property (`fget`) keeps the
// function it calls: the offset of that published object member; -1 for
// any other object, or for a member that is not a plain object slot.
Py_ssize_t wrapped_function_offset(PyObject* wrapper);

class FUNCTION_CODE_MATCH : public LeafGuard {
 public:
  // `attribute`: a function, an exact classmethod wrapping one or an exact
  // property whose getter is one (else TypeError); its current code is
  // what the trace inlined.
  FUNCTION_CODE_MATCH(py::object attribute, py::object parts, py::object stack);

  // `value` is not read: the leaf checks the objects it holds.
  bool check(PyObject* value) override;
  const char* kind() const override { return "FUNCTION_CODE_MATCH"; }
  bool may_run_python() const override { return false; }

 private:
  // The function the attribute is or wraps, now; nullptr (no error set)
  // when it died or is no longer the one pinned.
  PyObject* current_function() const;  // borrowed

  // A classmethod or property, held strongly (neither takes weak
  // references; a CLASS_ATTR_MATCH on it holds it strongly too); empty for
  // a function.
  py::object wrapper_;
  // Where wrapper_ keeps its function (the member's offset, read directly
  // on every check); -1 for a function.
  Py_ssize_t wrapper_offset_ = -1;
  py::object function_;  // weakref to the function
  py::object code_;      // weakref to the code object the trace read
};

}  // namespace dynamo_guards
