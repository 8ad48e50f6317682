// The kjit C++ client: talks to kjitd over its unix socket (or TCP). No gRPC
// types in this header, so callers do not compile against gRPC.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kjit/status.h"
#include "kjit/types.h"

namespace kjit {

struct CompileRequest {
  InputKind input_kind = InputKind::cuda_source;
  std::string input;                          // source or PTX text
  std::string input_name;                     // shown in diagnostics
  std::string target;                         // "cuda:90"; empty: the daemon's default
  std::vector<std::string> options;           // e.g. "-DN=4", "-lineinfo"
  std::map<std::string, std::string> headers; // include name -> content
  std::vector<std::string> name_expressions;  // e.g. "scale<float>"
  ArtifactKind artifact = ArtifactKind::cubin;
  std::string pipeline;                        // a named pipeline; empty: the default
  std::map<std::string, std::string> pass_args;  // "PASS.KEY" -> value
  bool allow_ptx_fallback = false;             // PTX instead of an error when no cubin can be built
};

struct CompileResult {
  ArtifactKind artifact_kind = ArtifactKind::cubin;
  std::string artifact;
  std::string target;
  std::vector<StageTiming> timings;
  std::string log;
  std::vector<KernelInfo> kernels;
  std::map<std::string, std::string> lowered_names;
  double server_ms = 0;
  std::string key;                           // cache key, hex SHA-256
  std::vector<KeyComponent> key_components;  // what the key was derived from
  std::string pipeline;                      // the pipeline that ran
  std::vector<std::string> notes;
};

struct PipelineDescription {
  std::string name;
  std::string toml;  // the effective pipeline, in the configuration's syntax
  std::vector<std::string> known_pipelines;
  std::vector<std::string> plugins;  // "name version"
};

struct ClientOptions {
  // Per call; a compile of a large kernel can take many seconds.
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
};

class Client {
 public:
  // `address`: a unix socket path ("/run/kjit/kjitd.sock"), or a gRPC target
  // ("unix:/path", "127.0.0.1:7878"). Connects lazily.
  explicit Client(const std::string& address, ClientOptions options = {});
  ~Client();
  Client(Client&&) noexcept;
  Client& operator=(Client&&) noexcept;

  // Errors carry the daemon's code, message and full compiler log; an
  // unreachable daemon is ErrorCode::unavailable.
  Result<CompileResult> compile(const CompileRequest& request) const;

  // The pipeline a compile of `input` would run, after every edit.
  Result<PipelineDescription> describe_pipeline(InputKind input, const std::string& target,
                                                const std::string& pipeline) const;

  // "SERVING" when the daemon is up.
  Result<std::string> health() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kjit
