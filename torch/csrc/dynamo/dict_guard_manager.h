// Guards a dict whose key order matters: the dict keeps its exact type and
// size, and the keys and values at chosen positions pass their managers.
// An OrderedDict also keeps its linked order (ORDERED_DICT_ORDER, the first
// leaf): the positions are storage positions, the trace's order is linked.
#pragma once

#include <map>
#include <string>
#include <utility>

#include "torch/csrc/dynamo/guard_manager.h"

namespace dynamo_guards {

class DictGuardManager : public GuardManager {
 public:
  DictGuardManager(RootGuardManager* root, std::string source, py::handle example_value);

  bool check_subtree(PyObject* value, CheckContext* ctx) override;
  // Memoizable like a plain manager: its dict's version pins the order,
  // the keys and the values it iterates.
  MemoPlan place_memos() override;

  GuardManager* key_manager(py::object index, std::string source, py::handle example_value, const py::object& guard_manager_enum);
  GuardManager* value_manager(py::object index, std::string source, py::handle example_value, const py::object& guard_manager_enum);

  struct Entry {
    std::unique_ptr<GuardManager> key;    // may be null
    std::unique_ptr<GuardManager> value;  // may be null
  };
  const std::map<Py_ssize_t, Entry>& entries() const { return entries_; }
  // The length every guarded dict must have (checked before anything else).
  Py_ssize_t size() const { return size_; }

 protected:
  std::unique_ptr<GuardManager> clone_node(RootGuardManager* root) const override;

 private:
  Py_ssize_t checked_index(const py::object& index) const;

  // Compared only, never dereferenced: the tree does not keep the type alive,
  // and once it has died no dict has it.
  PyTypeObject* dict_type_;
  std::string dict_type_name_;  // for the failure message
  Py_ssize_t size_;
  std::map<Py_ssize_t, Entry> entries_;  // ordered by position in the dict
  friend class GuardManager;
};

}  // namespace dynamo_guards
