// The HIPRTC backend: discovery over fake library trees, the stage's
// refusals and bundle handling against a fake API, and real compiles with
// ROCm's libamdhip64 (skipped when it is absent). A real compile runs in a
// forked child: HIPRTC may abort the process, and the test process itself
// never loads it.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <optional>

#include "backends/hiprtc/hiprtc_api.h"
#include "backends/hiprtc/hiprtc_stage.h"

namespace kjit {
namespace {

constexpr uint16_t k_em_amdgpu = 224;
// EF_AMDGPU_MACH values in e_flags' low byte.
constexpr uint32_t k_mach_gfx908 = 0x30, k_mach_gfx1030 = 0x36, k_mach_gfx90a = 0x3f;

constexpr const char* k_shared_memory_kernel = R"(
extern "C" __global__ void __launch_bounds__(256) reverse(float* data) {
  __shared__ float tile[8192];  // 32 KiB
  for (int i = threadIdx.x; i < 8192; i += blockDim.x) tile[i] = data[i];
  __syncthreads();
  for (int i = threadIdx.x; i < 8192; i += blockDim.x) data[i] = tile[8191 - i];
}
)";

uint16_t elf_machine(const std::string& elf) {
  uint16_t machine = 0;
  if (elf.size() >= 20) std::memcpy(&machine, elf.data() + 18, sizeof machine);
  return machine;
}

uint32_t elf_flags(const std::string& elf) {
  uint32_t flags = 0;
  if (elf.size() >= 52) std::memcpy(&flags, elf.data() + 48, sizeof flags);  // ELF64 e_flags
  return flags;
}

// What a child reports: length-prefixed fields over a pipe.
void write_fields(int fd, const std::vector<std::string>& fields) {
  std::string bytes;
  for (const std::string& field : fields) {
    const uint64_t size = field.size();
    bytes.append(reinterpret_cast<const char*>(&size), sizeof size);
    bytes += field;
  }
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

std::vector<std::string> read_fields(const std::string& bytes) {
  std::vector<std::string> fields;
  for (size_t at = 0; at + sizeof(uint64_t) <= bytes.size();) {
    uint64_t size = 0;
    std::memcpy(&size, bytes.data() + at, sizeof size);
    at += sizeof size;
    fields.push_back(bytes.substr(at, size));
    at += size;
  }
  return fields;
}

// Runs `body` in a forked child and returns the fields it wrote; fails the
// test when the child dies instead (HIPRTC aborting, say).
std::vector<std::string> run_in_child(const std::function<std::vector<std::string>()>& body) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) {
    ADD_FAILURE() << "pipe: " << std::strerror(errno);
    return {};
  }
  const pid_t pid = fork();
  if (pid == 0) {
    close(pipe_fds[0]);
    write_fields(pipe_fds[1], body());
    _exit(0);
  }
  close(pipe_fds[1]);
  std::string bytes;
  char buffer[65536];
  for (ssize_t n; (n = read(pipe_fds[0], buffer, sizeof buffer)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    bytes.append(buffer, static_cast<size_t>(n));
  }
  close(pipe_fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) ADD_FAILURE() << "the child died of signal " << WTERMSIG(status);
  return read_fields(bytes);
}

struct ChildCompile {
  bool ok = false;
  ErrorCode code = ErrorCode::internal;
  std::string message;
  HsacoOutput out;
  double load_seconds = 0, compile_seconds = 0;
};

// Loads HIPRTC and compiles `request` in a child.
ChildCompile compile_in_child(const HipCompileRequest& request) {
  const std::vector<std::string> fields = run_in_child([&request]() -> std::vector<std::string> {
    const auto start = std::chrono::steady_clock::now();
    auto location = find_hiprtc();
    if (!location) return {"error", std::to_string(static_cast<int>(ErrorCode::failed_precondition)), "no HIPRTC"};
    auto api = load_hiprtc(*location);
    if (!api) return {"error", std::to_string(static_cast<int>(api.error().code)), api.error().message};
    const auto loaded = std::chrono::steady_clock::now();
    auto result = compile_hip_to_hsaco(**api, request);
    const auto compiled = std::chrono::steady_clock::now();
    if (!result) return {"error", std::to_string(static_cast<int>(result.error().code)), result.error().message};
    std::vector<std::string> fields{"ok", std::to_string(std::chrono::duration<double>(loaded - start).count()),
                                    std::to_string(std::chrono::duration<double>(compiled - loaded).count()),
                                    result->hsaco, result->log};
    for (const auto& [expression, lowered] : result->lowered_names) fields.insert(fields.end(), {expression, lowered});
    return fields;
  });
  ChildCompile compile;
  if (fields.size() < 3) {
    compile.message = "the child reported nothing";
    return compile;
  }
  if (fields[0] == "error") {
    compile.code = static_cast<ErrorCode>(std::stoi(fields[1]));
    compile.message = fields[2];
    return compile;
  }
  if (fields.size() < 5) return compile;
  compile.ok = true;
  compile.load_seconds = std::stod(fields[1]);
  compile.compile_seconds = std::stod(fields[2]);
  compile.out.hsaco = fields[3];
  compile.out.log = fields[4];
  for (size_t i = 5; i + 1 < fields.size(); i += 2) compile.out.lowered_names[fields[i]] = fields[i + 1];
  return compile;
}

#define SKIP_WITHOUT_HIPRTC() \
  if (!find_hiprtc()) GTEST_SKIP() << "HIPRTC (libamdhip64) is not installed; scripts/install-deps.sh installs it"

HipCompileRequest request_for(std::string_view source, std::string processor = "gfx90a") {
  HipCompileRequest request;
  request.source = source;
  request.name = "k.hip";
  request.processor = std::move(processor);
  request.allowed_processors = {"gfx90a", "gfx908", "gfx1030"};
  return request;
}

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "kjit-hiprtc-XXXXXX").string();
    path_ = mkdtemp(pattern.data()) ? pattern : std::string();
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// --- discovery -------------------------------------------------------------

