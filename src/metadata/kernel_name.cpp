// Demangling with the C++ runtime's own demangler, then trimming the
// signature; the trimming has to respect nesting because template arguments
// and parameter types can contain spaces, parentheses and angle brackets.
#include "metadata/kernel_name.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

namespace kjit {
namespace {

bool is_opening(char c) {
  return c == '(' || c == '<' || c == '[' || c == '{';
}
bool is_closing(char c) {
  return c == ')' || c == '>' || c == ']' || c == '}';
}

// "f<int>(int*, void (*)(int))" -> "f<int>": drops the trailing parameter
// list, found by matching the final ')' back to its '('. Text without a
// trailing ')' is returned unchanged.
std::string_view without_parameters(std::string_view text) {
  if (text.empty() || text.back() != ')') return text;
  int depth = 0;
  for (size_t i = text.size(); i-- > 0;) {
    if (text[i] == ')') ++depth;
    if (text[i] == '(' && --depth == 0) return text.substr(0, i);
  }
  return text;  // unbalanced: leave it alone rather than guess
}

// "void ns::f<int, 2>" -> "ns::f<int, 2>": a function template's demangled
// name starts with its return type, separated by the last space that is not
// inside brackets ("(anonymous namespace)::k" keeps its space).
std::string_view without_return_type(std::string_view text) {
  int depth = 0;
  size_t last_space = std::string_view::npos;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (is_opening(c)) ++depth;
    if (is_closing(c) && depth > 0) --depth;
    if (c == ' ' && depth == 0) last_space = i;
  }
  return last_space == std::string_view::npos ? text : text.substr(last_space + 1);
}

}  // namespace

std::string source_name_of(std::string_view symbol) {
  // Only Itanium-mangled names start with "_Z"; anything else is extern "C"
  // (or already a source name) and is its own source name.
  if (symbol.size() < 3 || symbol.substr(0, 2) != "_Z") return std::string(symbol);

  std::string mangled(symbol);  // __cxa_demangle needs a NUL-terminated string
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> demangled(abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status),
                                                        &std::free);
  if (status != 0 || !demangled) return mangled;

  std::string_view name = without_return_type(without_parameters(demangled.get()));
  return name.empty() ? mangled : std::string(name);
}

}  // namespace kjit
