// An AMDGPU relocatable object -> a code object (hsaco) the ROCm runtime
// loads, linked by lld's ELF driver inside this process.
#pragma once

#include <string>
#include <string_view>

#include "kjit/status.h"

namespace kjit {

struct HsacoLinkOutput {
  std::string hsaco;
  std::string log;  // lld's warnings, if any
};

// Links `object` as `ld.lld -shared --no-undefined`: a call to a function no
// object defines is an error here, not at load time. lld takes files, so the
// object and the output live in a private directory under $TMPDIR (else
// /tmp), removed afterwards; lld's messages name `name` instead. Input that
// is not a well-formed AMDGPU relocatable object, or that lld refuses, is
// invalid_argument with lld's (or LLVM's ELF reader's) messages.
//
// Any thread may call it; lld keeps its state in globals, so links run one at
// a time. lld runs again after its errors, fatal ones included; should it
// ever crash, that call and every later one is internal.
Result<HsacoLinkOutput> link_hsaco(std::string_view object, std::string_view name);

}  // namespace kjit