TEST(FindHiprtc, ResolvesTheSonameLinkAndTakesTheVersionFromTheFileName) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  std::ofstream(dir.path() + "/libamdhip64.so.5.9.31337") << "not a library";
  std::filesystem::create_symlink("libamdhip64.so.5.9.31337", dir.path() + "/libamdhip64.so.5");

  auto location = find_hiprtc({"/nonexistent-dir", dir.path()});
  ASSERT_TRUE(location.has_value());
  EXPECT_EQ(location->path, std::filesystem::canonical(dir.path()).string() + "/libamdhip64.so.5.9.31337");
  EXPECT_EQ(location->version, "5.9.31337");
}

TEST(FindHiprtc, FindsNothingInDirectoriesWithoutIt) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  std::ofstream(dir.path() + "/libnvrtc.so.12") << "";
  EXPECT_FALSE(find_hiprtc({dir.path()}).has_value());
}

TEST(FindHiprtc, FindsRocmsLibraryOnThisHost) {
  SKIP_WITHOUT_HIPRTC();
  auto location = find_hiprtc();
  ASSERT_TRUE(location.has_value());
  std::cout << "HIPRTC: " << location->path << " version " << location->version << "\n";
  EXPECT_TRUE(std::filesystem::is_regular_file(location->path));
  EXPECT_FALSE(location->version.empty());
  // Debian's ROCm 5.2.3 ships libamdhip64.so.5.2.21153.
  if (location->path.find("libamdhip64.so.5.") != std::string::npos) {
    EXPECT_EQ(location->version.substr(0, 2), "5.");
  }
}

TEST(LoadHiprtc, AnUnloadablePathIsAFailedPreconditionNamingIt) {
  ScopedEnv library("KJIT_HIPRTC_LIBRARY", "/nonexistent/libamdhip64.so.5");
  auto location = find_hiprtc();
  ASSERT_TRUE(location.has_value());
  EXPECT_EQ(location->path, "/nonexistent/libamdhip64.so.5");
  auto api = load_hiprtc(*location);
  ASSERT_FALSE(api.ok());
  EXPECT_EQ(api.error().code, ErrorCode::failed_precondition);
  EXPECT_NE(api.error().message.find("/nonexistent/libamdhip64.so.5"), std::string::npos) << api.error().message;
}

