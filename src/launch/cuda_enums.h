// Numeric values of the CUDA driver enums that launch plans name, and their
// cuda.h spellings, usable without cuda.h: the planner never includes it.
// Values present in CUDA 13.0's cuda.h are checked against it at compile
// time in cuda_driver.cpp.
#pragma once

#include <string>
#include <string_view>

// sm_107's oversized shared memory is not in CUDA 13.0's cuda.h; these are
// the values Triton's launcher uses. Newer cuda.h releases
// declare them as enumerators, which #ifndef cannot see, so the macros are
// defined only when no cuda.h, or one older than 13.4, came first: a file
// that includes cuda.h must include it before this header.
#if !defined(CUDA_VERSION) || CUDA_VERSION < 13040
#ifndef CU_FUNC_ATTRIBUTE_SHARED_MEMORY_MODE
#define CU_FUNC_ATTRIBUTE_SHARED_MEMORY_MODE 17
#endif
#ifndef CU_SHARED_MEMORY_MODE_ALLOW_OVERSIZED_SHARED_MEMORY
#define CU_SHARED_MEMORY_MODE_ALLOW_OVERSIZED_SHARED_MEMORY 3
#endif
// The name is the one public code uses for device attribute 150.
#ifndef CU_DEVICE_ATTRIBUTE_MAX_OVERSIZED_SHARED_MEMORY_PER_BLOCK
#define CU_DEVICE_ATTRIBUTE_MAX_OVERSIZED_SHARED_MEMORY_PER_BLOCK 150
#endif
#endif
#if !defined(CUDA_VERSION) || CUDA_VERSION < 13030
#ifndef CU_LAUNCH_ATTRIBUTE_SHARED_MEMORY_MODE
#define CU_LAUNCH_ATTRIBUTE_SHARED_MEMORY_MODE 18
#endif
#endif

namespace kjit::cuda_ids {

// CUfunction_attribute
inline constexpr int k_func_max_threads_per_block = 0;
inline constexpr int k_func_shared_size_bytes = 1;
inline constexpr int k_func_max_dynamic_shared_size_bytes = 8;
inline constexpr int k_func_non_portable_cluster_size_allowed = 14;
inline constexpr int k_func_shared_memory_mode = static_cast<int>(CU_FUNC_ATTRIBUTE_SHARED_MEMORY_MODE);

// CUlaunchAttributeID
inline constexpr int k_launch_cooperative = 2;
inline constexpr int k_launch_cluster_dimension = 4;
inline constexpr int k_launch_cluster_scheduling_policy_preference = 5;
inline constexpr int k_launch_programmatic_stream_serialization = 6;
inline constexpr int k_launch_priority = 8;
inline constexpr int k_launch_shared_memory_mode = static_cast<int>(CU_LAUNCH_ATTRIBUTE_SHARED_MEMORY_MODE);

// Attribute values
inline constexpr int k_cluster_scheduling_spread = 1;  // CU_CLUSTER_SCHEDULING_POLICY_SPREAD
inline constexpr int k_shared_memory_mode_allow_oversized =
    static_cast<int>(CU_SHARED_MEMORY_MODE_ALLOW_OVERSIZED_SHARED_MEMORY);

// CUdevice_attribute
inline constexpr int k_device_max_threads_per_block = 1;
inline constexpr int k_device_max_shared_memory_per_block = 8;
inline constexpr int k_device_multiprocessor_count = 16;
inline constexpr int k_device_compute_capability_major = 75;
inline constexpr int k_device_compute_capability_minor = 76;
inline constexpr int k_device_max_shared_memory_per_multiprocessor = 81;
inline constexpr int k_device_cooperative_launch = 95;
inline constexpr int k_device_max_shared_memory_per_block_optin = 97;
inline constexpr int k_device_max_blocks_per_multiprocessor = 106;
inline constexpr int k_device_reserved_shared_memory_per_block = 111;
inline constexpr int k_device_cluster_launch = 120;
inline constexpr int k_device_max_oversized_shared_memory_per_block =
    static_cast<int>(CU_DEVICE_ATTRIBUTE_MAX_OVERSIZED_SHARED_MEMORY_PER_BLOCK);

// cuda.h spellings, for plans, logs and the recording binding; an id this
// table lacks comes back as "CU_FUNC_ATTRIBUTE_<id>".
inline std::string function_attribute_name(int id) {
  switch (id) {
    case k_func_max_threads_per_block:
      return "CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK";
    case k_func_shared_size_bytes:
      return "CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES";
    case k_func_max_dynamic_shared_size_bytes:
      return "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES";
    case k_func_non_portable_cluster_size_allowed:
      return "CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED";
    case k_func_shared_memory_mode:
      return "CU_FUNC_ATTRIBUTE_SHARED_MEMORY_MODE";
    default:
      return "CU_FUNC_ATTRIBUTE_" + std::to_string(id);
  }
}

inline std::string launch_attribute_name(int id) {
  switch (id) {
    case k_launch_cooperative:
      return "CU_LAUNCH_ATTRIBUTE_COOPERATIVE";
    case k_launch_cluster_dimension:
      return "CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION";
    case k_launch_cluster_scheduling_policy_preference:
      return "CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE";
    case k_launch_programmatic_stream_serialization:
      return "CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION";
    case k_launch_priority:
      return "CU_LAUNCH_ATTRIBUTE_PRIORITY";
    case k_launch_shared_memory_mode:
      return "CU_LAUNCH_ATTRIBUTE_SHARED_MEMORY_MODE";
    default:
      return "CU_LAUNCH_ATTRIBUTE_" + std::to_string(id);
  }
}

inline std::string device_attribute_name(int id) {
  switch (id) {
    case k_device_max_threads_per_block:
      return "CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK";
    case k_device_max_shared_memory_per_block:
      return "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK";
    case k_device_multiprocessor_count:
      return "CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT";
    case k_device_compute_capability_major:
      return "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR";
    case k_device_compute_capability_minor:
      return "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR";
    case k_device_max_shared_memory_per_multiprocessor:
      return "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR";
    case k_device_cooperative_launch:
      return "CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH";
    case k_device_max_shared_memory_per_block_optin:
      return "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN";
    case k_device_max_blocks_per_multiprocessor:
      return "CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR";
    case k_device_reserved_shared_memory_per_block:
      return "CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK";
    case k_device_cluster_launch:
      return "CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH";
    case k_device_max_oversized_shared_memory_per_block:
      return "CU_DEVICE_ATTRIBUTE_MAX_OVERSIZED_SHARED_MEMORY_PER_BLOCK";
    default:
      return "CU_DEVICE_ATTRIBUTE_" + std::to_string(id);
  }
}

}  // namespace kjit::cuda_ids
