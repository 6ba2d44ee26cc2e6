// An OrderedDict's relink counter: when the engine may read it.
//
// The C OrderedDict (Objects/odictobject.c) keeps its key order in a linked
// list of its own, beside the dict's storage. `move_to_end` relinks that
// list and touches neither the storage, the dict's version tag nor its
// watchers, so nothing the engine pins on dicts sees a reordering. The
// struct counts every change to the list in a size_t field, od_state:
// adding a node and removing one each add 1 (a move is both), on 3.11, 3.12
// and 3.13; 3.13 also adds 1 on clear(), which empties the list. The count
// never goes down, so an OrderedDict (the same object, alive) whose counter
// reads the same as before has the same linked order as before.
//
// The struct is private to CPython. In 3.11 to 3.13 it is the dict, then
// six pointer-sized fields (first node, last node, the node table, its size,
// a resize sentinel, od_state), then the instance __dict__ and the weakref
// list; so od_state sits one word before the type's tp_dictoffset. The
// engine does not take that on trust: at import `probe_odict_state` checks
// the offsets CPython itself publishes for the type (tp_dictoffset,
// tp_weaklistoffset, tp_basicsize) against that layout, and then reads the
// field of a fresh OrderedDict through a known sequence of changes (two
// insertions, a value update, a move to the end, a removal), which must
// count exactly 1, 1, 0, 2, 1. If either check fails, no counter is read
// (`odict_state` says so) and ORDERED_DICT_ORDER walks the order on every
// call.
#pragma once

#include <Python.h>

#include <cstddef>

namespace dynamo_guards {

// Probes the running interpreter once (at import of _C); never raises.
void probe_odict_state();
// Whether the probe confirmed the field.
bool odict_state_readable();

// The word where the layout above puts od_state; only the probe reads it
// unconfirmed.
inline size_t odict_state_field(PyObject* od) {
  const char* base = reinterpret_cast<const char*>(od);
  return *reinterpret_cast<const size_t*>(base + PyODict_Type.tp_dictoffset - sizeof(size_t));
}

// The relink counter of `od` (borrowed), which must be an instance of
// OrderedDict or a subclass; false when the probe did not confirm the
// field (nothing is read then).
inline bool odict_state(PyObject* od, size_t* state) {
  if (!odict_state_readable()) {
    return false;
  }
  *state = odict_state_field(od);
  return true;
}

}  // namespace dynamo_guards
