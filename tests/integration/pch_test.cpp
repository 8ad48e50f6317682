// Precompiled headers in the workers change how fast a miss compiles, never
// what it compiles: families of kernels sharing their includes (CUB,
// cuda_fp16/bf16 with cooperative_groups, cuda::std with cuda/barrier) give
// the same cubin bytes and kernels from a worker whose PCHs are warm as from
// a daemon without PCH, and a header of the request that changes is never
// served from an earlier request's PCH. A worker writes a header set's PCH
// at its first compile of the set and uses it from the second on, and the daemon sends a
// compile to the ready worker that compiled its header set, never making it
// wait while another is ready. A PCH of one tenant's own headers never
// serves another tenant; one of toolkit headers alone serves everyone.
#include <gtest/gtest.h>

#include <fstream>
#include <future>
#include <map>
#include <string>
#include <vector>

#include "kjit/client.h"
#include "pipeline/cache_key.h"
#include "support/daemon_test.h"
#include "support/eventually.h"
#include "support/loopback.h"
#include "support/metrics_scrape.h"
#include "temp_dir.h"

namespace kjit::test {
namespace {

struct Kernel {
  std::string name;
  std::string source;
  std::map<std::string, std::string> headers = {};
};

std::string cub_kernel(int i) {
  const std::string n = std::to_string(i);
  return "#include <cub/block/block_reduce.cuh>\n"
         "#include <cub/block/block_scan.cuh>\n"
         "struct Larger { __device__ int operator()(int a, int b) const { return a > b ? a : b; } };\n"
         "extern \"C\" __global__ void cub_" + n + "(const int* in, int* out) {\n"
         "  using R = cub::BlockReduce<int, 128>;\n"
         "  using S = cub::BlockScan<int, 128>;\n"
         "  __shared__ union { typename R::TempStorage r; typename S::TempStorage s; } t;\n"
         "  int v = in[blockIdx.x * 128 + threadIdx.x] * " + n + ";\n"
         "  int p; S(t.s).ExclusiveSum(v, p);\n"
         "  __syncthreads();\n"
         "  int s = R(t.r)." + (i % 2 ? "Sum(p)" : "Reduce(p, Larger())") + ";\n"
         "  if (threadIdx.x == 0) out[blockIdx.x] = s + " + n + ";\n"
         "}\n";
}

std::string half_kernel(int i) {
  const std::string n = std::to_string(i);
  return "#include <cuda_fp16.h>\n"
         "#include <cuda_bf16.h>\n"
         "#include <cooperative_groups.h>\n"
         "#include <cooperative_groups/reduce.h>\n"
         "namespace cg = cooperative_groups;\n"
         "extern \"C\" __global__ void half_" + n + "(const __half* a, const __nv_bfloat16* b, float* out) {\n"
         "  auto tile = cg::tiled_partition<32>(cg::this_thread_block());\n"
         "  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
         "  float v = __half2float(a[i]) * " + n + ".0f + __bfloat162float(b[i]);\n"
         "  float s = cg::reduce(tile, v, cg::plus<float>());\n"
         "  if (tile.thread_rank() == 0) out[i / 32] = s;\n"
         "}\n";
}

std::string barrier_kernel(int i) {
  const std::string n = std::to_string(i);
  return "#include <cuda/std/array>\n"
         "#include <cuda/std/type_traits>\n"
         "#include <cuda/barrier>\n"
         "template <typename T> __device__ T twice(T v) { return cuda::std::is_integral_v<T> ? v * 2 : v; }\n"
         "extern \"C\" __global__ void barrier_" + n + "(int* out) {\n"
         "  __shared__ cuda::barrier<cuda::thread_scope_block>* bar;\n"
         "  __shared__ char storage[sizeof(cuda::barrier<cuda::thread_scope_block>)];\n"
         "  if (threadIdx.x == 0) { bar = reinterpret_cast<cuda::barrier<cuda::thread_scope_block>*>(storage);\n"
         "    init(bar, blockDim.x); }\n"
         "  __syncthreads();\n"
         "  cuda::std::array<int, 4> a{" + n + ", 2, 3, 4};\n"
         "  bar->arrive_and_wait();\n"
         "  out[threadIdx.x] = twice(a[threadIdx.x % 4]);\n"
         "}\n";
}

// One source whose request header says what it computes.
Kernel header_kernel(int value) {
  return {"with_header",
          "#include <cub/block/block_reduce.cuh>\n"
          "#include \"params.h\"\n"
          "extern \"C\" __global__ void with_header(int* out) { out[threadIdx.x] = PARAM_VALUE + param(); }\n",
          {{"params.h", "#define PARAM_VALUE " + std::to_string(value) + "\n__device__ int param() { return " +
                            std::to_string(value * 7) + "; }\n"}}};
}

// Three of each family: the first writes the PCH, the second and third use
// it. params.h's two texts are two header sets, each compiled twice in
// turn, and the first again once the second's PCH is written.
std::vector<Kernel> families() {
  std::vector<Kernel> out;
  for (int i = 1; i <= 3; ++i) out.push_back({"cub_" + std::to_string(i), cub_kernel(i)});
  for (int i = 1; i <= 3; ++i) out.push_back({"half_" + std::to_string(i), half_kernel(i)});
  for (int i = 1; i <= 3; ++i) out.push_back({"barrier_" + std::to_string(i), barrier_kernel(i)});
  for (int value : {1111, 1111, 2222, 2222, 1111}) out.push_back(header_kernel(value));
  return out;
}

double pch_events(uint16_t port, const std::string& event) {
  return metric_total(scrape_metrics(port), "kjit_worker_pch_total", {{"event", event}});
}

// `token`: a tenant's; empty, the socket's default.
Result<CompileResult> compile(const std::string& socket, const Kernel& kernel, const std::string& token = {}) {
  CompileRequest request;
  request.input = kernel.source;
  request.input_name = "family.cu";  // one name: NVRTC names its PCH files after it
  request.target = "cuda:90";
  request.options = {"-std=c++17"};
  request.headers = kernel.headers;
  ClientOptions options;
  options.token = token;
  return Client(socket, options).compile(request);
}

TEST(WorkerPch, WarmPrecompiledHeadersGiveTheSameCubinsAsNone) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  const uint16_t port = free_loopback_port();
  ASSERT_NE(port, 0);
  // One worker each, no cache: every request compiles, in the same worker.
  TestDaemon with_pch({"--no-cache", "--compile-workers", "1", "--metrics-port", std::to_string(port)});
  TestDaemon without({"--no-cache", "--compile-workers", "1", "--no-pch"});
  for (const Kernel& kernel : families()) {
    SCOPED_TRACE(kernel.name);
    auto warm = compile(with_pch.socket_path(), kernel);
    ASSERT_TRUE(warm) << warm.error().message << "\n" << warm.error().log;
    auto plain = compile(without.socket_path(), kernel);
    ASSERT_TRUE(plain) << plain.error().message << "\n" << plain.error().log;
    EXPECT_TRUE(warm->artifact == plain->artifact) << "the cubins differ (" << warm->artifact.size() << " and "
                                                    << plain->artifact.size() << " bytes)";
    EXPECT_EQ(warm->kernels, plain->kernels);
    EXPECT_EQ(warm->lowered_names, plain->lowered_names);
    EXPECT_EQ(warm->key, plain->key);
    // The compiler's own warnings stay; automatic PCH's messages are not the request's.
    EXPECT_EQ(warm->log, plain->log);
    EXPECT_EQ(warm->log.find("precompiled header"), std::string::npos) << warm->log;
  }
  const std::string text = scrape_metrics(port);
  // Five header sets (three families, two params.h texts), each writing
  // its PCH at its first compile; the second and third cub, half and
  // barrier kernels, the second params.h 1111 and 2222 and the last 1111
  // use theirs.
  EXPECT_EQ(metric_total(text, "kjit_worker_pch_total", {{"event", "first"}}), 5) << text;
  EXPECT_EQ(metric_total(text, "kjit_worker_pch_total", {{"event", "create"}}), 5) << text;
  EXPECT_EQ(metric_total(text, "kjit_worker_pch_total", {{"event", "hit"}}), 9) << text;
  EXPECT_EQ(metric_total(text, "kjit_worker_pch_total", {{"event", "fallback"}}), 0) << text;
}

// A worker's first compile of a header set writes its PCH, so that its
// second compile of the set already uses it; another set writes its own.
TEST(WorkerPch, TheFirstCompileOfAHeaderSetWritesItsPchTheSecondUsesIt) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  const uint16_t port = free_loopback_port();
  ASSERT_NE(port, 0);
  // With a cache (each kernel is new: every compile misses), so that
  // `kjit cache stats` answers too.
  TestDaemon daemon({"--compile-workers", "1", "--metrics-port", std::to_string(port)});
  auto step = [&](const Kernel& kernel, double first, double create, double hit) {
    SCOPED_TRACE(kernel.name);
    auto ok = compile(daemon.socket_path(), kernel);
    ASSERT_TRUE(ok) << ok.error().message << "\n" << ok.error().log;
    // The pool adds a compile's counts before the compile answers.
    EXPECT_EQ(pch_events(port, "first"), first);
    EXPECT_EQ(pch_events(port, "create"), create);
    EXPECT_EQ(pch_events(port, "hit"), hit);
  };
  step({"cub_1", cub_kernel(1)}, 1, 1, 0);
  step({"cub_2", cub_kernel(2)}, 1, 1, 1);
  step({"cub_3", cub_kernel(3)}, 1, 1, 2);
  step({"barrier_1", barrier_kernel(1)}, 2, 2, 2);
  step({"cub_4", cub_kernel(4)}, 2, 2, 3);
  // Two PCHs (CUB's and cuda::std's), each above 50 MB, in the worker's
  // private directory, within the default bound.
  const double bytes = metric_total(scrape_metrics(port), "kjit_worker_pch_bytes", {});
  EXPECT_GT(bytes, 100e6);
  EXPECT_LE(bytes, 1073741824.0);
  // The operator's `kjit cache stats` says the same.
  Result<CacheStats> stats = Client(daemon.socket_path()).cache_stats();
  ASSERT_TRUE(stats) << stats.error().message;
  EXPECT_EQ(stats->pch.firsts, 2u);
  EXPECT_EQ(stats->pch.creations, 2u);
  EXPECT_EQ(stats->pch.hits, 3u);
  EXPECT_EQ(stats->pch.fallbacks, 0u);
  EXPECT_GT(stats->pch.bytes, 100'000'000u);
}

