#include "torch/csrc/dynamo/dict_guard_manager.h"

#include "torch/csrc/dynamo/ordered_dict_order.h"

namespace dynamo_guards {

DictGuardManager::DictGuardManager(RootGuardManager* root, std::string source, py::handle example_value)
    : GuardManager(root, std::move(source), example_value),
      dict_type_(Py_TYPE(example_value.ptr())),
      dict_type_name_(Py_TYPE(example_value.ptr())->tp_name),
      size_(PyDict_Check(example_value.ptr()) ? PyDict_GET_SIZE(example_value.ptr()) : 0) {
  if (PyODict_Check(example_value.ptr())) {
    // The trace iterated the linked order; the checks below read storage
    // order (ordered_dict_order.h).
    leaves_.push_back(std::make_shared<ORDERED_DICT_ORDER>(example_value.ptr(), source_));
  }
}

Py_ssize_t DictGuardManager::checked_index(const py::object& index) const {
  if (!PyLong_Check(index.ptr())) {
    throw py::type_error("dict index must be an int");
  }
  Py_ssize_t i = PyLong_AsSsize_t(index.ptr());
  if (i < 0 || i >= size_) {
    throw py::index_error("dict index " + std::to_string(i) + " out of range for a dict of size " + std::to_string(size_));
  }
  return i;
}

GuardManager* DictGuardManager::key_manager(
    py::object index,
    std::string source,
    py::handle example_value,
    const py::object& guard_manager_enum) {
  Entry& entry = entries_[checked_index(index)];
  if (!entry.key) {
    entry.key = make_child(manager_kind_for(guard_manager_enum, example_value), std::move(source), example_value);
    notify_tree_changed();
  }
  return entry.key.get();
}

GuardManager* DictGuardManager::value_manager(
    py::object index,
    std::string source,
    py::handle example_value,
    const py::object& guard_manager_enum) {
  Entry& entry = entries_[checked_index(index)];
  if (!entry.value) {
    entry.value = make_child(manager_kind_for(guard_manager_enum, example_value), std::move(source), example_value);
    notify_tree_changed();
  }
  return entry.value.get();
}

GuardManager::MemoPlan DictGuardManager::place_memos() {
  MemoPlan plan = GuardManager::place_memos();
  for (auto& [index, entry] : entries_) {
    for (GuardManager* m : {entry.key.get(), entry.value.get()}) {
      if (m != nullptr) {
        MemoPlan p = m->place_memos();
        m->memoize_if_worthwhile(p);
        plan.nodes += p.nodes;
      }
    }
  }
  return plan;
}

bool DictGuardManager::check_subtree(PyObject* value, CheckContext* ctx) {
  if (Py_TYPE(value) != dict_type_) {
    fail_count_++;
    if (ctx != nullptr) {
      ctx->record_failure("type(" + source_ + ") is not " + dict_type_name_);
    }
    return false;
  }
  if (PyDict_GET_SIZE(value) != size_) {
    fail_count_++;
    if (ctx != nullptr) {
      ctx->record_failure("len(" + source_ + ") != " + std::to_string(size_));
    }
    return false;
  }
  if (!check_leaves(value, ctx)) {
    return false;
  }
  if (ctx != nullptr && ctx->recorder != nullptr) {
    ctx->recorder->type(value);
    ctx->recorder->dict(value);  // pins order, keys and values
  }
  Py_ssize_t pos = 0;
  Py_ssize_t index = 0;
  PyObject* key = nullptr;    // borrowed
  PyObject* item = nullptr;   // borrowed
  for (const auto& [wanted, entry] : entries_) {
    while (index <= wanted) {
      if (!PyDict_Next(value, &pos, &key, &item)) {
        fail_count_++;
        return false;
      }
      ++index;
    }
    // A manager's check can run Python (lambda guards) that could mutate the
    // dict; hold the pair for the duration.
    py::object key_ref = py::reinterpret_borrow<py::object>(key);
    py::object item_ref = py::reinterpret_borrow<py::object>(item);
    if (ctx != nullptr && ctx->recorder != nullptr) {
      ctx->recorder->anchor(key);
      ctx->recorder->anchor(item);
    }
    if ((entry.key && !entry.key->check(key_ref.ptr(), ctx)) || (entry.value && !entry.value->check(item_ref.ptr(), ctx))) {
      fail_count_++;
      return false;
    }
  }
  return check_accessors(value, ctx);
}

std::unique_ptr<GuardManager> DictGuardManager::clone_node(RootGuardManager* root) const {
  auto copy = std::make_unique<DictGuardManager>(root, source_, py::dict());
  copy->guarded_type_ = guarded_type_;
  copy->immutable_ = immutable_;
  copy->dict_type_ = dict_type_;
  copy->dict_type_name_ = dict_type_name_;
  copy->size_ = size_;
  return copy;
}

}  // namespace dynamo_guards
