// ORDERED_DICT_ORDER: an OrderedDict still iterates its keys in the order
// Dynamo's trace iterated them.
//
// The trace iterates an OrderedDict in its linked order (OrderedDict.keys,
// the C list odictobject.c keeps beside the dict's storage), but torch's
// guards on a dict whose key order matters (a DictGuardManager: the size,
// then each key and value by position) read the storage order, through
// PyDict_Next. `move_to_end` relinks the list only: the storage order, the
// dict's version tag and its watchers stay as they were, so stock torch and
// every dict pin of the engine pass a reordered OrderedDict, and the
// compiled code keeps the old order. A DictGuardManager built on an
// OrderedDict (or subclass) therefore carries this leaf, which states the
// linked order as storage positions: the i-th key in linked order is the
// key at position positions[i] in storage. With the manager's own checks of
// each stored key, that is exactly the key sequence the trace saw.
//
// Cost: where the start-up probe confirmed the relink counter
// (odict_state.h), a call on the same OrderedDict as the last passing walk
// compares that counter with the one read then: a weak referent and two
// loads. Any change of the linked order counts, so an equal counter means
// an unchanged order; the OrderedDict is held weakly, so a new one at a dead
// one's address is never taken for it. Otherwise the check walks the
// linked order with CPython's own OrderedDict iterator, comparing each key
// with the stored key by identity (the list and the storage hold the same
// key objects). In a memo the leaf is a Leaf step: nothing it checks
// changes any dict version or watcher.
//
// Python code: the walk finds each list node through a dict lookup, which
// may call a key's __eq__ when keys' hashes collide. The leaf promises to
// run none when every key at build time was an immutable constant
// (immutable_constants.h: str, int, ...; their comparisons are C), and then
// fails, without walking, on a dict that holds any other key.
#pragma once

#include <vector>

#include "torch/csrc/dynamo/leaf_guard.h"

namespace dynamo_guards {

class ORDERED_DICT_ORDER : public LeafGuard {
 public:
  // The linked order of `example` (an OrderedDict, borrowed) as the trace
  // saw it; `source` names it in the failure text.
  ORDERED_DICT_ORDER(PyObject* example, const std::string& source);
  bool check(PyObject* value) override;
  const char* kind() const override { return "ORDERED_DICT_ORDER"; }
  bool may_run_python() const override { return !constant_keys_; }

 private:
  // Whether `od`'s linked order is `positions_` over its storage.
  bool walk_matches(PyObject* od) const;

  std::vector<Py_ssize_t> positions_;  // storage position of each key, in linked order
  bool constant_keys_;
  // The OrderedDict whose walk last passed (a weakref; None before any),
  // and its relink counter then.
  py::object passed_;
  size_t passed_state_ = 0;
};

}  // namespace dynamo_guards
