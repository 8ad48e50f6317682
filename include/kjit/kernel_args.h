// Kernel arguments from typed values, packed as the kernel's parameter block
// lays them out (each at a multiple of its own size), so a caller that knows
// only "f32 1.5, pointer 0x7f.., i32 3" can launch: the client library, the
// Launch RPC and `kjit launch --arg f32:1.5`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kjit/status.h"
#include "kjit/types.h"

namespace kjit {

enum class ArgKind { i32, u32, i64, u64, f32, f64, pointer };

// "i32", "u32", "i64", "u64", "f32", "f64", "ptr".
std::string_view to_string(ArgKind kind);

// Size and alignment in the parameter block (a pointer is 8 bytes: kjit
// targets 64-bit devices only).
size_t size_of(ArgKind kind);

struct KernelArg {
  ArgKind kind = ArgKind::i32;
  uint64_t bits = 0;  // the value's bytes, little-endian, in the low size_of(kind) bytes

  static KernelArg i32(int32_t value);
  static KernelArg u32(uint32_t value);
  static KernelArg i64(int64_t value);
  static KernelArg u64(uint64_t value);
  static KernelArg f32(float value);
  static KernelArg f64(double value);
  static KernelArg pointer(uint64_t device_address);
  bool operator==(const KernelArg&) const = default;
};

// "f32:1.5", "i32:-3", "u64:0x10", "ptr:0x7f0000000000": the CLI's --arg
// spelling. Out-of-range or malformed values are invalid_argument.
Result<KernelArg> parse_kernel_arg(std::string_view text);

class KernelArgs {
 public:
  KernelArgs() = default;
  KernelArgs(std::initializer_list<KernelArg> args);

  KernelArgs& add(const KernelArg& arg);

  size_t count() const { return offsets_.size(); }
  size_t offset(size_t index) const { return offsets_.at(index); }
  // Bytes up to the end of the last argument (no tail padding), as the
  // kernel's parameter block size is counted.
  size_t size() const { return size_; }
  // The packed parameter block: LaunchArgs::packed.
  std::span<const std::byte> bytes() const;
  // One pointer per argument into bytes(): LaunchArgs::params (kernelParams).
  // Valid until the next add().
  void** params();

  // invalid_argument when the kernel's parameter block size is known
  // (KernelInfo::param_bytes) and these arguments do not fill it exactly.
  Status check_fits(const KernelInfo& kernel) const;

 private:
  // 8-byte words so every argument is aligned in memory as on the device.
  std::vector<uint64_t> words_;
  std::vector<size_t> offsets_;
  std::vector<void*> pointers_;
  size_t size_ = 0;
};

}  // namespace kjit
