// Example plugin: disables LLVM's optimization pass, but only for requests
// that select the pipeline "llvm-unoptimized" (defined in the daemon's
// configuration).
#include <kjit/plugin.h>

namespace {
const kjit_edit_desc k_edits[] = {
    {KJIT_EDIT_DISABLE, "llvm-unoptimized", "llvm-passes", nullptr, nullptr, 0, nullptr, 0}};
const kjit_plugin_info k_info = {KJIT_PLUGIN_API_VERSION, "test-disable", "1.0", nullptr, 0, k_edits, 1, nullptr,
                                 nullptr};
}  // namespace

extern "C" const kjit_plugin_info* kjit_plugin_get_info(void) { return &k_info; }
