#include "torch/csrc/dynamo/guard_manager.h"

#include <algorithm>
#include <string_view>

#include "torch/csrc/dynamo/dict_guard_manager.h"
#include "torch/csrc/dynamo/py_ref.h"
#include "torch/csrc/dynamo/python_compat.h"
#include "torch/csrc/dynamo/relational_guards.h"
#include "torch/csrc/dynamo/root_guard_manager.h"

namespace dynamo_guards {

ManagerKind manager_kind_for(const py::object& guard_manager_enum, py::handle example_value) {
  if (!PyDict_Check(example_value.ptr())) {
    return ManagerKind::Plain;  // torch too ignores the enum for other values
  }
  py::object value = guard_manager_enum;
  if (py::hasattr(value, "value") && !PyLong_Check(value.ptr())) {
    value = value.attr("value");
  }
  if (!PyLong_Check(value.ptr())) {
    throw py::type_error("guard_manager_enum must be a GuardManagerType or int");
  }
  long kind = PyLong_AsLong(value.ptr());
  if (kind == static_cast<long>(ManagerKind::Plain)) {
    return ManagerKind::Plain;
  }
  if (kind == static_cast<long>(ManagerKind::Dict)) {
    return ManagerKind::Dict;
  }
  throw py::value_error("unknown guard_manager_enum value " + std::to_string(kind));
}

bool is_immutable_value(py::handle value) {
  PyObject* v = value.ptr();
  if (v == Py_None || PyBool_Check(v) || PyLong_CheckExact(v) || PyFloat_CheckExact(v) || PyComplex_CheckExact(v) ||
      PyUnicode_CheckExact(v) || PyBytes_CheckExact(v)) {
    return true;
  }
  if (PyTuple_CheckExact(v)) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(v); ++i) {
      if (!is_immutable_value(PyTuple_GET_ITEM(v, i))) {
        return false;
      }
    }
    return true;
  }
  static PyObject* tensor_type = [] {
    PyObject* torch = PyImport_ImportModule("torch");
    PyObject* t = torch != nullptr ? PyObject_GetAttrString(torch, "Tensor") : nullptr;
    Py_XDECREF(torch);
    PyErr_Clear();
    return t;  // kept for the process lifetime
  }();
  return tensor_type != nullptr && PyObject_TypeCheck(v, reinterpret_cast<PyTypeObject*>(tensor_type));
}

