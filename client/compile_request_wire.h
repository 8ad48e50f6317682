// The client's CompileRequest as the kjit.v1 wire message: what Client::compile
// sends, for code that drives the gRPC stub itself (the benchmarks' async
// load generator) and must ask for exactly the same key.
#pragma once

#include "kjit/client.h"
#include "kjit/v1/compiler.pb.h"

namespace kjit {

void to_wire(const CompileRequest& request, v1::CompileRequest& wire);
// The other way, for a request the daemon sends back (a recipe); an input
// kind this client does not know is an error.
Result<CompileRequest> from_wire(const v1::CompileRequest& wire);

}  // namespace kjit
