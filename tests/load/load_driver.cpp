// kjit_load_driver: mixed compile load against a running kjitd, for the load
// and fault tests (tests/load/run.py). N clients, each its own connection
// with one call in flight, all on one completion queue (the shape of
// bench/async_load), so the driver stays cheap on a small machine. Each call
// is a hit (one of a few kernels compiled first), a miss (a kernel no one
// compiled before) or a bad input; what came back is judged per call and the
// run ends with one JSON summary on stdout.
//
// It speaks the wire API directly rather than through kjit::Client: the
// summary counts errors by their exact gRPC code, and some bad inputs (enum
// values the wire allows and kjit does not know) cannot be spelled through
// the C++ client's types.
//
// Other modes, for the fault scenarios:
//   --once FILE       one compile of FILE; JSON with the code, cache source, key
//   --replay JOURNAL  recompile every miss a load run's journal says it issued
#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "async_load.h"
#include "convert/wire_convert.h"
#include "kjit/client.h"
#include "kjit/v1/compiler.grpc.pb.h"

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

std::atomic<bool> g_stop{false};

enum class Kind { hit, miss, bad };
constexpr const char* k_kind_names[] = {"hit", "miss", "bad"};

const char* code_name(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::UNKNOWN:
      return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED:
      return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS:
      return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    default:
      return "UNRECOGNISED";
  }
}

std::string trailer(const grpc::ClientContext& context, const char* key) {
  const auto& trailers = context.GetServerTrailingMetadata();
  auto it = trailers.find(key);
  return it == trailers.end() ? std::string() : std::string(it->second.data(), it->second.size());
}

std::string target_of(const std::string& socket, const std::string& address) {
  return socket.empty() ? address : "unix:" + socket;
}

std::shared_ptr<grpc::Channel> channel_to(const std::string& target, int index) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(INT32_MAX);
  // A distinct argument per channel keeps gRPC from sharing one connection
  // between them: each client is its own connection, as in bench/async_load.
  args.SetInt("kjit.load.channel", index);
  return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
}

kjit::v1::CompileRequest cuda_request(const std::string& source, const std::string& name, const std::string& target) {
  kjit::v1::CompileRequest request;
  request.mutable_input()->set_kind(kjit::v1::INPUT_KIND_CUDA_SOURCE);
  request.mutable_input()->set_data(source);
  request.mutable_input()->set_name(name);
  request.set_target(target);
  return request;
}

// The fixed kernels that hits ask for; compiled once before the run.
kjit::v1::CompileRequest hit_request(int index, const std::string& target) {
  const std::string n = std::to_string(index);
  return cuda_request("// kjit load test: hit kernel " + n + "\nextern \"C\" __global__ void load_hit_" + n +
                          "(const float* a, float* b, int n) {\n"
                          "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                          "  if (i < n) b[i] = a[i] * " +
                          n + ".5f + 1.0f;\n}\n",
                      "load_hit_" + n + ".cu", target);
}

// A kernel no one compiled before: its name and a constant carry the run's
// seed and the miss's number, so its key is new and the compile is small.
kjit::v1::CompileRequest miss_request(uint64_t seed, uint64_t id, const std::string& target) {
  const std::string tag = std::to_string(seed) + "_" + std::to_string(id);
  return cuda_request("// kjit load test: miss " + tag + "\n#define LOAD_MISS_ID " + std::to_string(id) +
                          "\nextern \"C\" __global__ void load_miss_" + tag +
                          "(float* x, int n) {\n"
                          "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                          "  if (i < n) x[i] = x[i] * (float)LOAD_MISS_ID + " +
                          std::to_string(seed % 1000) + ".0f;\n}\n",
                      "load_miss_" + tag + ".cu", target);
}

// A request the daemon must refuse, and how.
struct BadInput {
  std::string name;
  kjit::v1::CompileRequest request;
  grpc::StatusCode expected;
  bool compiler_log = false;  // a compiler ran, so the refusal must carry its log
};

