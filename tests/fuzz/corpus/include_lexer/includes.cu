// Every directive form the include policy and lexer must read.
#include "common.h"
#include <cuda/std/array>
  #  include   "spaced.h"
#include_next <next.h>
#import "imported.h"
/* #include "/etc/passwd" inside a comment */
#define HEADER "detail/util.h"
#include HEADER
#include \
  "continued.h"
R"raw(
#include "in_a_raw_string.h"
)raw";
const char* s = "#include \"in_a_string.h\"";
template <typename T> __global__ void scale(T* x, T a) { x[threadIdx.x] *= a; }
//@@ common.h
#pragma once
#include "detail/util.h"
//@@ detail/util.h
#pragma once
// #include "../escape.h" in a line comment
