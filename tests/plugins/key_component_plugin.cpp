// Example plugin: adds a component to every request's cache key (say, the
// version of an ABI the kernels are built against).
#include <kjit/plugin.h>

namespace {

int add_abi(const kjit_key_input*, const kjit_key_output* output) {
  output->add_component(output->host, "abi", "kernel-abi-7");
  return 0;
}

const kjit_plugin_info k_info = {KJIT_PLUGIN_API_VERSION, "test-key-component", "2.1", nullptr, 0, nullptr, 0, add_abi,
                                 nullptr};

}  // namespace

extern "C" const kjit_plugin_info* kjit_plugin_get_info(void) { return &k_info; }
