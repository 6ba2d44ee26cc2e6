// Guards on thread-global state that changes what compiled code computes:
// GLOBAL_STATE (grad mode, torch function state, determinism, reduced
// precision flags, thread count, default dtype, autocast) and
// TORCH_FUNCTION_MODE_STACK (the types of the active torch function modes).
// ATen-only: this header stays free of ATen, global_state_guards.cpp reads it.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "torch/csrc/dynamo/leaf_guard.h"

namespace dynamo_guards {

// The fields torch's GlobalStateGuard compares, read natively. Which CUDA
// matmul field it compares depends on the release (torch_release.h); the
// field a release does not compare stays zero in every snapshot.
struct GlobalStateSnapshot {
  static constexpr size_t kAutocastDevices = 10;
  bool grad_mode;
  uint8_t torch_function_state;  // at::impl::TorchFunctionDisabledState
  bool deterministic_algorithms;
  bool deterministic_algorithms_warn_only;
  bool allow_tf32;                // 2.13, 2.14: allowTF32CuBLAS()
  uint8_t cuda_matmul_precision;  // 2.15: float32Precision(CUDA, MATMUL), at::Float32Precision
  uint8_t allow_fp16_reduce;
  uint8_t allow_bf16_reduce;
  int32_t num_threads;
  int8_t default_dtype;
  bool autocast_cache_enabled;
  std::array<bool, kAutocastDevices> autocast_enabled;
  std::array<int8_t, kAutocastDevices> autocast_dtype;

  // Throws std::exception when some field cannot be read on this build.
  static GlobalStateSnapshot capture();
  bool operator==(const GlobalStateSnapshot& other) const;
};

// Native once the state has been seen equal to torch's captured initial
// state: at build time, or else at the first check torch's own
// GlobalStateGuard.check() passes. torch builds a frame's guards inside
// DisableTorchFunction, so for a compiled frame the state at build time
// differs from the initial state in its torch function flag, and the
// snapshot is taken at the first passing check instead.
//
// Soundness: the snapshot holds exactly the fields torch's check compares
// (GlobalStateTests checks agreement on a change of each). It is taken at a
// moment torch's check passed, so at that moment it equals torch's initial
// state field by field, and comparing the current state with it decides as
// torch's check does from then on. Until then, or when a field cannot be
// read natively, torch's check is called on every check.
// The failure text is torch's: "GLOBAL_STATE changed: <reason>".
class GLOBAL_STATE : public LeafGuard {
 public:
  GLOBAL_STATE(py::object initial_state, py::object parts, py::object stack);
  bool check(PyObject* value) override;
  void explain_failure(PyObject* value, CheckContext& ctx) override;
  const char* kind() const override { return "GLOBAL_STATE"; }
  bool is_native() const { return native_; }

 private:
  // Takes the native snapshot of the current state, which the caller has
  // just seen pass torch's check; a field that cannot be read natively
  // leaves the guard on torch's check for good.
  void adopt_current_state();
  bool torch_check() const;

  py::object initial_state_;  // torch's GlobalStateGuard
  bool native_ = false;
  bool snapshot_pending_ = true;  // native_ may still be switched on
  GlobalStateSnapshot snapshot_{};
};

// The torch function mode stack has the same length and mode types as when
// compilation started. Holds the types (strong), not the modes.
class TORCH_FUNCTION_MODE_STACK : public LeafGuard {
 public:
  TORCH_FUNCTION_MODE_STACK(py::list initial_stack, py::object parts, py::object stack);
  bool check(PyObject* value) override;
  const char* kind() const override { return "TORCH_FUNCTION_MODE_STACK"; }

 private:
  std::vector<py::object> types_;
};

}  // namespace dynamo_guards