std::vector<BadInput> bad_inputs(const std::string& target) {
  std::vector<BadInput> out;
  const std::string ok_source = "extern \"C\" __global__ void k(float* x) { x[threadIdx.x] = 1.0f; }\n";
  out.push_back({"syntax_error",
                 cuda_request("extern \"C\" __global__ void broken(float* x) { x[0] = ; }\n", "broken.cu", target),
                 grpc::StatusCode::INVALID_ARGUMENT, true});
  out.push_back({"undeclared_identifier",
                 cuda_request("extern \"C\" __global__ void undeclared(float* x) { x[0] = no_such_thing; }\n",
                              "undeclared.cu", target),
                 grpc::StatusCode::INVALID_ARGUMENT, true});
  out.push_back({"unknown_target", cuda_request(ok_source, "k.cu", "cuda:12345"), grpc::StatusCode::INVALID_ARGUMENT});
  out.push_back({"malformed_target", cuda_request(ok_source, "k.cu", "opencl:7"), grpc::StatusCode::INVALID_ARGUMENT});
  out.push_back({"empty_source", cuda_request("", "empty.cu", target), grpc::StatusCode::INVALID_ARGUMENT});
  {
    BadInput b{"refused_option", cuda_request(ok_source, "k.cu", target), grpc::StatusCode::INVALID_ARGUMENT};
    b.request.add_options("--include-path=/etc");
    out.push_back(std::move(b));
  }
  {
    BadInput b{"unknown_option", cuda_request(ok_source, "k.cu", target), grpc::StatusCode::INVALID_ARGUMENT};
    b.request.add_options("--no-such-option-at-all");
    out.push_back(std::move(b));
  }
  {
    // Over [limits] max_options (256): a size bound, which kjit answers
    // RESOURCE_EXHAUSTED like every size bound.
    BadInput b{"oversized_option_list", cuda_request(ok_source, "k.cu", target), grpc::StatusCode::RESOURCE_EXHAUSTED};
    for (int i = 0; i < 300; ++i) b.request.add_options("-DLOAD_OPTION_" + std::to_string(i) + "=1");
    out.push_back(std::move(b));
  }
  {
    BadInput b{"unknown_input_kind", cuda_request(ok_source, "k.cu", target), grpc::StatusCode::INVALID_ARGUMENT};
    b.request.mutable_input()->set_kind(static_cast<kjit::v1::InputKind>(42));
    out.push_back(std::move(b));
  }
  {
    BadInput b{"unknown_artifact_kind", cuda_request(ok_source, "k.cu", target), grpc::StatusCode::INVALID_ARGUMENT};
    b.request.set_artifact(static_cast<kjit::v1::ArtifactKind>(99));
    out.push_back(std::move(b));
  }
  out.push_back({"absolute_include", cuda_request("#include \"/etc/passwd\"\n" + ok_source, "include.cu", target),
                 grpc::StatusCode::INVALID_ARGUMENT});
  {
    BadInput b{"bad_ptx", cuda_request(".version 8.0\n.target sm_90\nthis is not ptx;\n", "bad.ptx", target),
               grpc::StatusCode::INVALID_ARGUMENT, true};
    b.request.mutable_input()->set_kind(kjit::v1::INPUT_KIND_PTX);
    out.push_back(std::move(b));
  }
  {
    BadInput b{"unknown_pass_argument", cuda_request(ok_source, "k.cu", target), grpc::StatusCode::INVALID_ARGUMENT};
    (*b.request.mutable_pass_args())["no-such-pass.key"] = "1";
    out.push_back(std::move(b));
  }
  return out;
}

// Latencies and outcomes of one kind of call.
struct KindStats {
  std::vector<double> latencies_ms;
  uint64_t ok = 0;
  std::map<std::string, uint64_t> errors;  // gRPC code name -> count
  std::map<std::string, uint64_t> cache;   // the response's cache field -> count
};

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  const size_t index = std::min(values.size() - 1, static_cast<size_t>(p * static_cast<double>(values.size())));
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(index), values.end());
  return values[index];
}

struct Outcome {
  grpc::StatusCode code = grpc::StatusCode::OK;
  std::string message;
  std::string log;
  double ms = 0;
};

// One blocking compile, with the trailers the daemon puts on a refusal.
Outcome compile_once(kjit::v1::Compiler::Stub& stub, const kjit::v1::CompileRequest& request,
                     kjit::v1::CompileResponse& response, std::chrono::seconds timeout) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  const Clock::time_point start = Clock::now();
  grpc::Status status = stub.Compile(&context, request, &response);
  Outcome out;
  out.ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  out.code = status.error_code();
  out.message = status.error_message();
  if (std::string message = trailer(context, kjit::k_message_trailer); !message.empty()) out.message = message;
  out.log = trailer(context, kjit::k_log_trailer);
  return out;
}

