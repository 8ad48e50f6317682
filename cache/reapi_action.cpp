// The Command and Action that name a kjit entry in a REAPI store (see reapi_action.h).
#include "cache/reapi_action.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "build/bazel/remote/execution/v2/remote_execution.pb.h"
#include "cache/cache_entry.h"

namespace kjit {

namespace re = build::bazel::remote::execution::v2;

namespace {

std::string deterministic(const google::protobuf::Message& message) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    message.SerializeToCodedStream(&coded);
  }
  return out;
}

}  // namespace

std::string reapi_entry_command(std::string_view stored_key) {
  re::Command command;
  command.add_arguments("kjit-cache-entry");
  command.add_arguments("v" + std::to_string(k_entry_format_version));
  command.add_arguments(std::string(stored_key));
  command.add_output_paths(std::string(k_reapi_entry_path));
  return deterministic(command);
}

std::string reapi_entry_action(std::string_view command_hash, int64_t command_size, std::string_view empty_root_hash) {
  re::Action action;
  action.mutable_command_digest()->set_hash(std::string(command_hash));
  action.mutable_command_digest()->set_size_bytes(command_size);
  action.mutable_input_root_digest()->set_hash(std::string(empty_root_hash));
  action.mutable_input_root_digest()->set_size_bytes(0);
  action.set_salt("kjit");
  return deterministic(action);
}

}  // namespace kjit
