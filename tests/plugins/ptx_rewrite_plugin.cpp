// Example plugin: a PTX-rewriting pass inserted after LLVM's code generation.
// It stamps the PTX with a comment line, so a test can see that it ran.
#include <kjit/plugin.h>

#include <string>

namespace {

int stamp_ptx(const kjit_pass_input* input, const kjit_pass_output* output) {
  std::string ptx(input->ir, input->ir_size);
  std::string stamp = "// rewritten by test-ptx-rewrite";
  for (size_t i = 0; i < input->arg_count; ++i)
    if (std::string(input->args[i].key) == "tag") stamp += " tag=" + std::string(input->args[i].value);
  size_t at = ptx.find(".address_size");
  if (at == std::string::npos) {
    output->diagnostic(output->host, "test-ptx-rewrite: no .address_size line in the PTX");
    return 1;
  }
  size_t eol = ptx.find('\n', at);
  ptx.insert(eol == std::string::npos ? ptx.size() : eol + 1, stamp + "\n");
  output->write_ir(output->host, ptx.data(), ptx.size());
  return 0;
}

const char* const k_arg_keys[] = {"tag"};
const kjit_pass_desc k_passes[] = {{"test-ptx-rewrite", "1.0", "ptx", "ptx", k_arg_keys, 1, stamp_ptx}};
const kjit_edit_desc k_edits[] = {
    {KJIT_EDIT_INSERT_AFTER, nullptr, "nvptx-codegen", "test-ptx-rewrite", nullptr, 0, nullptr, 0}};
const kjit_plugin_info k_info = {KJIT_PLUGIN_API_VERSION, "test-ptx-rewrite", "1.0", k_passes, 1, k_edits, 1, nullptr,
                                 nullptr};

}  // namespace

extern "C" const kjit_plugin_info* kjit_plugin_get_info(void) { return &k_info; }
