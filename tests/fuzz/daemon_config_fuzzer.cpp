// Fuzzes load_config_text: kjitd's TOML configuration, including the
// [pipelines.*] and [[edits]] tables it hands to the pipeline reader.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "fuzz_check.h"
#include "pipeline/pipeline_toml.h"
#include "server/config/daemon_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  kjit::DaemonConfig config;
  kjit::Status status = kjit::load_config_text(text, "fuzz.toml", config);
  if (!status) {
    FUZZ_CHECK(status.error().code == kjit::ErrorCode::invalid_argument);
    FUZZ_CHECK(status.error().message.starts_with("config fuzz.toml"));
    return 0;
  }
  for (const kjit::ToolkitRange& range : config.toolkits) {
    FUZZ_CHECK(!range.cuda_home.empty());
    FUZZ_CHECK(range.targets.min_sm != 0 && range.targets.min_sm <= range.targets.max_sm);
  }
  FUZZ_CHECK(config.compile_workers <= 1024);
  // `kjit pipeline show` prints a pipeline so that it can be pasted back into
  // a configuration: what it prints must read back as the same pipeline.
  for (const kjit::PipelineSpec& pipeline : config.pipelines.pipelines) {
    const std::string shown = kjit::pipeline_to_toml(pipeline);
    kjit::DaemonConfig reread;
    kjit::Status again = kjit::load_config_text(shown, "shown.toml", reread);
    if (!again) std::fprintf(stderr, "%s\n--- shown as ---\n%s\n", again.error().message.c_str(), shown.c_str());
    FUZZ_CHECK(again.ok());
    FUZZ_CHECK(reread.pipelines.pipelines.size() == 1 && reread.pipelines.pipelines[0] == pipeline);
  }
  return 0;
}
