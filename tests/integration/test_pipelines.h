// Named pipelines for the tests' daemon configurations, as kjitd.toml text.
#pragma once

#include <string>
#include <vector>

namespace kjit::test {

struct TestStage {
  std::string name, takes, gives;
  std::vector<std::string> passes;
};

// [pipelines.<name>] for `input`, with these stages in order.
inline std::string pipeline_toml(const std::string& name, const std::string& input,
                                 const std::vector<TestStage>& stages) {
  std::string toml = "[pipelines." + name + "]\ninputs = [\"" + input + "\"]\n";
  for (const TestStage& stage : stages) {
    toml += "[[pipelines." + name + ".stages]]\nname = \"" + stage.name + "\"\ntakes = \"" + stage.takes +
            "\"\ngives = \"" + stage.gives + "\"\npasses = [";
    for (size_t i = 0; i < stage.passes.size(); ++i) toml += (i ? ", \"" : "\"") + stage.passes[i] + "\"";
    toml += "]\n";
  }
  return toml + "\n";
}

// LLVM IR through nvptx-codegen and then the passes under test, linked to a
// cubin or left as PTX (a pass that always fails or crashes needs no link
// stage).
inline std::string llvm_test_pipeline(const std::string& name, const std::vector<std::string>& ptx_passes,
                                      bool link) {
  std::vector<std::string> passes{"nvptx-codegen"};
  passes.insert(passes.end(), ptx_passes.begin(), ptx_passes.end());
  std::vector<TestStage> stages{{"llvm-nvptx", "llvm", "ptx", passes}};
  if (link) stages.push_back({"nvjitlink", "ptx", "cubin", {"nvjitlink-link"}});
  return pipeline_toml(name, "llvm-ir", stages);
}

}  // namespace kjit::test
