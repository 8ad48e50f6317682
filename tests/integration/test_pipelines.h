// Named pipelines for the tests' daemon configurations: LLVM IR through
// nvptx-codegen and then the passes under test, linked to a cubin or left as
// PTX (a pass that always fails or crashes needs no link stage).
#pragma once

#include <string>
#include <vector>

namespace kjit::test {

inline std::string llvm_test_pipeline(const std::string& name, const std::vector<std::string>& ptx_passes,
                                      bool link) {
  std::string passes = "\"nvptx-codegen\"";
  for (const std::string& pass : ptx_passes) passes += ", \"" + pass + "\"";
  std::string toml = "[pipelines." + name + "]\ninputs = [\"llvm-ir\"]\n[[pipelines." + name +
                     ".stages]]\nname = \"llvm-nvptx\"\ntakes = \"llvm\"\ngives = \"ptx\"\npasses = [" + passes +
                     "]\n";
  if (link)
    toml += "[[pipelines." + name +
            ".stages]]\nname = \"nvjitlink\"\ntakes = \"ptx\"\ngives = \"cubin\"\npasses = [\"nvjitlink-link\"]\n";
  return toml + "\n";
}

}  // namespace kjit::test
