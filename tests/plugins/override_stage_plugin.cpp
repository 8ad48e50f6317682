// Example plugin: overrides the "ptx" stage of every pipeline that has one
// with its own: retarget, then strip the PTX's comment lines.
#include <kjit/plugin.h>

#include <sstream>
#include <string>

namespace {

int strip_comments(const kjit_pass_input* input, const kjit_pass_output* output) {
  std::istringstream in(std::string(input->ir, input->ir_size));
  std::string line, out;
  while (std::getline(in, line)) {
    size_t first = line.find_first_not_of(" \t");
    if (first != std::string::npos && line.compare(first, 2, "//") == 0) continue;
    out += line + "\n";
  }
  output->write_ir(output->host, out.data(), out.size());
  return 0;
}

const kjit_pass_desc k_passes[] = {{"test-strip-ptx-comments", "1.0", "ptx", "ptx", nullptr, 0, strip_comments}};
const char* const k_stage_passes[] = {"ptx-retarget", "test-strip-ptx-comments"};
const kjit_stage_desc k_stage = {"ptx", "ptx", "ptx", k_stage_passes, 2};
const kjit_edit_desc k_edits[] = {{KJIT_EDIT_OVERRIDE_STAGE, nullptr, nullptr, nullptr, &k_stage, 1, nullptr, 0}};
const kjit_plugin_info k_info = {KJIT_PLUGIN_API_VERSION, "test-override-stage", "1.0", k_passes, 1, k_edits, 1,
                                 nullptr, nullptr};

}  // namespace

extern "C" const kjit_plugin_info* kjit_plugin_get_info(void) { return &k_info; }
