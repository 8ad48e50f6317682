// A kjit plugin for the serving layer's unit tests: one PTX -> PTX pass,
// "fake-stamp", that needs no toolchain. It appends a line numbering its own
// calls ("// fake-stamp 3"), so a test can tell which compile produced an
// artifact and how many compiles ran; it refuses any input that contains
// "FAIL-ME"; and while the test holds its gate, every call waits at the gate,
// so a test can keep a compile running while other requests arrive.
//
// The test reaches the counters through the extern "C" functions below,
// found with dlsym on the handle the pipeline's own dlopen made.
#include <kjit/plugin.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>

namespace {

std::mutex g_mutex;
std::condition_variable g_gate_opened;
bool g_held = false;
int g_blocked = 0;  // calls waiting at the gate now
int g_calls = 0;    // calls that got past the gate

// A gate the test forgot to open must not hang the test executable: the
// call goes on after this long (and the test's assertions then fail).
constexpr auto k_gate_timeout = std::chrono::seconds(10);

int stamp(const kjit_pass_input* input, const kjit_pass_output* output) {
  const std::string_view ir(input->ir, input->ir_size);
  int number = 0;
  {
    std::unique_lock lock(g_mutex);
    ++g_blocked;
    g_gate_opened.wait_for(lock, k_gate_timeout, [] { return !g_held; });
    --g_blocked;
    number = ++g_calls;
  }
  if (ir.find("FAIL-ME") != std::string_view::npos) {
    output->diagnostic(output->host, "fake-stamp: refusing this module on purpose");
    return 3;
  }
  std::string out(ir);
  out += "\n// fake-stamp " + std::to_string(number);
  for (size_t i = 0; i < input->arg_count; ++i)
    if (std::strcmp(input->args[i].key, "tag") == 0) out += " tag=" + std::string(input->args[i].value);
  out += "\n";
  output->write_ir(output->host, out.data(), out.size());
  output->diagnostic(output->host, "fake-stamp ran");
  return 0;
}

const char* const k_stamp_args[] = {"tag"};
const kjit_pass_desc k_passes[] = {
    {"fake-stamp", "1.0", "ptx", "ptx", k_stamp_args, 1, stamp},
};
const kjit_plugin_info k_info = {KJIT_PLUGIN_API_VERSION, "fake-passes", "1.0", k_passes, 1, nullptr, 0, nullptr,
                                 nullptr};

}  // namespace

extern "C" {

const kjit_plugin_info* kjit_plugin_get_info(void) { return &k_info; }

// Calls of fake-stamp that got past the gate (failed ones included).
int fake_passes_calls(void) {
  std::lock_guard lock(g_mutex);
  return g_calls;
}

// Calls waiting at the gate now.
int fake_passes_blocked(void) {
  std::lock_guard lock(g_mutex);
  return g_blocked;
}

void fake_passes_hold(void) {
  std::lock_guard lock(g_mutex);
  g_held = true;
}

void fake_passes_release(void) {
  {
    std::lock_guard lock(g_mutex);
    g_held = false;
  }
  g_gate_opened.notify_all();
}

}  // extern "C"