// Two tenants sending byte-identical request headers do not share a PCH of
// them: the second tenant's compiles start the set over in its own
// namespace (a first compile writing its own PCH), where sharing would have
// made both a hit, and told it, by the speed, that another tenant sent the
// same headers. The first tenant's PCH still serves the first tenant, and a
// set of toolkit headers alone is one for both.
TEST(WorkerPch, TwoTenantsWithTheSameRequestHeadersDoNotShareItsPch) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  const uint16_t port = free_loopback_port();
  ASSERT_NE(port, 0);
  TempDir temp;
  const std::string tenants = temp.path() + "/tenants.toml";
  std::ofstream(tenants) << "[[tenants]]\nname = \"alpha\"\ntoken_sha256 = \"" << sha256_hex("alpha-pch-token")
                         << "\"\nnamespace = \"team-a\"\n"
                         << "[[tenants]]\nname = \"beta\"\ntoken_sha256 = \"" << sha256_hex("beta-pch-token")
                         << "\"\nnamespace = \"team-b\"\n";
  // One worker, no cache: every request compiles, in the same worker.
  TestDaemon daemon({"--no-cache", "--compile-workers", "1", "--tenants", tenants, "--metrics-port",
                     std::to_string(port)});
  auto step = [&](const std::string& token, const Kernel& kernel, double first, double create, double hit) {
    SCOPED_TRACE(token + " " + kernel.name);
    auto ok = compile(daemon.socket_path(), kernel, token);
    ASSERT_TRUE(ok) << ok.error().message << "\n" << ok.error().log;
    EXPECT_EQ(pch_events(port, "first"), first);
    EXPECT_EQ(pch_events(port, "create"), create);
    EXPECT_EQ(pch_events(port, "hit"), hit);
  };
  step("alpha-pch-token", header_kernel(1111), 1, 1, 0);
  step("alpha-pch-token", header_kernel(1111), 1, 1, 1);
  step("beta-pch-token", header_kernel(1111), 2, 2, 1);
  step("beta-pch-token", header_kernel(1111), 2, 2, 2);
  step("alpha-pch-token", header_kernel(1111), 2, 2, 3);
  step("alpha-pch-token", {"cub_1", cub_kernel(1)}, 3, 3, 3);
  step("beta-pch-token", {"cub_2", cub_kernel(2)}, 3, 3, 4);
}

