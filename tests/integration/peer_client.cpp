// A client of kjitd's Cache service for the tests that run as other users
// (local_users_test.cpp runs it under setpriv): one call per run, its
// answer on stdout as "OK ..." or "ERR <gRPC code> <message>".
//
//   kjit_test_peer_client SOCKET put NS KEY NAME DATA   -> OK <cache key>[ already_stored][ conflict]
//   kjit_test_peer_client SOCKET replace NS KEY NAME DATA -> as put, asking to replace[ replaced]
//   kjit_test_peer_client SOCKET get NS KEY NAME        -> OK found <data> | OK missing
//   kjit_test_peer_client SOCKET grant                  -> OK <namespace> <names key in hex> | OK refused <reason>
//   kjit_test_peer_client SOCKET read PATH | list DIR   -> OK <bytes>/<names> | ERR errno <message> (no RPC)
//   kjit_test_peer_client SOCKET ls                     -> OK, then one key a line
//   kjit_test_peer_client SOCKET ls NS                  -> OK, then "<key> <kind> <ns> <key> <name>" a line (one blob namespace)
//   kjit_test_peer_client SOCKET rm KEY | explain KEY | gc | verify | stats
// With KJIT_TEST_TOKEN set, the call carries it (authorization: Bearer).
#include <grpcpp/grpcpp.h>

#include <dirent.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <iostream>
#include <string>
#include <vector>

#include "kjit/v1/cache.grpc.pb.h"

namespace {

int answer(const grpc::Status& status, const std::string& ok) {
  if (status.ok()) {
    std::cout << "OK" << (ok.empty() ? "" : " " + ok) << "\n";
    return 0;
  }
  std::cout << "ERR " << static_cast<int>(status.error_code()) << " " << status.error_message() << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() < 2) {
    std::cerr << "usage: kjit_test_peer_client SOCKET OP [ARGS...]\n";
    return 2;
  }
  auto cache = kjit::v1::Cache::NewStub(grpc::CreateChannel("unix:" + args[0], grpc::InsecureChannelCredentials()));
  const std::string& op = args[1];
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  if (const char* token = std::getenv("KJIT_TEST_TOKEN")) context.AddMetadata("authorization", std::string("Bearer ") + token);
  if ((op == "put" || op == "replace") && args.size() == 6) {
    kjit::v1::PutBlobRequest request;
    request.set_namespace_(args[2]);
    request.set_key(args[3]);
    request.set_name(args[4]);
    request.set_data(args[5]);
    request.set_replace(op == "replace");
    kjit::v1::PutBlobResponse response;
    grpc::Status status = cache->PutBlob(&context, request, &response);
    return answer(status, response.cache_key() + (response.already_stored() ? " already_stored" : "") +
                              (response.conflict() ? " conflict" : "") + (response.replaced() ? " replaced" : ""));
  }
  if (op == "grant") {
    kjit::v1::DirectReadGrantResponse response;
    grpc::Status status = cache->GetDirectReadGrant(&context, kjit::v1::DirectReadGrantRequest{}, &response);
    if (!response.granted()) return answer(status, "refused " + response.reason());
    std::string hex;
    for (unsigned char c : response.names_key()) {
      char digits[3];
      std::snprintf(digits, sizeof digits, "%02x", c);
      hex += digits;
    }
    return answer(status, response.namespace_() + " " + hex);
  }
  // What this user may do to the daemon's files by itself, without kjitd.
  if (op == "read" && args.size() == 3) {
    std::ifstream in(args[2], std::ios::binary);
    if (!in) {
      std::cout << "ERR errno " << std::strerror(errno) << "\n";
      return 1;
    }
    std::stringstream bytes;
    bytes << in.rdbuf();
    std::cout << "OK " << bytes.str().size() << "\n";
    return 0;
  }
  if (op == "list" && args.size() == 3) {
    DIR* dir = ::opendir(args[2].c_str());
    if (!dir) {
      std::cout << "ERR errno " << std::strerror(errno) << "\n";
      return 1;
    }
    std::string names;
    while (dirent* entry = ::readdir(dir)) names += std::string(" ") + entry->d_name;
    ::closedir(dir);
    std::cout << "OK" << names << "\n";
    return 0;
  }
  if (op == "get" && args.size() == 5) {
    kjit::v1::GetBlobRequest request;
    request.set_namespace_(args[2]);
    request.set_key(args[3]);
    request.set_name(args[4]);
    kjit::v1::GetBlobResponse response;
    grpc::Status status = cache->GetBlob(&context, request, &response);
    return answer(status, response.found() ? "found " + response.data() : "missing");
  }
  if (op == "ls" && args.size() <= 3) {
    kjit::v1::ListRequest request;
    if (args.size() == 3) request.set_blob_namespace(args[2]);
    kjit::v1::ListResponse response;
    grpc::Status status = cache->List(&context, request, &response);
    std::string keys;
    for (const auto& entry : response.entries()) {
      keys += "\n" + entry.key();
      if (args.size() == 3)
        keys += " " + entry.blob_kind() + " " + entry.blob_namespace() + " " + entry.blob_key() + " " + entry.blob_name();
    }
    return answer(status, keys);
  }
  if (op == "rm" && args.size() == 3) {
    kjit::v1::RemoveRequest request;
    request.set_key(args[2]);
    kjit::v1::RemoveResponse response;
    return answer(cache->Remove(&context, request, &response), "");
  }
  if (op == "explain" && args.size() == 3) {
    kjit::v1::ExplainRequest request;
    request.mutable_left()->set_key(args[2]);
    request.mutable_right()->set_key(args[2]);
    kjit::v1::ExplainResponse response;
    return answer(cache->Explain(&context, request, &response), "");
  }
  if (op == "gc") {
    kjit::v1::GcResponse response;
    return answer(cache->Gc(&context, kjit::v1::GcRequest{}, &response), "");
  }
  if (op == "verify") {
    kjit::v1::VerifyResponse response;
    return answer(cache->Verify(&context, kjit::v1::VerifyRequest{}, &response), "");
  }
  if (op == "stats") {
    kjit::v1::StatsResponse response;
    grpc::Status status = cache->Stats(&context, kjit::v1::StatsRequest{}, &response);
    return answer(status, "put_conflicts " + std::to_string(response.blobs().put_conflicts()));
  }
  std::cerr << "kjit_test_peer_client: unknown operation or arguments: " << op << "\n";
  return 2;
}
