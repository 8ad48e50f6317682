// Kernel argument packing: offsets, bytes, params pointers, the --arg parser.
#include "kjit/kernel_args.h"

#include <gtest/gtest.h>

#include <cstring>

namespace kjit {
namespace {

template <typename T>
T read_at(std::span<const std::byte> bytes, size_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof value);
  return value;
}

TEST(KernelArgs, EachValueSitsAtAMultipleOfItsSize) {
  KernelArgs args{KernelArg::i32(-7), KernelArg::f64(2.5), KernelArg::f32(1.5f), KernelArg::pointer(0x7f0000001000),
                  KernelArg::u32(9)};
  ASSERT_EQ(args.count(), 5u);
  EXPECT_EQ(args.offset(0), 0u);
  EXPECT_EQ(args.offset(1), 8u);
  EXPECT_EQ(args.offset(2), 16u);
  EXPECT_EQ(args.offset(3), 24u);
  EXPECT_EQ(args.offset(4), 32u);
  EXPECT_EQ(args.size(), 36u);  // no tail padding, as the parameter block is counted
  const auto bytes = args.bytes();
  ASSERT_EQ(bytes.size(), 36u);
  EXPECT_EQ(read_at<int32_t>(bytes, 0), -7);
  EXPECT_EQ(read_at<uint32_t>(bytes, 4), 0u);  // padding is zero
  EXPECT_EQ(read_at<double>(bytes, 8), 2.5);
  EXPECT_EQ(read_at<float>(bytes, 16), 1.5f);
  EXPECT_EQ(read_at<uint64_t>(bytes, 24), 0x7f0000001000u);
  EXPECT_EQ(read_at<uint32_t>(bytes, 32), 9u);
}

TEST(KernelArgs, ParamsPointAtEachValue) {
  KernelArgs args{KernelArg::u32(1), KernelArg::i64(-2)};
  void** params = args.params();
  ASSERT_NE(params, nullptr);
  EXPECT_EQ(*static_cast<uint32_t*>(params[0]), 1u);
  EXPECT_EQ(*static_cast<int64_t*>(params[1]), -2);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(params[1]) % 8, 0u);
  args.add(KernelArg::f32(3.0f));  // may move the storage; params() follows
  params = args.params();
  EXPECT_EQ(*static_cast<float*>(params[2]), 3.0f);
  EXPECT_EQ(*static_cast<uint32_t*>(params[0]), 1u);
}

TEST(KernelArgs, NoArgumentsGiveNoParams) {
  KernelArgs args;
  EXPECT_EQ(args.params(), nullptr);
  EXPECT_EQ(args.size(), 0u);
}

TEST(KernelArgs, ParsesEveryKind) {
  EXPECT_EQ(*parse_kernel_arg("i32:-3"), KernelArg::i32(-3));
  EXPECT_EQ(*parse_kernel_arg("i32:-2147483648"), KernelArg::i32(INT32_MIN));
  EXPECT_EQ(*parse_kernel_arg("u32:0xffffffff"), KernelArg::u32(0xffffffffu));
  EXPECT_EQ(*parse_kernel_arg("i64:-9000000000"), KernelArg::i64(-9000000000));
  EXPECT_EQ(*parse_kernel_arg("u64:18446744073709551615"), KernelArg::u64(UINT64_MAX));
  EXPECT_EQ(*parse_kernel_arg("f32:1.5"), KernelArg::f32(1.5f));
  EXPECT_EQ(*parse_kernel_arg("f64:-0.25"), KernelArg::f64(-0.25));
  EXPECT_EQ(*parse_kernel_arg("ptr:0x7f0000000000"), KernelArg::pointer(0x7f0000000000));
}

TEST(KernelArgs, RejectsMalformedAndOutOfRangeValues) {
  for (const char* text : {"1.5", "f16:1", "i32:2147483648", "u32:-1", "i32:12abc", "f32:", "f32:1e60", "ptr:xyz"}) {
    auto arg = parse_kernel_arg(text);
    ASSERT_FALSE(arg.ok()) << text;
    EXPECT_EQ(arg.error().code, ErrorCode::invalid_argument);
    EXPECT_NE(arg.error().message.find(text), std::string::npos) << arg.error().message;
  }
}

TEST(KernelArgs, CheckFitsComparesWithTheKernelsParameterBlock) {
  KernelInfo kernel;
  kernel.name = "vector_add";
  kernel.param_bytes = 28;  // (const float*, const float*, float*, int)
  KernelArgs args{KernelArg::pointer(1), KernelArg::pointer(2), KernelArg::pointer(3), KernelArg::i32(4)};
  EXPECT_TRUE(args.check_fits(kernel).ok());
  args.add(KernelArg::i32(5));
  Status status = args.check_fits(kernel);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().message, "kernel vector_add takes 28 bytes of parameters; 5 arguments give 32 bytes");
}

}  // namespace
}  // namespace kjit
