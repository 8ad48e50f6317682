// What the serving layer's unit tests share: a real CompilePipeline whose
// "fake" pipeline runs the fake-stamp pass of fake_pass_plugin.cpp (no
// toolchain), handles on that plugin's counters and gate, compile caches
// (memory only, or memory and disk in a temporary directory) and jobs.
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "server/compile/daemon_cache.h"
#include "server/compile/cached_compiler.h"
#include "server/config/daemon_config.h"
#include "pipeline/compile_pipeline.h"
#include "support/eventually.h"

namespace kjit::test {

// A PTX module the PTX reader understands, with one kernel bounded to 256
// threads. Every pipeline here passes it through unchanged but for the
// fake-stamp line.
inline constexpr const char* k_fake_ptx = R"(.version 8.0
.target sm_90
.address_size 64
.visible .entry bounded(.param .u64 bounded_param_0)
.maxntid 256, 1, 1
{
  ret;
}
)";

// The plugin's counters and gate, through the handle the pipeline's dlopen
// made (the plugin is never unloaded, so its state lasts the process).
class FakePasses {
 public:
  FakePasses() {
    handle_ = ::dlopen(KJIT_FAKE_PASS_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    if (!handle_) {
      ADD_FAILURE() << "cannot load " << KJIT_FAKE_PASS_PLUGIN << ": " << ::dlerror();
      return;
    }
    calls_ = reinterpret_cast<int (*)()>(::dlsym(handle_, "fake_passes_calls"));
    blocked_ = reinterpret_cast<int (*)()>(::dlsym(handle_, "fake_passes_blocked"));
    hold_ = reinterpret_cast<void (*)()>(::dlsym(handle_, "fake_passes_hold"));
    release_ = reinterpret_cast<void (*)()>(::dlsym(handle_, "fake_passes_release"));
    if (!calls_ || !blocked_ || !hold_ || !release_) ADD_FAILURE() << "the fake pass plugin lacks its test hooks";
  }
  ~FakePasses() {
    if (release_) release_();  // never leave a later test at a closed gate
    if (handle_) ::dlclose(handle_);
  }
  FakePasses(const FakePasses&) = delete;
  FakePasses& operator=(const FakePasses&) = delete;

  int calls() const { return calls_ ? calls_() : -1; }
  int blocked() const { return blocked_ ? blocked_() : -1; }
  void hold() const {
    if (hold_) hold_();
  }
  void release() const {
    if (release_) release_();
  }
  // Waits (bounded, generously) until n calls wait at the gate.
  bool wait_blocked(int n) const {
    return eventually([&] { return blocked() >= n; }, k_eventually_deadline, std::chrono::milliseconds(1));
  }

 private:
  void* handle_ = nullptr;
  int (*calls_)() = nullptr;
  int (*blocked_)() = nullptr;
  void (*hold_)() = nullptr;
  void (*release_)() = nullptr;
};

// The built-in pipelines plus "fake" (PTX in, the fake-stamp pass, PTX out),
// with the fake pass plugin loaded and no CUDA toolkit at all.
inline std::shared_ptr<const CompilePipeline> fake_pipeline() {
  PipelineSetup setup;
  setup.config.pipelines.push_back(
      PipelineSpec{"fake", {InputKind::ptx}, {StageSpec{"stamp", IrKind::ptx, IrKind::ptx, {"fake-stamp"}}}, {}});
  setup.plugin_paths.push_back(KJIT_FAKE_PASS_PLUGIN);
  Result<std::shared_ptr<const CompilePipeline>> pipeline =
      CompilePipeline::create(CudaToolkit::load("/nonexistent-kjit-toolkit"), std::move(setup));
  if (!pipeline) {
    ADD_FAILURE() << "the fake pipeline: " << pipeline.error().message;
    return nullptr;
  }
  return std::move(pipeline.value());
}

// A daemon configuration that compiles in the process, with small limits so
// that the limit checks are cheap to reach.
inline DaemonConfig test_config() {
  DaemonConfig config;
  config.compile_workers = 0;
  config.max_input_bytes = 4096;
  config.cache.enabled = true;
  config.cache.memory_bytes = 16ull << 20;
  config.cache.disk = false;
  return config;
}

// A temporary directory, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "kjit-serving-test-XXXXXX").string();
    if (::mkdtemp(pattern.data())) path_ = pattern;
    else ADD_FAILURE() << "mkdtemp failed";
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A cache with the memory tier and, when disk_directory is given, a disk
// tier there.
inline CacheConfig cache_config(const std::string& disk_directory = {}) {
  CacheConfig cache = test_config().cache;
  if (!disk_directory.empty()) {
    cache.disk = true;
    cache.directory = disk_directory;
    cache.disk_bytes = 64ull << 20;
  }
  return cache;
}

// A validated job for the fake pipeline.
inline CompileJob fake_job(std::string input = k_fake_ptx) {
  CompileJob job;
  job.input_kind = InputKind::ptx;
  job.input = std::move(input);
  job.input_name = "fake.ptx";
  job.target = parse_target("cuda:90").value();
  job.wanted = ArtifactKind::ptx;
  job.pipeline = "fake";
  return job;
}

inline std::string stamped(const std::string& input, int number) {
  return input + "\n// fake-stamp " + std::to_string(number) + "\n";
}

}  // namespace kjit::test