struct LoadOptions {
  std::string socket, address, target = "cuda:90", journal;
  double duration_s = 10;
  int clients = 16;
  std::string mix = "80,15,5";
  uint64_t seed = 1;
  int hit_kernels = 4;
  int call_timeout_s = 300;
  double hit_burst_s = 0;
  bool stop_on_unavailable = false;
};

// One client: its connection and the call it has in flight.
struct Slot {
  std::unique_ptr<kjit::v1::Compiler::Stub> stub;
  std::unique_ptr<grpc::ClientContext> context;
  std::unique_ptr<grpc::ClientAsyncResponseReader<kjit::v1::CompileResponse>> reader;
  kjit::v1::CompileRequest miss;  // kept while its call is in flight
  kjit::v1::CompileResponse response;
  grpc::Status status;
  Kind kind = Kind::hit;
  size_t variant = 0;  // the hit kernel or the bad input
  uint64_t miss_id = 0;
  Clock::time_point started;
};

// The daemon's own account, through the C++ client: its worker pool (how
// many were started: a replaced worker counts) and its cache tiers.
json daemon_figures(const std::string& target) {
  json out = json::object();
  kjit::ClientOptions client_options;
  client_options.timeout = std::chrono::seconds(20);
  kjit::Client client(target, client_options);
  if (kjit::Result<kjit::DaemonStatus> status = client.status()) {
    out["workers"] = {
        {"max", status->max_workers}, {"live", status->live_workers}, {"started", status->workers_started}};
  } else {
    out["status_error"] = status.error().message;
  }
  if (kjit::Result<kjit::CacheStats> stats = client.cache_stats()) {
    json tiers = json::object();
    for (const kjit::CacheTierStats& t : stats->tiers)
      tiers[t.tier] = {{"hits", t.hits},     {"misses", t.misses},           {"puts", t.puts},
                       {"bytes", t.bytes},   {"entries", t.entries},         {"evictions", t.evictions},
                       {"errors", t.errors}, {"corruptions", t.corruptions}, {"skipped", t.skipped}};
    out["cache"] = {{"tiers", tiers}, {"lookups", stats->lookups}, {"compiles", stats->compiles}};
  } else {
    out["cache_error"] = stats.error().message;
  }
  return out;
}

