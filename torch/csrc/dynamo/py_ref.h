// Owning handle for a CPython object reference, used on the hot path where a
// pybind11::object would add its own type checks.
#pragma once

#include <Python.h>

#include <utility>

namespace dynamo_guards {

// Holds one strong (new) reference and releases it on destruction.
class OwnedRef {
 public:
  OwnedRef() = default;
  // Takes ownership of `new_ref`, which may be null (an accessor that failed).
  explicit OwnedRef(PyObject* new_ref) : ptr_(new_ref) {}
  OwnedRef(const OwnedRef&) = delete;
  OwnedRef& operator=(const OwnedRef&) = delete;
  OwnedRef(OwnedRef&& other) noexcept : ptr_(std::exchange(other.ptr_, nullptr)) {}
  OwnedRef& operator=(OwnedRef&& other) noexcept {
    if (this != &other) {
      Py_XDECREF(ptr_);
      ptr_ = std::exchange(other.ptr_, nullptr);
    }
    return *this;
  }
  ~OwnedRef() { Py_XDECREF(ptr_); }

  // Borrowed view; valid while this handle lives.
  PyObject* get() const { return ptr_; }
  explicit operator bool() const { return ptr_ != nullptr; }

  // Takes an extra reference to a borrowed object.
  static OwnedRef from_borrowed(PyObject* borrowed) {
    Py_XINCREF(borrowed);
    return OwnedRef(borrowed);
  }

 private:
  PyObject* ptr_ = nullptr;
};

}  // namespace dynamo_guards