// HIPRTC opens comgr only at its first compile and crashes when it cannot,
// so a worker sandboxed after loading HIPRTC relies on it being open already.
TEST(LoadHiprtc, ComgrIsLoadedBeforeTheFirstCompile) {
  SKIP_WITHOUT_HIPRTC();
  const std::vector<std::string> fields = run_in_child([]() -> std::vector<std::string> {
    const bool before = dlopen("libamd_comgr.so.2", RTLD_NOW | RTLD_NOLOAD) != nullptr;
    auto api = load_hiprtc(*find_hiprtc());
    if (!api) return {api.error().message};
    const bool after = dlopen("libamd_comgr.so.2", RTLD_NOW | RTLD_NOLOAD) != nullptr;
    return {before ? "before" : "not before", after ? "after" : "not after", (*api)->location.version,
            std::to_string((*api)->major) + "." + std::to_string((*api)->minor)};
  });
  ASSERT_EQ(fields.size(), 4u) << (fields.empty() ? "" : fields[0]);
  EXPECT_EQ(fields[0], "not before");
  EXPECT_EQ(fields[1], "after");
  EXPECT_EQ(fields[2], find_hiprtc()->version) << "the file name's version wins when it has one";
  std::cout << "hiprtcVersion: " << fields[3] << "\n";
}

// --- the stage against a fake HIPRTC ---------------------------------------

int g_fake_calls = 0;
std::string g_fake_code;

HiprtcApi fake_api() {
  HiprtcApi api;
  api.get_error_string = [](HiprtcResult) { return "FAKE"; };
  api.create_program = [](HiprtcProgram* program, const char*, const char*, int, const char**, const char**) {
    ++g_fake_calls;
    *program = reinterpret_cast<HiprtcProgram>(&g_fake_calls);
    return k_hiprtc_success;
  };
  api.destroy_program = [](HiprtcProgram*) { return k_hiprtc_success; };
  api.compile_program = [](HiprtcProgram, int, const char**) {
    ++g_fake_calls;
    return k_hiprtc_success;
  };
  api.get_program_log_size = [](HiprtcProgram, size_t* size) {
    *size = 1;
    return k_hiprtc_success;
  };
  api.get_program_log = [](HiprtcProgram, char* log) {
    *log = '\0';
    return k_hiprtc_success;
  };
  api.get_code_size = [](HiprtcProgram, size_t* size) {
    *size = g_fake_code.size();
    return k_hiprtc_success;
  };
  api.get_code = [](HiprtcProgram, char* code) {
    std::memcpy(code, g_fake_code.data(), g_fake_code.size());
    return k_hiprtc_success;
  };
  return api;
}

TEST(HipStage, MalformedProcessorsAreRefusedBeforeHiprtcIsCalled) {
  const HiprtcApi api = fake_api();
  for (const char* processor :
       {"", "gfx", "sm_90", "GFX90A", "gfx90a:xnack+", "gfx90a --save-temps", "gfx90g", "xgfx90a", "gfx90a\n"}) {
    HipCompileRequest request = request_for("", processor);
    request.allowed_processors.clear();
    g_fake_calls = 0;
    auto result = compile_hip_to_hsaco(api, request);
    ASSERT_FALSE(result.ok()) << processor;
    EXPECT_EQ(result.error().code, ErrorCode::invalid_argument) << processor;
    EXPECT_EQ(g_fake_calls, 0) << processor;
  }
}

TEST(HipStage, ProcessorsOutsideTheAllowlistAreRefusedBeforeHiprtcIsCalled) {
  const HiprtcApi api = fake_api();
  g_fake_code = std::string("\177ELF", 4) + std::string(60, '\0');
  for (const char* processor : {"gfx942", "gfx1100", "gfx9999"}) {
    g_fake_calls = 0;
    auto result = compile_hip_to_hsaco(api, request_for("", processor));
    ASSERT_FALSE(result.ok()) << processor;
    EXPECT_EQ(result.error().code, ErrorCode::invalid_argument) << processor;
    EXPECT_NE(result.error().message.find(processor), std::string::npos) << result.error().message;
    EXPECT_EQ(g_fake_calls, 0) << processor;
  }
  g_fake_calls = 0;
  auto allowed = compile_hip_to_hsaco(api, request_for("", "gfx908"));
  ASSERT_TRUE(allowed.ok()) << allowed.error().message;
  EXPECT_EQ(allowed->hsaco, g_fake_code);
  EXPECT_EQ(g_fake_calls, 2);
}

