// Example plugin built for a future ABI: kjitd must refuse it at start-up.
#include <kjit/plugin.h>

namespace {
const kjit_plugin_info k_info = {KJIT_PLUGIN_API_VERSION + 1, "test-wrong-abi", "9.9", nullptr, 0, nullptr, 0,
                                 nullptr, nullptr};
}

extern "C" const kjit_plugin_info* kjit_plugin_get_info(void) { return &k_info; }
