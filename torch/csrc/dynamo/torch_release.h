// The torch facts the engine depends on that differ between the releases it
// builds against (2.13, 2.14, 2.15), one constant per concern, keyed on the
// version torch's own headers report. The rest of the engine reads these
// constants; a new torch release changes this file (and its Python
// counterpart, torch/_dynamo/torch_release.py, for the Python side).
//
// What differs, and where the difference is applied:
// - 2.14: torch's RootGuardManager holds a LocalState (the dispatch-key TLS
//   its TENSOR_MATCH guards apply), with get_local_state/set_local_state;
//   a loaded package rebuilds guards under the saved one. `kRootHasLocalState`
//   (bindings.cpp: LocalState and the two root methods).
// - 2.15: FLOAT_IS_NAN and COMPLEX_IS_NAN take the guarded value and compare
//   NaN bit patterns (2.13/2.14: any NaN passes). `kNanGuardsTakeTheValue`
//   (bindings.cpp; the guards themselves take an optional value).
// - 2.15: TENSOR_MATCH takes device_index_is_current (compile-on-one-rank:
//   the device index is compared with the current accelerator's at check
//   time) and the root takes set_compile_on_one_rank.
//   `kTensorMatchTakesDeviceIndexIsCurrent`, `kRootHasCompileOnOneRank`.
// - 2.15: GlobalStateGuard compares the CUDA matmul fp32 precision
//   (float32Precision(CUDA, MATMUL): none/ieee/tf32) where 2.13 and 2.14
//   compare allowTF32CuBLAS. `kGlobalStateComparesCudaMatmulPrecision`
//   (global_state_guards.cpp).
// - 2.15: GuardManager.has_unoptimized_relational_guard (torch's tag-safety
//   pass asks it). `kManagerHasUnoptimizedRelationalGuard`.
// - 2.14 and later headers need C++20 (CMakeLists.txt builds every release
//   with it).
//
// The layout of torch's C++ objects that the engine relies on (the
// TensorImpl and AutogradMeta fields a memo prefetches) is asserted at
// build time next to where it is taken, in tensor_match.cpp.
#pragma once

#include <torch/version.h>  // TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR

#define DYNAMO_GUARDS_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

static_assert(
    DYNAMO_GUARDS_TORCH_AT_LEAST(2, 13) && !DYNAMO_GUARDS_TORCH_AT_LEAST(2, 16),
    "dynamo_guards builds against torch 2.13, 2.14 and 2.15 only");

namespace dynamo_guards::torch_release {

inline constexpr int kMajor = TORCH_VERSION_MAJOR;
inline constexpr int kMinor = TORCH_VERSION_MINOR;

inline constexpr bool kRootHasLocalState = DYNAMO_GUARDS_TORCH_AT_LEAST(2, 14);
inline constexpr bool kNanGuardsTakeTheValue = DYNAMO_GUARDS_TORCH_AT_LEAST(2, 15);
inline constexpr bool kTensorMatchTakesDeviceIndexIsCurrent = DYNAMO_GUARDS_TORCH_AT_LEAST(2, 15);
inline constexpr bool kRootHasCompileOnOneRank = DYNAMO_GUARDS_TORCH_AT_LEAST(2, 15);
inline constexpr bool kGlobalStateComparesCudaMatmulPrecision = DYNAMO_GUARDS_TORCH_AT_LEAST(2, 15);
inline constexpr bool kManagerHasUnoptimizedRelationalGuard = DYNAMO_GUARDS_TORCH_AT_LEAST(2, 15);

}  // namespace dynamo_guards::torch_release