TEST(HipStage, OptionsChoosingAnotherProcessorAreRefusedBeforeHiprtcIsCalled) {
  const HiprtcApi api = fake_api();
  for (const char* option : {"--offload-arch=gfx942", "--gpu-architecture=gfx1100", "-mcpu=gfx942", "-march=gfx942"}) {
    HipCompileRequest request = request_for("", "gfx90a");
    request.options = {"-O3", option};
    g_fake_calls = 0;
    auto result = compile_hip_to_hsaco(api, request);
    ASSERT_FALSE(result.ok()) << option;
    EXPECT_EQ(result.error().code, ErrorCode::invalid_argument) << option;
    EXPECT_EQ(g_fake_calls, 0) << option;
  }
}

// An offload bundle as clang-offload-bundler lays it out.
std::string offload_bundle(const std::vector<std::pair<std::string, std::string>>& entries) {
  const auto u64 = [](uint64_t value) { return std::string(reinterpret_cast<const char*>(&value), sizeof value); };
  size_t header_size = 24 + 8;
  for (const auto& [id, content] : entries) header_size += 24 + id.size();
  std::string header = "__CLANG_OFFLOAD_BUNDLE__" + u64(entries.size()), contents;
  for (const auto& [id, content] : entries) {
    header += u64(header_size + contents.size()) + u64(content.size()) + u64(id.size()) + id;
    contents += content;
  }
  return header + contents;
}

TEST(HipStage, TakesTheProcessorsCodeObjectOutOfAnOffloadBundle) {
  const std::string gfx908 = std::string("\177ELF", 4) + "gfx908 object";
  const std::string gfx90a = std::string("\177ELF", 4) + "gfx90a object";
  const std::string bundle = offload_bundle({{"host-x86_64-unknown-linux", ""},
                                             {"hipv4-amdgcn-amd-amdhsa--gfx908", gfx908},
                                             {"hipv4-amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-", gfx90a}});
  auto object = extract_code_object(bundle, "gfx90a");
  ASSERT_TRUE(object.ok()) << object.error().message;
  EXPECT_EQ(*object, gfx90a);
  object = extract_code_object(bundle, "gfx908");
  ASSERT_TRUE(object.ok()) << object.error().message;
  EXPECT_EQ(*object, gfx908);

  auto missing = extract_code_object(bundle, "gfx1030");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::internal);
  auto truncated = extract_code_object(bundle.substr(0, 60), "gfx90a");
  ASSERT_FALSE(truncated.ok());
  EXPECT_EQ(truncated.error().code, ErrorCode::internal);

  EXPECT_EQ(*extract_code_object(gfx908, "gfx908"), gfx908);
  EXPECT_FALSE(extract_code_object("MZ not elf", "gfx908").ok());
}

// --- real compiles -----------------------------------------------------------

TEST(HipCompile, SharedMemoryKernelBecomesAnAmdgpuCodeObjectForGfx90a) {
  SKIP_WITHOUT_HIPRTC();
  ChildCompile compile = compile_in_child(request_for(k_shared_memory_kernel));
  ASSERT_TRUE(compile.ok) << compile.message;
  const std::string& hsaco = compile.out.hsaco;
  ASSERT_GE(hsaco.size(), 64u);
  EXPECT_EQ(hsaco.substr(0, 4), std::string("\177ELF", 4));
  EXPECT_EQ(elf_machine(hsaco), k_em_amdgpu);
  EXPECT_EQ(elf_flags(hsaco) & 0xff, k_mach_gfx90a);
  EXPECT_NE(hsaco.find("reverse"), std::string::npos);
  std::cout << "gfx90a compile of the 32 KiB __shared__ kernel: " << compile.compile_seconds
            << " s (loading HIPRTC: " << compile.load_seconds << " s), " << hsaco.size() << " bytes\n";
}

TEST(HipCompile, EachAllowedProcessorGetsItsOwnCodeObject) {
  SKIP_WITHOUT_HIPRTC();
  for (const auto& [processor, mach] :
       std::vector<std::pair<std::string, uint32_t>>{{"gfx908", k_mach_gfx908}, {"gfx1030", k_mach_gfx1030}}) {
    ChildCompile compile = compile_in_child(request_for(k_shared_memory_kernel, processor));
    ASSERT_TRUE(compile.ok) << processor << ": " << compile.message;
    EXPECT_EQ(elf_machine(compile.out.hsaco), k_em_amdgpu) << processor;
    EXPECT_EQ(elf_flags(compile.out.hsaco) & 0xff, mach) << processor;
  }
}