int run_load(const LoadOptions& options) {
  const std::string target = target_of(options.socket, options.address);
  std::vector<double> weights;
  {
    std::stringstream mix(options.mix);
    std::string part;
    while (std::getline(mix, part, ',')) {
      char* end = nullptr;
      weights.push_back(std::strtod(part.c_str(), &end));
      if (part.empty() || *end != '\0') weights.push_back(-1);  // refused below
    }
  }
  if (weights.size() != 3 || weights[0] < 0 || weights[1] < 0 || weights[2] < 0 ||
      weights[0] + weights[1] + weights[2] <= 0) {
    std::cerr << "--mix takes three weights: hits,misses,bad (e.g. 80,15,5)\n";
    return 2;
  }
  std::mt19937_64 rng(options.seed);
  std::discrete_distribution<int> pick_kind(weights.begin(), weights.end());
  const std::vector<BadInput> bad = bad_inputs(options.target);
  std::vector<kjit::v1::CompileRequest> hits;
  for (int i = 0; i < options.hit_kernels; ++i) hits.push_back(hit_request(i, options.target));

  std::ofstream journal;
  if (!options.journal.empty()) {
    journal.open(options.journal, std::ios::trunc);
    journal << "seed " << options.seed << " target " << options.target << std::endl;
  }

  // The hit kernels are compiled before the clock starts: every later call
  // for them must be a hit.
  if (weights[0] > 0) {
    auto stub = kjit::v1::Compiler::NewStub(channel_to(target, -1));
    for (size_t i = 0; i < hits.size(); ++i) {
      kjit::v1::CompileResponse response;
      Outcome out = compile_once(*stub, hits[i], response, std::chrono::seconds(options.call_timeout_s));
      if (out.code != grpc::StatusCode::OK) {
        std::cerr << "kjit_load_driver: the hit kernel " << i << " did not compile: " << code_name(out.code) << ": "
                  << out.message << "\n";
        return 1;
      }
    }
  }

  std::vector<Slot> slots(static_cast<size_t>(options.clients));
  for (size_t i = 0; i < slots.size(); ++i)
    slots[i].stub = kjit::v1::Compiler::NewStub(channel_to(target, static_cast<int>(i)));
  KindStats stats[3];
  std::map<std::string, std::map<std::string, uint64_t>> bad_by_variant;  // name -> code -> count
  std::map<std::string, uint64_t> errors_by_code;
  uint64_t unexpected = 0;
  json unexpected_samples = json::array();
  uint64_t next_miss = 0;

  grpc::CompletionQueue cq;
  auto issue = [&](size_t i) {
    Slot& slot = slots[i];
    slot.kind = static_cast<Kind>(pick_kind(rng));
    slot.context = std::make_unique<grpc::ClientContext>();
    slot.context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(options.call_timeout_s));
    slot.response.Clear();
    const kjit::v1::CompileRequest* request = nullptr;
    switch (slot.kind) {
      case Kind::hit:
        slot.variant = rng() % hits.size();
        request = &hits[slot.variant];
        break;
      case Kind::miss:
        slot.miss_id = next_miss++;
        slot.miss = miss_request(options.seed, slot.miss_id, options.target);
        request = &slot.miss;
        // Written before the call goes out: a daemon killed meanwhile may
        // have stored the entry without answering.
        if (journal.is_open()) journal << "issue " << slot.miss_id << std::endl;
        break;
      case Kind::bad:
        slot.variant = rng() % bad.size();
        request = &bad[slot.variant].request;
        break;
    }
    slot.started = Clock::now();
    slot.reader = slot.stub->AsyncCompile(slot.context.get(), *request, &cq);
    slot.reader->Finish(&slot.response, &slot.status, reinterpret_cast<void*>(i));
  };
  auto note_unexpected = [&](const Slot& slot, const std::string& why) {
    ++unexpected;
    if (unexpected_samples.size() < 20)
      unexpected_samples.push_back({{"kind", k_kind_names[static_cast<int>(slot.kind)]},
                                    {"code", code_name(slot.status.error_code())},
                                    {"why", why},
                                    {"message", slot.status.error_message().substr(0, 600)}});
  };
  auto judge = [&](Slot& slot) {
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - slot.started).count();
    KindStats& s = stats[static_cast<int>(slot.kind)];
    s.latencies_ms.push_back(ms);
    const grpc::StatusCode code = slot.status.error_code();
    if (slot.status.ok()) {
      ++s.ok;
      ++s.cache[slot.response.cache()];
    } else {
      ++s.errors[code_name(code)];
      ++errors_by_code[code_name(code)];
    }
    if (slot.kind == Kind::miss && journal.is_open())
      journal << "done " << slot.miss_id << " " << code_name(code) << " "
              << (slot.status.ok() ? slot.response.cache() : "-") << " "
              << (slot.status.ok() ? slot.response.key() : "-") << std::endl;
    if (slot.kind != Kind::bad) {
      if (!slot.status.ok())
        note_unexpected(slot, "a valid request failed");
      else if (slot.response.artifact().empty())
        note_unexpected(slot, "an answer without an artifact");
      return;
    }
    const BadInput& b = bad[slot.variant];
    ++bad_by_variant[b.name][code_name(code)];
    if (slot.status.ok()) {
      note_unexpected(slot, "bad input " + b.name + " was compiled");
    } else if (code != b.expected) {
      note_unexpected(slot, "bad input " + b.name + " expected " + code_name(b.expected));
    } else if (b.compiler_log && trailer(*slot.context, kjit::k_log_trailer).empty()) {
      note_unexpected(slot, "bad input " + b.name + " refused without the compiler's log");
    }
  };

  const Clock::time_point start = Clock::now();
  const Clock::time_point end =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.duration_s));
  for (size_t i = 0; i < slots.size(); ++i) issue(i);
  size_t in_flight = slots.size();
  bool stopped_by_unavailable = false;
  while (in_flight > 0) {
    void* tag = nullptr;
    bool ok = false;
    const auto wait_until = std::chrono::system_clock::now() + std::chrono::milliseconds(200);
    const grpc::CompletionQueue::NextStatus next = cq.AsyncNext(&tag, &ok, wait_until);
    if (next == grpc::CompletionQueue::SHUTDOWN) break;
    if (next == grpc::CompletionQueue::TIMEOUT) continue;
    const size_t i = reinterpret_cast<size_t>(tag);
    --in_flight;
    judge(slots[i]);
    // A daemon killed on purpose: the calls still in flight are answered,
    // and none goes out to a socket no one serves.
    if (options.stop_on_unavailable && slots[i].status.error_code() == grpc::StatusCode::UNAVAILABLE)
      stopped_by_unavailable = true;
    const Clock::time_point now = Clock::now();
    if (now < end && !g_stop.load() && !stopped_by_unavailable) {
      issue(i);
      ++in_flight;
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  cq.Shutdown();
  {
    void* tag = nullptr;
    bool ok = false;
    while (cq.Next(&tag, &ok)) {
    }
  }

  json summary;
  uint64_t requests = 0;
  json kinds = json::object();
  for (int k = 0; k < 3; ++k) {
    const KindStats& s = stats[k];
    requests += s.latencies_ms.size();
    kinds[k_kind_names[k]] = {{"requests", s.latencies_ms.size()},
                              {"ok", s.ok},
                              {"rps", s.latencies_ms.size() / seconds},
                              {"p50_ms", percentile(s.latencies_ms, 0.50)},
                              {"p99_ms", percentile(s.latencies_ms, 0.99)},
                              {"max_ms", percentile(s.latencies_ms, 1.0)},
                              {"errors", s.errors},
                              {"cache", s.cache}};
  }
  summary["clients"] = options.clients;
  summary["seed"] = options.seed;
  summary["mix"] = {{"hit", weights[0]}, {"miss", weights[1]}, {"bad", weights[2]}};
  summary["seconds"] = seconds;
  summary["requests"] = requests;
  summary["rps"] = requests / seconds;
  summary["kinds"] = kinds;
  summary["errors_by_code"] = errors_by_code;
  summary["bad_inputs"] = bad_by_variant;
  summary["unexpected_errors"] = unexpected;
  summary["unexpected_samples"] = unexpected_samples;
  summary["misses_issued"] = next_miss;
  summary["stopped_by_signal"] = g_stop.load();
  summary["stopped_by_unavailable"] = stopped_by_unavailable;

  // Hits alone, with nothing else in the way: what the daemon sustains when
  // every call is a memory hit (bench/async_load's generator).
  if (options.hit_burst_s > 0 && !options.socket.empty() && !hits.empty() && !g_stop.load() &&
      !stopped_by_unavailable) {
    kjit::Result<kjit::bench::AsyncLoadResult> burst = kjit::bench::async_compile_load(
        options.socket, hits[0], options.clients, std::chrono::duration<double>(options.hit_burst_s),
        [](const kjit::v1::CompileResponse& r) -> kjit::Status {
          if (r.artifact().empty()) return kjit::make_error(kjit::ErrorCode::internal, "a hit without an artifact");
          return kjit::Ok{};
        });
    if (burst)
      summary["hit_burst"] = {{"rps", burst->completed / burst->seconds}, {"seconds", burst->seconds}};
    else {
      summary["hit_burst"] = {{"error", burst.error().message}};
      ++unexpected;
      summary["unexpected_errors"] = unexpected;
    }
  }
  if (!g_stop.load() && !stopped_by_unavailable) summary["daemon"] = daemon_figures(target);
  std::cout << summary.dump() << std::endl;
  return 0;
}

int run_once(const LoadOptions& options, const std::string& file, const std::vector<std::string>& compile_options,
             const std::vector<std::string>& name_expressions) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    std::cerr << "kjit_load_driver: cannot read " << file << "\n";
    return 2;
  }
  std::string source((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  kjit::v1::CompileRequest request = cuda_request(source, file.substr(file.rfind('/') + 1), options.target);
  if (file.ends_with(".ptx")) request.mutable_input()->set_kind(kjit::v1::INPUT_KIND_PTX);
  for (const std::string& o : compile_options) request.add_options(o);
  for (const std::string& n : name_expressions) request.add_name_expressions(n);
  const std::string target = target_of(options.socket, options.address);
  auto stub = kjit::v1::Compiler::NewStub(channel_to(target, 0));
  kjit::v1::CompileResponse response;
  Outcome out = compile_once(*stub, request, response, std::chrono::seconds(options.call_timeout_s));
  std::cout << json{{"code", code_name(out.code)},
                    {"message", out.message.substr(0, 4000)},
                    {"log_bytes", out.log.size()},
                    {"log_tail", out.log.size() > 2000 ? out.log.substr(out.log.size() - 2000) : out.log},
                    {"ms", out.ms},
                    {"cache", response.cache()},
                    {"key", response.key()},
                    {"artifact_bytes", response.artifact().size()},
                    {"daemon", daemon_figures(target)}}
                   .dump()
            << std::endl;
  return 0;
}

// Recompiles every miss a journal says was issued, one at a time, and says
// for each where its answer came from and under which key.
int run_replay(const LoadOptions& options, const std::string& journal_path) {
  std::ifstream in(journal_path);
  std::string word, target;
  uint64_t seed = 0;
  if (!(in >> word >> seed >> word >> target)) {
    std::cerr << "kjit_load_driver: " << journal_path << " has no header\n";
    return 2;
  }
  std::set<uint64_t> ids;
  std::map<uint64_t, std::string> answered_keys;
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string what, code, cache, key;
    uint64_t id = 0;
    if (!(fields >> what >> id)) continue;  // a line cut short by a kill
    if (what == "issue") ids.insert(id);
    if (what == "done" && (fields >> code >> cache >> key) && code == "OK") answered_keys[id] = key;
  }
  auto stub = kjit::v1::Compiler::NewStub(channel_to(target_of(options.socket, options.address), 0));
  json out = json::array();
  for (uint64_t id : ids) {
    kjit::v1::CompileResponse response;
    Outcome o =
        compile_once(*stub, miss_request(seed, id, target), response, std::chrono::seconds(options.call_timeout_s));
    json row = {{"id", id},
                {"code", code_name(o.code)},
                {"cache", response.cache()},
                {"key", response.key()},
                {"answered_before", answered_keys.count(id) > 0}};
    if (answered_keys.count(id)) row["key_before"] = answered_keys[id];
    if (o.code != grpc::StatusCode::OK) row["message"] = o.message.substr(0, 600);
    out.push_back(row);
  }
  std::cout << out.dump() << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kjit_load_driver: mixed compile load (hits, misses, bad inputs) against kjitd"};
  LoadOptions options;
  std::string once, replay;
  std::vector<std::string> compile_options, name_expressions;
  app.add_option("--socket", options.socket, "kjitd's unix socket");
  app.add_option("--address", options.address, "or a gRPC target: 127.0.0.1:7878, unix:/path");
  app.add_option("--duration", options.duration_s, "seconds of load");
  app.add_option("--clients", options.clients, "concurrent clients, each its own connection")
      ->check(CLI::Range(1, 1024));
  app.add_option("--mix", options.mix, "weights of hits,misses,bad inputs");
  app.add_option("--seed", options.seed, "seeds the choice of calls and names the misses");
  app.add_option("--target", options.target, "the compile target");
  app.add_option("--hit-kernels", options.hit_kernels, "distinct kernels the hits ask for")->check(CLI::Range(1, 64));
  app.add_option("--call-timeout", options.call_timeout_s, "deadline of one call, seconds");
  app.add_option("--journal", options.journal, "write every miss issued and answered to this file");
  app.add_option("--hit-burst", options.hit_burst_s, "then this many seconds of hits alone (unix socket only)");
  app.add_flag("--stop-on-unavailable", options.stop_on_unavailable, "stop issuing calls once one is UNAVAILABLE");
  app.add_option("--once", once, "compile this one file and print the outcome");
  app.add_option("-D,--option", compile_options, "with --once: a compile option");
  app.add_option("--name-expr", name_expressions, "with --once: a name expression");
  app.add_option("--replay", replay, "recompile the misses of this journal");
  CLI11_PARSE(app, argc, argv);
  if (options.socket.empty() == options.address.empty()) {
    std::cerr << "kjit_load_driver: give one of --socket or --address\n";
    return 2;
  }
  // SIGTERM ends the load early but still prints the summary.
  struct sigaction stop {};
  stop.sa_handler = [](int) { g_stop.store(true); };
  ::sigaction(SIGTERM, &stop, nullptr);
  ::sigaction(SIGINT, &stop, nullptr);
  if (!once.empty()) return run_once(options, once, compile_options, name_expressions);
  if (!replay.empty()) return run_replay(options, replay);
  return run_load(options);
}
