// kjit plugin for kjit_bench_pipeline: one pass, "bench-noop", that hands its
// PTX back unchanged. A pipeline of these costs only what the pipeline
// machinery and the plugin ABI cost per pass. It declares no edits: the bench
// places the passes itself, in a named pipeline of its own.
#include <kjit/plugin.h>

namespace {

// One copy in, through write_ir: the least any real PTX-to-PTX pass must do,
// so the figure is the floor of a plugin pass, not an empty call.
int copy_ptx(const kjit_pass_input* input, const kjit_pass_output* output) {
  output->write_ir(output->host, input->ir, input->ir_size);
  return 0;
}

const kjit_pass_desc k_passes[] = {{"bench-noop", "1", "ptx", "ptx", nullptr, 0, copy_ptx}};
const kjit_plugin_info k_info = {KJIT_PLUGIN_API_VERSION, "bench-noop", "1", k_passes, 1, nullptr, 0, nullptr, nullptr};

}  // namespace

extern "C" const kjit_plugin_info* kjit_plugin_get_info(void) {
  return &k_info;
}