TEST(HipCompile, HeadersGivenInTheRequestAreIncluded) {
  SKIP_WITHOUT_HIPRTC();
  const std::map<std::string, std::string> headers{{"kjit_scale.h", "constexpr float kjit_scale_factor = 3.0f;\n"}};
  constexpr const char* source = R"(
#include "kjit_scale.h"
extern "C" __global__ void scale(float* x) { x[threadIdx.x] *= kjit_scale_factor; }
)";
  HipCompileRequest request = request_for(source);
  request.headers = &headers;
  ChildCompile with = compile_in_child(request);
  ASSERT_TRUE(with.ok) << with.message;
  EXPECT_EQ(with.out.hsaco.substr(0, 4), std::string("\177ELF", 4));

  request.headers = nullptr;
  ChildCompile without = compile_in_child(request);
  ASSERT_FALSE(without.ok);
  EXPECT_EQ(without.code, ErrorCode::invalid_argument) << without.message;
  EXPECT_NE(without.message.find("k.hip:2:10: fatal error: 'kjit_scale.h' file not found"), std::string::npos)
      << without.message;
}

TEST(HipCompile, NameExpressionOfATemplateKernelGetsItsLoweredName) {
  SKIP_WITHOUT_HIPRTC();
  constexpr const char* source = R"(
template <typename T>
__global__ void scale(T* x, T factor) { x[threadIdx.x] *= factor; }
)";
  HipCompileRequest request = request_for(source);
  request.name_expressions = {"scale<float>"};
  ChildCompile compile = compile_in_child(request);
  ASSERT_TRUE(compile.ok) << compile.message;
  ASSERT_EQ(compile.out.lowered_names.count("scale<float>"), 1u);
  const std::string& lowered = compile.out.lowered_names.at("scale<float>");
  EXPECT_EQ(lowered, "_Z5scaleIfEvPT_S0_");
  EXPECT_NE(compile.out.hsaco.find(lowered), std::string::npos) << "the kernel symbol is in the code object";
}

// __FILE__ is the request's name, as NVRTC makes it: the same request gives
// the same bytes from one compile to the next (comgr's scratch copy has a
// new random directory each time), and no worker's directory is written
// into the code object.
TEST(HipCompile, FileIsTheRequestsNameSoTheSameRequestGivesTheSameBytes) {
  SKIP_WITHOUT_HIPRTC();
  constexpr const char* source = R"(
extern "C" __device__ const char kjit_file[] = __FILE__;
extern "C" __global__ void where(char* out, int i) { out[0] = kjit_file[i]; }
)";
  HipCompileRequest request = request_for(source);
  request.name = "kernels/where.hip";
  ChildCompile first = compile_in_child(request);
  ChildCompile second = compile_in_child(request);
  ASSERT_TRUE(first.ok) << first.message;
  ASSERT_TRUE(second.ok) << second.message;
  EXPECT_TRUE(first.out.hsaco == second.out.hsaco) << "two compiles of one request gave different code objects";
  EXPECT_NE(first.out.hsaco.find("kernels/where.hip"), std::string::npos);
  EXPECT_EQ(first.out.hsaco.find("CompileSource"), std::string::npos) << "comgr's scratch path is in the code object";

  request.name = "other.hip";
  ChildCompile renamed = compile_in_child(request);
  ASSERT_TRUE(renamed.ok) << renamed.message;
  EXPECT_NE(renamed.out.hsaco.find("other.hip"), std::string::npos);
  EXPECT_FALSE(renamed.out.hsaco == first.out.hsaco);
}

TEST(HipCompile, SyntaxErrorIsInvalidArgumentCarryingTheDiagnostic) {
  SKIP_WITHOUT_HIPRTC();
  constexpr const char* source = R"(
extern "C" __global__ void broken(float* x) { x[threadIdx.x] = kjit_undeclared_thing; }
)";
  ChildCompile compile = compile_in_child(request_for(source));
  ASSERT_FALSE(compile.ok);
  EXPECT_EQ(compile.code, ErrorCode::invalid_argument);
  EXPECT_NE(compile.message.find("kjit_undeclared_thing"), std::string::npos) << compile.message;
  EXPECT_NE(compile.message.find("k.hip:2:"), std::string::npos)
      << "the source's name, not comgr's scratch copy: " << compile.message;
  EXPECT_EQ(compile.message.find("comgr-"), std::string::npos) << compile.message;
}

}  // namespace
}  // namespace kjit