// The builder asks for type(example_value) while it builds; the tree must
// not keep that type alive (stock torch does not: a class defined at run time
// dies with its last instance, and its finalizers invalidate cache entries).
static py::object weak_type_of(py::handle example_value) {
  PyObject* ref = PyWeakref_NewRef(reinterpret_cast<PyObject*>(Py_TYPE(example_value.ptr())), nullptr);  // new
  if (ref == nullptr) {
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::object>(ref);
}

py::object GuardManager::type_of_guarded_value() const {
  return py::reinterpret_borrow<py::object>(weakref_referent(guarded_type_.ptr()));  // borrowed: None once dead
}

GuardManager::GuardManager(RootGuardManager* root, std::string source, py::handle example_value)
    : root_(root),
      source_(std::move(source)),
      guarded_type_(weak_type_of(example_value)),
      immutable_(is_immutable_value(example_value)) {
  live_.fetch_add(1, std::memory_order_relaxed);
}

GuardManager::~GuardManager() {
  live_.fetch_sub(1, std::memory_order_relaxed);
}

std::atomic<size_t> GuardManager::live_{0};

bool GuardManager::check_subtree(PyObject* value, CheckContext* ctx) {
  return check_leaves(value, ctx) && check_accessors(value, ctx);
}

// How many leaves or accessors ahead a walk starts loading the engine's own
// objects: each is a separate allocation, cold in situ, and the next one's
// address is known without reading the current one. A prefetch never faults
// and changes no result.
static constexpr size_t kWalkPrefetchDistance = 4;

bool GuardManager::check_leaves(PyObject* value, CheckContext* ctx) {
  const size_t n = leaves_.size();
  for (size_t i = 0; i < n && i < kWalkPrefetchDistance; ++i) {
    __builtin_prefetch(leaves_[i].get());
  }
  for (size_t i = 0; i < n; ++i) {
    if (i + kWalkPrefetchDistance < n) {
      __builtin_prefetch(leaves_[i + kWalkPrefetchDistance].get());
    }
    if (!leaves_[i]->run(value, ctx)) {
      fail_count_++;
      return false;
    }
  }
  return true;
}

bool GuardManager::check_accessors(PyObject* value, CheckContext* ctx) {
  const size_t n = accessors_.size();
  for (size_t i = 0; i < n && i < kWalkPrefetchDistance; ++i) {
    __builtin_prefetch(accessors_[i].get());
  }
  for (size_t i = 0; i < n; ++i) {
    // The next accessor's object has been prefetched already; its child
    // manager is the next line that accessor's check would wait on.
    if (i + 1 < n) {
      accessors_[i + 1]->prefetch_child();
    }
    if (i + kWalkPrefetchDistance < n) {
      __builtin_prefetch(accessors_[i + kWalkPrefetchDistance].get());
    }
    const std::unique_ptr<GuardAccessor>& accessor = accessors_[i];
    if (!accessor->check(value, ctx)) {
      // Cold path: children that failed most often are tried first next
      // time, so a failing call stops early. The passing path pays nothing;
      // the verdict does not depend on the order.
      std::stable_sort(accessors_.begin(), accessors_.end(), [](const auto& a, const auto& b) {
        return a->child()->fail_count() > b->child()->fail_count();
      });
      fail_count_++;
      return false;
    }
  }
  return true;
}

bool GuardManager::decides_by_identity() const {
  if (!accessors_.empty() || dynamic_cast<const DictGuardManager*>(this) != nullptr) {
    return false;
  }
  return std::all_of(leaves_.begin(), leaves_.end(), [](const LeafGuardPtr& leaf) { return leaf->decides_by_identity(); });
}

bool GuardManager::records_on_held_value(PyObject* value) const {
  if (dynamic_cast<const DictGuardManager*>(this) != nullptr) {
    return false;
  }
  for (const LeafGuardPtr& leaf : leaves_) {
    if (!leaf->records_on_held_value(value)) {
      return false;
    }
  }
  for (const auto& accessor : accessors_) {
    if (accessor->reads_value_fixed_by(value)) {
      OwnedRef fixed(accessor->access(value));
      if (!fixed) {
        discard_python_error();
        return false;
      }
      if (!accessor->child()->decides_by_contents(fixed.get())) {
        return false;
      }
      continue;
    }
    PyObject* child = accessor->held_child(value, true);
    if (child == nullptr || !accessor->child()->records_on_held_value(child)) {
      return false;
    }
  }
  return true;
}

bool GuardManager::decides_by_contents(PyObject* value) const {
  if (!accessors_.empty() || dynamic_cast<const DictGuardManager*>(this) != nullptr) {
    return false;
  }
  return std::all_of(leaves_.begin(), leaves_.end(), [value](const LeafGuardPtr& leaf) {
    return leaf->records_on_held_value(value) && !leaf->decides_by_identity();
  });
}

GuardManager::MemoPlan GuardManager::place_memos() {
  memo_.reset();
  size_t nodes = 1 + leaves_.size();
  for (const auto& accessor : accessors_) {
    MemoPlan plan = accessor->child()->place_memos();
    accessor->child()->memoize_if_worthwhile(plan);
    nodes += plan.nodes;
  }
  return {nodes};
}

void GuardManager::add_leaf_guard(LeafGuardPtr guard) {
  leaves_.push_back(std::move(guard));
  notify_tree_changed();
}

void GuardManager::notify_tree_changed() {
  root_->tree_changed();
}

bool GuardManager::has_relational_guard() const {
  for (const LeafGuardPtr& leaf : leaves_) {
    if (dynamic_cast<RelationalSlot*>(leaf.get()) != nullptr) {
      return true;
    }
  }
  return false;
}

std::unique_ptr<GuardManager> GuardManager::make_child(ManagerKind kind, std::string source, py::handle example_value) {
  if (depth_ + 1 > kMaxTreeDepth) {
    PyErr_Format(
        PyExc_RecursionError,
        "guard tree deeper than %zu levels at source %s",
        kMaxTreeDepth,
        source.c_str());
    throw py::error_already_set();
  }
  std::unique_ptr<GuardManager> child;
  if (kind == ManagerKind::Dict) {
    child = std::make_unique<DictGuardManager>(root_, std::move(source), example_value);
  } else {
    child = std::make_unique<GuardManager>(root_, std::move(source), example_value);
  }
  child->depth_ = depth_ + 1;
  return child;
}

std::unique_ptr<GuardManager> GuardManager::clone_node(RootGuardManager* root) const {
  auto copy = std::make_unique<GuardManager>(root, source_, py::none());
  copy->guarded_type_ = guarded_type_;
  copy->immutable_ = immutable_;
  return copy;
}

void GuardManager::clone_contents_into(GuardManager& copy, RootGuardManager* root, const py::object& keep) const {
  for (const LeafGuardPtr& leaf : leaves_) {
    copy.leaves_.push_back(leaf);
    // A kept slot records into the same relation, which the copy's root
    // then verifies too (a relation whose other managers were not kept is
    // never complete, and holds).
    if (auto* slot = dynamic_cast<RelationalSlot*>(leaf.get())) {
      root->register_relation(slot->state());
    }
  }
  for (const auto& accessor : accessors_) {
    std::unique_ptr<GuardManager> child = accessor->child()->clone(root, keep);
    if (child) {
      copy.accessors_.push_back(accessor->clone_with(std::move(child)));
    }
  }
}

std::unique_ptr<GuardManager> GuardManager::clone(RootGuardManager* root, const py::object& keep) const {
  py::object verdict = keep(py::cast(this, py::return_value_policy::reference));
  int kept = PyObject_IsTrue(verdict.ptr());
  if (kept < 0) {
    throw py::error_already_set();
  }
  if (kept == 0) {
    return nullptr;
  }
  std::unique_ptr<GuardManager> copy = clone_node(root);
  copy->depth_ = depth_;
  clone_contents_into(*copy, root, keep);
  if (auto* dict_src = dynamic_cast<const DictGuardManager*>(this)) {
    auto* dict_copy = static_cast<DictGuardManager*>(copy.get());
    for (const auto& [index, entry] : dict_src->entries_) {
      DictGuardManager::Entry e;
      if (entry.key) {
        e.key = entry.key->clone(root, keep);
      }
      if (entry.value) {
        e.value = entry.value->clone(root, keep);
      }
      if (e.key || e.value) {
        dict_copy->entries_.emplace(index, std::move(e));
      }
    }
  }
  return copy;
}

GuardAccessor::GuardAccessor(py::object key, std::unique_ptr<GuardManager> child)
    : key_(std::move(key)), child_(std::move(child)) {}

GuardAccessor::~GuardAccessor() = default;

std::string GuardAccessor::repr() const {
  if (key_.is_none()) {
    return kind();
  }
  return std::string(kind()) + "(" + py::repr(key_).cast<std::string>() + ")";
}

std::string GuardAccessor::access_failure() const {
  // torch's words, where torch has its own, for a value an accessor cannot
  // read (they reach recompile reasons); a few name no source.
  struct Failure {
    std::string_view kind;
    const char* before_source;
    bool names_source;
  };
  static constexpr Failure kTorchFailures[] = {
      {"ListGetItemGuardAccessor", "IndexError on ", true},
      {"TupleGetItemGuardAccessor", "IndexError on ", true},
      {"FuncDefaultsGuardAccessor", "FuncDefaultsGuardAccessor: Not a function on ", true},
      {"FuncKwDefaultsGuardAccessor", "FuncKwDefaultsGuardAccessor: Not a function on ", true},
      {"CodeGuardAccessor", "CodeGuardAccessor: Not a function on ", true},
      {"ClosureGuardAccessor", "ClosureGuardAccessor: Not a function on ", true},
      {"WeakRefCallGuardAccessor", "Not a weakref obj ", true},
      {"CallFunctionNoArgsGuardAccessor", "Not a callable obj ", true},
      {"GradGuardAccessor", "not a tensor - grad field is accessed ", true},
      {"GetGenericDictGuardAccessor", "getattr failed on source ", true},
      {"TensorSizeGuardAccessor", "tensor has too few dimensions", false},
      {"TensorStrideGuardAccessor", "tensor has too few dimensions", false},
      {"TensorStorageOffsetGuardAccessor", "not a tensor", true},
  };
  for (const Failure& failure : kTorchFailures) {
    if (failure.kind == kind()) {
      return failure.names_source ? failure.before_source + child_->source() : failure.before_source;
    }
  }
  return repr() + " failed on source " + child_->source();
}

std::string GuardAccessor::raised_error_text() const {
  if (!PyErr_Occurred()) {
    return access_failure();
  }
  py::error_already_set raised;  // takes the pending error
  try {
    return py::str(raised.value()).cast<std::string>();
  } catch (const py::error_already_set&) {
    return access_failure();  // its __str__ raised too
  }
}

bool GuardAccessor::matches(const char* kind, const py::object& key) const {
  if (std::string(kind) != this->kind()) {
    return false;
  }
  if (key_.ptr() == key.ptr()) {
    return true;
  }
  if (Py_TYPE(key_.ptr()) != Py_TYPE(key.ptr())) {
    return false;
  }
  int eq = PyObject_RichCompareBool(key_.ptr(), key.ptr(), Py_EQ);
  if (eq < 0) {
    PyErr_Clear();
    return false;
  }
  return eq == 1;
}

bool GuardAccessor::check(PyObject* parent, CheckContext* ctx) {
  OwnedRef child_value(access(parent));
  if (!child_value) {
    if (ctx != nullptr) {
      ctx->record_failure(reports_raised_error() ? raised_error_text() : access_failure());
    }
    discard_python_error();
    return false;
  }
  if (ctx != nullptr && ctx->recorder != nullptr) {
    MemoRecorder& recorder = *ctx->recorder;
    if (!recorder.reachable(parent)) {
      return child_->check(child_value.get(), nullptr);
    }
    if (record_fixed_read(recorder, parent, child_value.get()) ||
        record_identity_read(recorder, parent, child_value.get())) {
      return child_->check(child_value.get(), nullptr);
    }
    // While a value is held, only held reads may follow (MemoRecorder::held).
    if (recorder.holding() || !record(recorder, parent, child_value.get())) {
      if (record_held_read(recorder, parent, child_value.get())) {
        HeldValue held(recorder, child_value.get());
        return child_->check(child_value.get(), ctx);
      }
      // Not pinned: the log re-runs this accessor with its whole subtree,
      // which is therefore checked here without recording.
      recorder.walk(this, parent);
      return child_->check(child_value.get(), nullptr);
    }
  }
  return child_->check(child_value.get(), ctx);
}

PyObject* GuardAccessor::held_child(PyObject* parent, bool parent_held) const {
  if (PyObject* const* field = held_field(parent)) {
    return parent_held && !field_fixed_by_exact_type(parent) ? nullptr : *field;
  }
  const Py_ssize_t index = held_tuple_index(parent);
  return index >= 0 ? PyTuple_GET_ITEM(parent, index) : nullptr;
}

bool GuardAccessor::record_fixed_read(MemoRecorder& recorder, PyObject* parent, PyObject* child) {
  return reads_value_fixed_by(parent) && child_->decides_by_contents(child) && recorder.live_object(parent);
}

bool GuardAccessor::record_held_read(MemoRecorder& recorder, PyObject* parent, PyObject* child) {
  // Under a held parent, the held read that began the chain has already
  // found this subtree eligible on these very values (no Python code has
  // run since: none may while a value is held), so it is not asked again
  // at every level of the chain.
  const bool parent_held = recorder.held(parent);
  if (held_child(parent, parent_held) != child || (!parent_held && !child_->records_on_held_value(child))) {
    return false;
  }
  if (PyObject* const* field = held_field(parent)) {
    return recorder.held_field(parent, field, child);
  }
  return recorder.held_tuple_item(parent, held_tuple_index(parent), child);
}

}  // namespace dynamo_guards
