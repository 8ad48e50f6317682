// LLVMFuzzerInitialize for the targets that parse protos. Mutated bytes often
// break proto3's UTF-8 rule for string fields, which protobuf logs on every
// parse: noise that would bury a real report.
#include <google/protobuf/stubs/logging.h>

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}
