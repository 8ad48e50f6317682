// Source-level kernel names from the symbols in a binary: "_Z5scaleIfEvPT_i"
// becomes "scale<float>", which is what users, logs and the CLI show.
#pragma once

#include <string>
#include <string_view>

namespace kjit {

// Demangles an Itanium C++ symbol and keeps the qualified name with its
// template arguments, without return type or parameter list:
//   "_Z10vector_addPKfS0_Pfi" -> "vector_add"
//   "_Z5scaleIfEvPT_i"        -> "scale<float>"
//   "_ZN2ns1kEPdi"            -> "ns::k"
// Names that are not mangled (extern "C") or do not demangle come back as
// they are.
std::string source_name_of(std::string_view symbol);

}  // namespace kjit