// With two workers ready, each of two header sets compiled in turn keeps to
// the worker that compiled it first: compiled in pairs at once, the sets
// find their own worker's PCH from the second round on. Sent to whichever
// worker was ready last, half the pairs would cross over and start over
// (a first compile of the set in the other worker).
TEST(WorkerAffinity, TwoHeaderSetsCompiledInTurnKeepToTheirWorkers) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  const uint16_t port = free_loopback_port();
  ASSERT_NE(port, 0);
  TestDaemon daemon({"--no-cache", "--compile-workers", "2", "--metrics-port", std::to_string(port)});
  Client client(daemon.socket_path());
  ASSERT_TRUE(eventually([&] {
    Result<DaemonStatus> status = client.status();
    return status && status->ready_workers == 2;
  })) << "the daemon did not start its two workers";
  for (int round = 1; round <= 4; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    auto half = std::async(std::launch::async, [&] {
      return compile(daemon.socket_path(), {"half", half_kernel(round)});
    });
    auto barrier = compile(daemon.socket_path(), {"barrier", barrier_kernel(round)});
    auto other = half.get();
    ASSERT_TRUE(barrier) << barrier.error().message << "\n" << barrier.error().log;
    ASSERT_TRUE(other) << other.error().message << "\n" << other.error().log;
  }
  const std::string text = scrape_metrics(port);
  EXPECT_EQ(metric_total(text, "kjit_worker_pch_total", {{"event", "first"}}), 2) << text;
  EXPECT_EQ(metric_total(text, "kjit_worker_pch_total", {{"event", "create"}}), 2) << text;
  EXPECT_EQ(metric_total(text, "kjit_worker_pch_total", {{"event", "hit"}}), 6) << text;
}

