// The input kinds' table against the wire: each proto InputKind value (but
// UNSPECIFIED) is one row of core/input_kinds.cpp and each row one value, so
// a kind added on one side and not the other fails here, not in requests.
#include "core/input_kinds.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "convert/input_kind_names.h"
#include "convert/wire_convert.h"
#include "pipeline/default_pipelines.h"
#include "pipeline/pipeline_spec.h"

namespace kjit {
namespace {

TEST(InputKinds, EveryWireValueHasOneRow) {
  const google::protobuf::EnumDescriptor* descriptor = v1::InputKind_descriptor();
  ASSERT_EQ(static_cast<size_t>(descriptor->value_count()), input_kinds().size() + 1)
      << "one row per InputKind value of compiler.proto, UNSPECIFIED aside";
  for (int i = 0; i < descriptor->value_count(); ++i) {
    const google::protobuf::EnumValueDescriptor* value = descriptor->value(i);
    if (value->number() == v1::INPUT_KIND_UNSPECIFIED) continue;
    const std::string name = canonical_input_kind_name(value->name());
    int rows = 0;
    for (const InputKindInfo& info : input_kinds()) rows += info.name == name;
    EXPECT_EQ(rows, 1) << value->name() << " (" << name << ")";
    std::optional<InputKind> kind = from_proto(static_cast<v1::InputKind>(value->number()));
    ASSERT_TRUE(kind) << value->name();
    EXPECT_EQ(to_string(*kind), name);
    EXPECT_EQ(to_proto(*kind), value->number());
  }
}

TEST(InputKinds, EveryRowHasOneWireValue) {
  for (const InputKindInfo& info : input_kinds()) {
    int values = 0;
    for (const WireInputKind& wire : wire_input_kinds()) values += wire.name == info.name;
    EXPECT_EQ(values, 1) << info.name;
    EXPECT_NE(to_proto(info.kind), v1::INPUT_KIND_UNSPECIFIED) << info.name;
    EXPECT_EQ(parse_input_kind(info.name), info.kind);
    EXPECT_EQ(&input_kind_info(info.kind), &info);
  }
}

TEST(InputKinds, AnUnknownWireValueIsNoKind) {
  EXPECT_EQ(from_proto(v1::INPUT_KIND_UNSPECIFIED), std::nullopt);
  EXPECT_EQ(from_proto(static_cast<v1::InputKind>(99)), std::nullopt);
}

TEST(InputKinds, EveryRowsIrParses) {
  for (const InputKindInfo& info : input_kinds()) {
    std::optional<IrKind> ir = parse_ir_kind(info.ir);
    ASSERT_TRUE(ir) << info.name << ": '" << info.ir << "'";
    EXPECT_EQ(ir_kind_of(info.kind), *ir);
  }
}

TEST(InputKinds, EveryRowHasADefaultPipelineStartingFromItsIr) {
  for (const InputKindInfo& info : input_kinds()) {
    const PipelineSpec* pipeline = default_pipeline_for(info.kind, Vendor::nvidia);
    if (!pipeline) pipeline = default_pipeline_for(info.kind, Vendor::amd);
    ASSERT_NE(pipeline, nullptr) << info.name;
    ASSERT_FALSE(pipeline->stages.empty()) << pipeline->name;
    EXPECT_EQ(pipeline->stages.front().takes, ir_kind_of(info.kind)) << info.name << ": " << pipeline->name;
  }
}

TEST(InputKinds, TheFamiliesAgreeWithSource) {
  for (const InputKindInfo& info : input_kinds()) {
    const bool front_end = info.options == OptionFamily::cuda_source || info.options == OptionFamily::hip_source;
    EXPECT_EQ(info.source, front_end) << info.name;
    if (info.source) {
      EXPECT_TRUE(info.text) << info.name;
    }
  }
}

TEST(InputKinds, TheDefaultFileNameHasTheWiresFirstExtension) {
  for (const WireInputKind& wire : wire_input_kinds()) {
    ASSERT_FALSE(wire.extensions.empty()) << wire.name;
    std::optional<InputKind> kind = parse_input_kind(wire.name);
    ASSERT_TRUE(kind) << wire.name;
    EXPECT_EQ(input_kind_info(*kind).default_file_name, "input" + wire.extensions.front()) << wire.name;
  }
}

TEST(InputKinds, ExtensionsAndAliasesNameOneKindEach) {
  std::map<std::string, std::string> owner;  // spelling -> the kind it names
  auto claim = [&](const std::string& spelling, const std::string& kind) {
    auto [it, fresh] = owner.emplace(spelling, kind);
    EXPECT_TRUE(fresh || it->second == kind) << "'" << spelling << "' names " << it->second << " and " << kind;
  };
  for (const WireInputKind& wire : wire_input_kinds()) {
    claim(wire.name, wire.name);
    for (const std::string& alias : wire.aliases) claim(alias, wire.name);
    for (const std::string& extension : wire.extensions) {
      EXPECT_TRUE(extension.size() > 1 && extension[0] == '.') << wire.name << ": '" << extension << "'";
      claim(extension, wire.name);
    }
  }
}

TEST(InputKinds, EveryNameAliasAndExtensionParses) {
  for (const WireInputKind& wire : wire_input_kinds()) {
    EXPECT_EQ(parse_wire_input_kind(wire.name), wire.value) << wire.name;
    EXPECT_EQ(parse_wire_input_kind(wire.enum_name), wire.value) << wire.enum_name;
    for (const std::string& alias : wire.aliases) EXPECT_EQ(parse_wire_input_kind(alias), wire.value) << alias;
    for (const std::string& extension : wire.extensions) {
      EXPECT_EQ(parse_wire_input_kind(extension), wire.value) << extension;
      EXPECT_EQ(wire_input_kind_of_extension(extension), wire.value) << extension;
    }
  }
}

// What the Python client has always accepted (client/python's parse_kind),
// a public contract: the CLI's --kind accepts the same.
TEST(InputKinds, TheClientsSpellingsParse) {
  const std::map<std::string, v1::InputKind> spellings{
      {"cuda", v1::INPUT_KIND_CUDA_SOURCE},     {"cuda-source", v1::INPUT_KIND_CUDA_SOURCE},
      {"cu", v1::INPUT_KIND_CUDA_SOURCE},       {"CUDA_SOURCE", v1::INPUT_KIND_CUDA_SOURCE},
      {"ptx", v1::INPUT_KIND_PTX},              {"INPUT_KIND_PTX", v1::INPUT_KIND_PTX},
      {"input_kind_ptx", v1::INPUT_KIND_PTX},   {" ptx ", v1::INPUT_KIND_PTX},
      {"llvm-ir", v1::INPUT_KIND_LLVM_IR},      {"llvm", v1::INPUT_KIND_LLVM_IR},
      {"ll", v1::INPUT_KIND_LLVM_IR},           {"llvm-bitcode", v1::INPUT_KIND_LLVM_BITCODE},
      {"llvm_bitcode", v1::INPUT_KIND_LLVM_BITCODE}, {"bitcode", v1::INPUT_KIND_LLVM_BITCODE},
      {"bc", v1::INPUT_KIND_LLVM_BITCODE},      {"hip", v1::INPUT_KIND_HIP_SOURCE},
      {"hip-source", v1::INPUT_KIND_HIP_SOURCE}, {"HIP", v1::INPUT_KIND_HIP_SOURCE},
  };
  for (const auto& [text, value] : spellings) EXPECT_EQ(parse_wire_input_kind(text), value) << "'" << text << "'";
  for (std::string text : {"", "fortran", "INPUT_KIND_UNSPECIFIED", "INPUT_KIND_FORTRAN", "unspecified", "2", "cuh"})
    EXPECT_EQ(parse_wire_input_kind(text), std::nullopt) << "'" << text << "'";
  EXPECT_EQ(wire_input_kind_of_extension(".cuh"), v1::INPUT_KIND_CUDA_SOURCE);
  EXPECT_EQ(wire_input_kind_of_extension(".CU"), v1::INPUT_KIND_CUDA_SOURCE);
  EXPECT_EQ(wire_input_kind_of_extension(".txt"), std::nullopt);
  EXPECT_EQ(wire_input_kind_of_extension(""), std::nullopt);
}

}  // namespace
}  // namespace kjit
