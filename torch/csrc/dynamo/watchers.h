// Dict and type watchers (CPython 3.12 and later): a subtree memo learns
// that a dict or a type its log depends on changed, instead of reading that
// dict's version or that type's tag on every check.
//
// One dict watcher and one type watcher are registered when _C is imported
// (PyDict_AddWatcher, PyType_AddWatcher). Each interpreter has 8 ids of each
// kind, shared by everyone: CPython 3.13's own optimizer takes two dict ids
// and torch two more, so an id may be refused. Without one, nothing is
// watched and every memo validates dicts and types by version, as on 3.11.
//
// A WatchSet is what one memo log depends on. It is marked changed, once and
// for all, by the first event on any of its dicts or types, and by the death
// of any of its types; the memo then stops using that log and records a new
// one with a fresh set. What each event means for a watched dict:
//   ADDED, MODIFIED, DELETED    a key added, its value replaced, removed;
//   CLONED                      an empty dict filled from another one;
//   CLEARED                     emptied;
//   DEALLOCATED                 the dict dies: its address may be reused by
//                               a new dict, which this set never watched.
// Every event marks the set changed, whatever it did to the dict: the memo
// never has to tell a harmless change from a harmful one. CPython calls the
// watchers before it applies the change, and the callback runs no Python
// code, so nothing can observe the dict between the event and the change.
// A type is reported modified (PyType_Modified: an attribute set or
// deleted, __bases__ assigned; for every subclass too) only while it holds
// a valid version tag: the first modification invalidates the tag, and later
// ones go unreported until a lookup assigns a new tag. So a set only takes a
// type whose tag is valid when the watch is set, and the set is changed by
// that first event. A type's death is no event of its own: CPython's
// collector, which frees every heap type (a type is in a cycle with its
// MRO), clears it through type_clear, which reports PyType_Modified first;
// a weak reference with a callback reports the death as well, so that a set
// never outlives a type it trusts, whatever frees it (a new type may be
// given the dead one's address).
//
// Between the moment a memo read a dict or type and the moment the watch is
// set, nothing would report a change. So a watch is only taken over from a
// read if the dict's version (or the type's tag) is still the one the read
// saw, once the watch is set (`watch_dict`'s and `watch_type`'s
// `seen_version`).
//
// A dict whose writes CPython does not count or report (an object's
// __dict__ sharing its inline values on 3.13.0, inline_values.h) is never
// watched.
//
// Threads: CPython calls watchers with the GIL held, from the thread that
// makes the change; every use of a WatchSet holds the GIL too. A memo that
// runs Python code while it validates (a Walk or Leaf step) checks its set
// again afterwards: that code, or another thread while the GIL was
// released, may have changed a watched dict.
#pragma once

#include <Python.h>

#include <cstdint>
#include <vector>

namespace dynamo_guards {

class WatchSet {
 public:
  WatchSet() = default;
  ~WatchSet() { clear(); }
  WatchSet(const WatchSet&) = delete;
  WatchSet& operator=(const WatchSet&) = delete;

  // Watches `dict` (borrowed) for this set if its version is still
  // `seen_version` once the watch is set. False, with nothing watched, when
  // watchers are unavailable, the dict's writes go unreported, or the dict
  // changed since it was read.
  bool watch_dict(PyObject* dict, uint64_t seen_version);
  // Likewise for `type`, whose valid tag was `seen_tag` when it was read.
  bool watch_type(PyTypeObject* type, unsigned int seen_tag);

  // Whether anything this set watches has changed since it was watched.
  bool changed() const { return changed_; }
  bool empty() const { return dicts_.empty() && types_.empty(); }
  size_t num_dicts() const { return dicts_.size(); }
  size_t num_types() const { return types_.size(); }

  // Stops watching everything; the set is unchanged and empty again.
  void clear();

 private:
  friend struct WatchRegistry;
  bool changed_ = false;
  // Compared by address only: after an event the object may be dead.
  std::vector<PyObject*> dicts_;
  std::vector<PyTypeObject*> types_;
};

// Registers the engine's dict and type watchers; called once at import.
// Never raises: without a free id, watchers are simply unavailable.
void register_watchers();
bool dict_watchers_available();
bool type_watchers_available();

// Dicts and types watched for some set right now (the lifetime tests).
size_t watched_dict_count();
size_t watched_type_count();

}  // namespace dynamo_guards