// Affinity never makes a compile wait: the worker that compiled a header
// set is busy with it, so the set's next compile, sent at the same time,
// goes to the other ready worker (its first compile of the set there)
// instead of waiting to use the busy one's PCH.
TEST(WorkerAffinity, ACompileNeverWaitsForItsWorkerWhileAnotherIsReady) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  const uint16_t port = free_loopback_port();
  ASSERT_NE(port, 0);
  TestDaemon daemon({"--no-cache", "--compile-workers", "2", "--metrics-port", std::to_string(port)});
  Client client(daemon.socket_path());
  ASSERT_TRUE(eventually([&] {
    Result<DaemonStatus> status = client.status();
    return status && status->ready_workers == 2;
  })) << "the daemon did not start its two workers";
  auto first = compile(daemon.socket_path(), {"cub_1", cub_kernel(1)});
  ASSERT_TRUE(first) << first.error().message << "\n" << first.error().log;
  auto second = std::async(std::launch::async, [&] { return compile(daemon.socket_path(), {"cub_2", cub_kernel(2)}); });
  auto third = compile(daemon.socket_path(), {"cub_3", cub_kernel(3)});
  auto other = second.get();
  ASSERT_TRUE(third) << third.error().message << "\n" << third.error().log;
  ASSERT_TRUE(other) << other.error().message << "\n" << other.error().log;
  const std::string text = scrape_metrics(port);
  // One of the two went to the worker that compiled cub_1 (and wrote the
  // PCH) and used it, the other to the second worker, new to the set, which
  // wrote its own. Had it waited for the first worker, it would have used
  // that PCH: one first, one create, two hits.
  EXPECT_EQ(metric_total(text, "kjit_worker_pch_total", {{"event", "first"}}), 2) << text;
  EXPECT_EQ(metric_total(text, "kjit_worker_pch_total", {{"event", "create"}}), 2) << text;
  EXPECT_EQ(metric_total(text, "kjit_worker_pch_total", {{"event", "hit"}}), 1) << text;
}

// A worker's PCH files stay within pch_bytes: a bound smaller than one PCH
// evicts each after the compile that wrote it, so every compile writes
// one again, and every compile still succeeds.
TEST(WorkerPch, ABoundSmallerThanOnePchEvictsAndCompilesGoOn) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  const uint16_t port = free_loopback_port();
  ASSERT_NE(port, 0);
  TestDaemon daemon({"--no-cache", "--compile-workers", "1", "--pch-bytes", "1048576", "--metrics-port",
                     std::to_string(port)});
  for (int i = 1; i <= 3; ++i) {
    auto ok = compile(daemon.socket_path(), {"cub", cub_kernel(i)});
    ASSERT_TRUE(ok) << ok.error().message << "\n" << ok.error().log;
  }
  const std::string text = scrape_metrics(port);
  EXPECT_EQ(metric_total(text, "kjit_worker_pch_total", {{"event", "first"}}), 1) << text;
  EXPECT_EQ(metric_total(text, "kjit_worker_pch_total", {{"event", "create"}}), 3) << text;
  EXPECT_EQ(metric_total(text, "kjit_worker_pch_total", {{"event", "evict"}}), 3) << text;
  EXPECT_LE(metric_total(text, "kjit_worker_pch_bytes", {}), 1048576.0) << text;
  EXPECT_EQ(metric_total(text, "kjit_worker_pch_total", {{"event", "hit"}}), 0) << text;
}

}  // namespace
}  // namespace kjit::test
