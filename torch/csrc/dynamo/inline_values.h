// Objects' inline attribute values and their __dict__: when a dict's
// version tag and watcher events can be trusted.
//
// From CPython 3.13 an instance of a plain class keeps its attributes in
// "inline values" inside the object. Asking for its __dict__ makes a dict
// that shares those values (the dict's ma_values points into the object)
// instead of taking them over, as 3.11 and 3.12 do. CPython 3.13.0 writes an
// attribute set or deleted through the object (`obj.x = v`, setattr,
// object.__setattr__, `del obj.x`) straight into the shared values: the
// dict's version tag stays the same and no dict watcher is called
// (gh-125608, fixed in 3.13.1). Neither signal can then be trusted for that
// dict. Writes through the dict itself (`obj.__dict__["x"] = v`) are counted
// and reported as usual.
//
// The engine does not rely on the release number: at start-up it probes the
// running interpreter (`probe_inline_values`). Where attribute writes to
// shared values go unreported, an object's values are detached into its
// dict before the dict is pinned (`make_dict_writes_reported`): CPython's
// own `obj.__dict__ = obj.__dict__` (_PyObject_SetManagedDict) moves them
// into storage the dict owns and marks the object's inline values invalid,
// after which every attribute write on that object goes through the dict,
// which counts and reports it. The dict object and its contents stay the
// same, and nothing is reported to watchers; attribute reads on that object
// take CPython's dict path instead of the inline one. CPython has no path
// that makes an object's inline values valid again, so the detach lasts
// for the object's life. A dict found sharing values without its owner at
// hand is never pinned (`dict_writes_reported` is false).
//
// The probe also checks the engine's reading of the dict's values header
// (the `embedded` flag of CPython's struct _dictvalues); if that reading
// does not match what the interpreter does, no split dict is ever pinned.
#pragma once

#include <Python.h>

namespace dynamo_guards {

enum class InlineValuesPolicy : unsigned char {
  // Every write to an object's attributes changes its dict's version and is
  // reported to its watchers (3.11, 3.12, 3.13.1+).
  WritesReported,
  // Attribute writes to shared inline values go unreported (3.13.0): detach
  // an object's values before pinning its dict.
  DetachBeforePinning,
  // The probe could not confirm the engine's reading of CPython's dict
  // values: split dicts are never pinned.
  SplitDictsUnpinnable,
};

// Probes the running interpreter once (at import of _C); never raises.
void probe_inline_values();
InlineValuesPolicy inline_values_policy();

// Whether `dict`'s version tag and watcher events cover every change to
// its contents, as far as this interpreter goes.
bool dict_writes_reported(PyObject* dict);

// Makes writes to `obj`'s instance dict reported where the interpreter
// needs it (see above), and says whether they now are. `dict` is that
// dict, as read from obj's __dict__ slot. Never raises.
bool make_dict_writes_reported(PyObject* obj, PyObject* dict);

}  // namespace dynamo_guards
