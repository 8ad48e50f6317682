// Sanitizer defaults linked into every fuzz target, so that a bare run of a
// binary (ctest's replay, a reproduction by hand) reports like run.sh.
extern "C" {

// UBSan only prints and carries on by default; libFuzzer sees a finding only
// when the process dies, so undefined behaviour must stop it.
const char* __ubsan_default_options() {
  return "halt_on_error=1:print_stacktrace=1";
}

}  // extern "C"
