// Builders and checks for test entries (see sample_entries.h).
#include "sample_entries.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "pipeline/cache_key.h"

namespace kjit::test {

std::string key_for(int i) {
  return sha256_hex("test-key-" + std::to_string(i));
}

CacheEntry make_entry(const std::string& key, std::string payload) {
  CacheEntry entry;
  entry.key = key;
  entry.compile_ms = 123.5;
  entry.created_unix = 1'700'000'000;
  Artifact& a = entry.artifact;
  a.kind = ArtifactKind::cubin;
  a.bytes = std::move(payload);
  a.target = "cuda:90";
  KernelInfo k1;
  k1.name = "scale<float>";
  k1.lowered_name = "_Z5scaleIfEvPT_";
  k1.registers = 32;
  k1.static_shared_bytes = 1024;
  k1.shared_section_bytes = 2048;
  k1.local_bytes = 16;
  k1.max_threads_per_block = 256;
  k1.required_threads = Dim3{128, 2, 1};
  k1.cluster_dims = Dim3{2, 1, 1};
  k1.max_registers = 64;
  k1.param_bytes = 24;
  KernelInfo k2;
  k2.name = "vector_add";
  k2.lowered_name = "vector_add";
  k2.registers = 8;
  k2.scalar_registers = 12;  // as an AMD code object's kernel says
  k2.wavefront_size = 64;
  a.kernels = {k1, k2};
  a.lowered_names = {{"scale<float>", "_Z5scaleIfEvPT_"}, {"vector_add", "vector_add"}};
  StageTiming nvrtc;
  nvrtc.stage = "nvrtc";
  nvrtc.ms = 80.25;
  nvrtc.passes = {PassTiming{"nvrtc-compile", 79.5}};
  StageTiming link;
  link.stage = "nvjitlink";
  link.ms = 40;
  a.timings = {nvrtc, link};
  a.log = "warning: something\n";
  a.key = key;
  a.key_components = {KeyComponent{"target", "cuda:90"}, KeyComponent{"input.digest", "abc"}};
  a.pipeline = "cuda-source>cubin";
  a.notes = {"a note"};
  a.toolkit = "13.5 (local: /opt/wheels/nvidia/cu13)";
  a.triton_metadata = "{\"name\": \"k\", \"shared\": 1024}";
  a.triton_build = "triton-3.9.0";
  a.triton_files = {{"ttgir", "module attributes {\"ttg.num-warps\" = 4 : i32} {}\n"}, {"ptx", ".version 8.7\n"}};
  return entry;
}

std::string versioned_payload(const std::string& key, int writer, int sequence, size_t size) {
  // A cheap generator seeded by all three, so two versions differ in
  // (nearly) every byte and a mix of two is caught anywhere.
  uint64_t state = std::hash<std::string>{}(key) ^ (uint64_t(writer) << 40) ^ uint64_t(sequence);
  std::string out(size, '\0');
  for (size_t i = 0; i < size; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    out[i] = static_cast<char>(state >> 56);
  }
  return out;
}

CacheEntry make_versioned_entry(const std::string& key, int writer, int sequence, size_t size) {
  CacheEntry entry = make_entry(key, versioned_payload(key, writer, sequence, size));
  entry.artifact.log = std::to_string(writer) + " " + std::to_string(sequence) + " " + std::to_string(size);
  return entry;
}

bool entry_is_consistent(const CacheEntry& entry, const std::string& expected_key) {
  int writer = 0, sequence = 0;
  size_t size = 0;
  if (std::sscanf(entry.artifact.log.c_str(), "%d %d %zu", &writer, &sequence, &size) != 3) return false;
  return entry.key == expected_key && entry.artifact.key == expected_key &&
         entry.artifact.bytes == versioned_payload(expected_key, writer, sequence, size);
}

void expect_same_entry(const CacheEntry& actual, const CacheEntry& expected) {
  EXPECT_EQ(actual.key, expected.key);
  EXPECT_EQ(actual.compile_ms, expected.compile_ms);
  EXPECT_EQ(actual.created_unix, expected.created_unix);
  const Artifact& a = actual.artifact;
  const Artifact& e = expected.artifact;
  EXPECT_EQ(a.kind, e.kind);
  EXPECT_EQ(a.bytes, e.bytes);
  EXPECT_EQ(a.target, e.target);
  EXPECT_EQ(a.kernels, e.kernels);
  EXPECT_EQ(a.lowered_names, e.lowered_names);
  ASSERT_EQ(a.timings.size(), e.timings.size());
  for (size_t i = 0; i < a.timings.size(); ++i) {
    EXPECT_EQ(a.timings[i].stage, e.timings[i].stage);
    EXPECT_EQ(a.timings[i].ms, e.timings[i].ms);
    ASSERT_EQ(a.timings[i].passes.size(), e.timings[i].passes.size());
    for (size_t j = 0; j < a.timings[i].passes.size(); ++j) {
      EXPECT_EQ(a.timings[i].passes[j].pass, e.timings[i].passes[j].pass);
      EXPECT_EQ(a.timings[i].passes[j].ms, e.timings[i].passes[j].ms);
    }
  }
  EXPECT_EQ(a.log, e.log);
  EXPECT_EQ(a.key, e.key);
  EXPECT_EQ(a.key_components, e.key_components);
  EXPECT_EQ(a.pipeline, e.pipeline);
  EXPECT_EQ(a.toolkit, e.toolkit);
  EXPECT_EQ(a.notes, e.notes);
  EXPECT_EQ(a.triton_metadata, e.triton_metadata);
  EXPECT_EQ(a.triton_build, e.triton_build);
  EXPECT_EQ(a.triton_files, e.triton_files);
}

}  // namespace kjit::test
