// Example plugin for error paths: a pass that fails with a diagnostic, one
// that returns garbage instead of PTX, ones that crash their process (as LLVM
// aborts on some inputs, a segmentation fault, an unchecked allocation at
// the memory bound), ones that never return (one of them after starting a
// process of its own) and one that takes its time.
// Each runs only in the pipelines a daemon's configuration builds with it.
#include <kjit/plugin.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace {

int fail(const kjit_pass_input*, const kjit_pass_output* output) {
  output->diagnostic(output->host, "test-fail: refusing this module on purpose");
  return 7;
}

int garbage(const kjit_pass_input*, const kjit_pass_output* output) {
  const char junk[] = "this is not PTX at all";
  output->write_ir(output->host, junk, sizeof(junk) - 1);
  return 0;
}

int crash(const kjit_pass_input*, const kjit_pass_output*) { std::abort(); }

// A segmentation fault with memory to spare.
int segfault(const kjit_pass_input*, const kjit_pass_output*) {
  volatile int* nowhere = nullptr;
  *nowhere = 1;
  return 0;
}

// What a toolchain that does not check its allocations does at the memory
// bound: allocate until refused, then write through the null pointer.
int unchecked_allocation(const kjit_pass_input*, const kjit_pass_output*) {
  for (;;) {
    volatile char* block = static_cast<volatile char*>(std::malloc(1 << 20));
    if (block) {
      for (int i = 0; i < (1 << 20); i += 4096) block[i] = 1;
      continue;
    }
    block[0] = 1;  // the bound refused it, and nobody looked
  }
}

int hang(const kjit_pass_input*, const kjit_pass_output*) {
  while (true) ::sleep(1);
}

// What a toolchain that runs a tool of its own (a driver and its assembler)
// leaves when its compile is stopped: a child process that hangs as well,
// holding the worker's stderr like any child. fork alone: a worker may run
// no program.
int hang_with_child(const kjit_pass_input*, const kjit_pass_output*) {
  if (::fork() == 0) {
    while (true) ::pause();
  }
  while (true) ::sleep(1);
}

// A slow compile that succeeds: its input, unchanged, after 1.5 s or the
// argument "ms" milliseconds (for tests of queues, deadlines and draining
// that need a compile in flight, some of them long enough to act on it
// however slowly a loaded machine runs the test).
int slow(const kjit_pass_input* input, const kjit_pass_output* output) {
  long ms = 1500;
  for (size_t i = 0; i < input->arg_count; ++i)
    if (std::strcmp(input->args[i].key, "ms") == 0) ms = std::strtol(input->args[i].value, nullptr, 10);
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  output->write_ir(output->host, input->ir, input->ir_size);
  return 0;
}

const char* const k_slow_args[] = {"ms"};

const kjit_pass_desc k_passes[] = {
    {"test-fail", "1.0", "ptx", "ptx", nullptr, 0, fail},
    {"test-garbage", "1.0", "ptx", "ptx", nullptr, 0, garbage},
    {"test-crash", "1.0", "ptx", "ptx", nullptr, 0, crash},
    {"test-hang", "1.0", "ptx", "ptx", nullptr, 0, hang},
    {"test-hang-with-child", "1.0", "ptx", "ptx", nullptr, 0, hang_with_child},
    {"test-slow", "1.0", "ptx", "ptx", k_slow_args, 1, slow},
    {"test-segfault", "1.0", "ptx", "ptx", nullptr, 0, segfault},
    {"test-unchecked-allocation", "1.0", "ptx", "ptx", nullptr, 0, unchecked_allocation},
};
const kjit_plugin_info k_info = {KJIT_PLUGIN_API_VERSION, "test-failing", "1.0", k_passes, 8, nullptr, 0, nullptr,
                                 nullptr};

}  // namespace

extern "C" const kjit_plugin_info* kjit_plugin_get_info(void) { return &k_info; }
