// The PTX reader: a tokenizer and a walk over top-level statements and
// function bodies. It reads declarations and directives only; instructions
// matter just for which names a body mentions.
#include "metadata/ptx_reader.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <map>
#include <set>
#include <unordered_set>

#include "metadata/kernel_name.h"

namespace kjit {
namespace {

// Shared memory the driver reserves per block and that the cubin's section
// includes from sm_90 on (measured: a 4096-byte array gives a 5120-byte
// section on sm_90 and newer, while ptxas reports 4096).
constexpr uint32_t k_reserved_section_bytes = 1024;
constexpr uint32_t k_first_sm_with_reserved_section = 90;
// Where ptxas 13.0 starts dynamic shared memory when the module declares it.
constexpr uint64_t k_dynamic_shared_alignment = 16;
// The widest fundamental type (.b128).
constexpr uint64_t k_max_type_bits = 128;
// Larger than any alignment a memory needs; bounding it keeps the offset
// arithmetic (offset + align - 1) far from wrapping.
constexpr uint64_t k_max_alignment = uint64_t{1} << 32;

struct Token {
  std::string_view text;
  uint32_t line = 0;
};

bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$' ||
         c == '%' || c == '.' || c == ':';
}

// Words keep their dots and colons ("st.shared.f32", ".v2.f64",
// ".shared::cta"), so a declaration's ".shared" is a token of its own and an
// instruction's never is. Comments go; a string is one token.
std::vector<Token> tokenize(std::string_view text) {
  std::vector<Token> tokens;
  uint32_t line = 1;
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      ++i;
    } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      ++i;
    } else if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      while (i < text.size() && text[i] != '\n') ++i;
    } else if (c == '/' && i + 1 < text.size() && text[i + 1] == '*') {
      i += 2;
      while (i < text.size() && !(text[i] == '*' && i + 1 < text.size() && text[i + 1] == '/')) {
        if (text[i] == '\n') ++line;
        ++i;
      }
      i += 2;
    } else if (c == '"') {
      const size_t start = i++;
      while (i < text.size() && text[i] != '"' && text[i] != '\n') i += text[i] == '\\' ? 2 : 1;
      if (i < text.size() && text[i] == '"') ++i;
      tokens.push_back({text.substr(start, std::min(i, text.size()) - start), line});
    } else if (is_word_char(c)) {
      const size_t start = i;
      while (i < text.size() && is_word_char(text[i])) ++i;
      tokens.push_back({text.substr(start, i - start), line});
    } else {
      tokens.push_back({text.substr(i, 1), line});
      ++i;
    }
  }
  return tokens;
}

Error malformed(uint32_t line, std::string what) {
  return make_error(ErrorCode::invalid_argument, "PTX line " + std::to_string(line) + ": " + std::move(what));
}

bool parse_number(std::string_view text, uint64_t& value) {
  int base = 10;
  if (text.starts_with("0x") || text.starts_with("0X")) {
    base = 16;
    text.remove_prefix(2);
  }
  if (text.ends_with('U') || text.ends_with('u')) text.remove_suffix(1);  // PTX's unsigned suffix
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  return !text.empty() && ec == std::errc{} && end == text.data() + text.size();
}

// Bytes of one element of a PTX fundamental type ("b8" -> 1, "f16x2" -> 4);
// 0 when the word is not a type.
uint64_t type_size(std::string_view type) {
  uint64_t lanes = 1;
  if (type.ends_with("x2")) {
    lanes = 2;
    type.remove_suffix(2);
  }
  if (type == "pred") return 1;
  static const std::set<std::string_view> k_byte_types = {"e4m3", "e5m2", "e2m3", "e3m2", "e2m1", "ue8m0"};
  if (k_byte_types.contains(type)) return lanes;
  if (type == "tf32") return 4 * lanes;
  size_t digits = type.size();
  while (digits > 0 && type[digits - 1] >= '0' && type[digits - 1] <= '9') --digits;
  const std::string_view prefix = type.substr(0, digits);
  if (prefix != "b" && prefix != "s" && prefix != "u" && prefix != "f" && prefix != "bf") return 0;
  uint64_t bits = 0;
  // .b128 is PTX's widest type. A wider one is no type, and would let an
  // element times its vector width wrap to 0: a zero alignment to divide by.
  if (!parse_number(type.substr(digits), bits) || bits == 0 || bits % 8 != 0 || bits > k_max_type_bits) return 0;
  return bits / 8 * lanes;
}

// One variable of a declaration: ".shared .align 4 .b8 tile[4096]".
struct Variable {
  std::string_view name;
  uint64_t size = 0;
  uint64_t align = 1;
  bool unsized = false;  // "name[]": an .extern array
};

// Parses the type qualifiers and declarators in tokens [begin, end) (the
// state space already consumed). `.ptr` starts a pointee description whose
// .align is not the variable's own.
Result<std::vector<Variable>> parse_declarators(const std::vector<Token>& tokens, size_t begin, size_t end) {
  uint64_t element = 0, vector = 1, align = 0;
  bool pointee = false;
  std::vector<Variable> variables;
  size_t i = begin;
  while (i < end) {
    const Token& token = tokens[i];
    if (token.text == ".align") {
      uint64_t value = 0;
      if (i + 1 >= end || !parse_number(tokens[i + 1].text, value) || value == 0) {
        return malformed(token.line, ".align needs a number");
      }
      if (!std::has_single_bit(value) || value > k_max_alignment) {
        return malformed(token.line, ".align " + std::to_string(value) + " is not a power of two up to 2^32");
      }
      if (!pointee) align = value;
      i += 2;
      continue;
    }
    if (token.text.starts_with('.')) {
      // ".v2.f64" or ".v2" then ".f64"; state spaces after .ptr are skipped.
      std::string_view rest = token.text.substr(1);
      while (!rest.empty()) {
        const size_t dot = rest.find('.');
        const std::string_view part = rest.substr(0, dot);
        rest = dot == std::string_view::npos ? std::string_view{} : rest.substr(dot + 1);
        if (part == "ptr") {
          pointee = true;
        } else if (part == "v2" || part == "v4" || part == "v8") {
          vector = part[1] - '0';
        } else if (uint64_t size = type_size(part); size != 0 && !pointee) {
          element = size;
        }
      }
      ++i;
      continue;
    }
    if (token.text == ",") {
      ++i;
      continue;
    }
    if (token.text == "=") break;  // an initializer: shared memory has none
    if (element == 0) return malformed(token.line, "declaration of '" + std::string(token.text) + "' has no type");
    Variable variable{token.text, element * vector, align ? align : element * vector};
    ++i;
    while (i < end && tokens[i].text == "[") {
      if (i + 1 < end && tokens[i + 1].text == "]") {
        variable.unsized = true;
        variable.size = 0;
        i += 2;
        continue;
      }
      uint64_t count = 0;
      if (i + 2 >= end || !parse_number(tokens[i + 1].text, count) || tokens[i + 2].text != "]") {
        return malformed(tokens[i].line, "array size of '" + std::string(variable.name) + "' is not a number");
      }
      if (count != 0 && variable.size > (uint64_t{1} << 40) / count) {
        return malformed(tokens[i].line, "array '" + std::string(variable.name) + "' is too large");
      }
      variable.size *= count;
      i += 3;
    }
    variables.push_back(variable);
  }
  return variables;
}

// Index of the token closing the bracket at `open`, or tokens.size().
size_t matching(const std::vector<Token>& tokens, size_t open, std::string_view opener, std::string_view closer) {
  int depth = 0;
  for (size_t i = open; i < tokens.size(); ++i) {
    if (tokens[i].text == opener) ++depth;
    if (tokens[i].text == closer && --depth == 0) return i;
  }
  return tokens.size();
}

bool is_shared_space(std::string_view word) {
  return word == ".shared" || word.starts_with(".shared::");
}

struct Function {
  bool entry = false;
  std::string_view name;
  uint32_t line = 0;
  PtxKernel kernel;                            // for entries: directives and parameters
  std::vector<Variable> shared;                // declared in the body
  std::unordered_set<std::string_view> names;  // every word the body mentions
};

struct Module {
  PtxModule result;
  std::vector<Variable> shared;  // module scope, declaration order
  std::vector<Function> functions;
};

// The numbers after a directive: ".maxntid 256, 1, 1".
std::vector<uint64_t> directive_numbers(const std::vector<Token>& tokens, size_t& i, size_t end) {
  std::vector<uint64_t> numbers;
  while (i < end) {
    uint64_t value = 0;
    if (!parse_number(tokens[i].text, value)) break;
    numbers.push_back(value);
    ++i;
    if (i < end && tokens[i].text == ",") ++i;
  }
  return numbers;
}

Dim3 dims_of(const std::vector<uint64_t>& numbers) {
  Dim3 dims{1, 1, 1};
  if (numbers.size() > 0) dims.x = static_cast<uint32_t>(numbers[0]);
  if (numbers.size() > 1) dims.y = static_cast<uint32_t>(numbers[1]);
  if (numbers.size() > 2) dims.z = static_cast<uint32_t>(numbers[2]);
  return dims;
}

Status read_parameters(const std::vector<Token>& tokens, size_t open, size_t close, KernelInfo& info) {
  uint64_t offset = 0;
  size_t start = open + 1;
  while (start < close) {
    size_t stop = start;
    while (stop < close && tokens[stop].text != ",") ++stop;
    if (tokens[start].text == ".param" || tokens[start].text == ".reg") {
      auto variables = parse_declarators(tokens, start + 1, stop);
      if (!variables) return variables.error();
      for (const Variable& v : *variables) {
        offset = (offset + v.align - 1) / v.align * v.align + v.size;
      }
    }
    start = stop + 1;
  }
  if (offset > UINT32_MAX) return malformed(tokens[open].line, "parameter block too large");
  info.param_bytes = static_cast<uint32_t>(offset);
  return Ok{};
}

// Header directives between the parameter list and the body.
Status read_directives(const std::vector<Token>& tokens, size_t i, size_t end, PtxKernel& kernel) {
  while (i < end) {
    const std::string_view word = tokens[i].text;
    const uint32_t line = tokens[i].line;
    ++i;
    if (word == ".explicitcluster") {
      kernel.explicit_cluster = true;
      continue;
    }
    if (word != ".maxntid" && word != ".reqntid" && word != ".maxnreg" && word != ".reqnctapercluster" &&
        word != ".maxclusterrank" && word != ".minnctapersm") {
      continue;  // .noreturn, .pragma and the like
    }
    const std::vector<uint64_t> numbers = directive_numbers(tokens, i, end);
    if (numbers.empty() || numbers.size() > 3) return malformed(line, std::string(word) + " needs 1 to 3 numbers");
    for (uint64_t n : numbers) {
      if (n == 0 || n > UINT32_MAX) return malformed(line, std::string(word) + " value out of range");
    }
    KernelInfo& info = kernel.info;
    if (word == ".maxntid") {
      const Dim3 box = dims_of(numbers);
      // x * y fits 64 bits; checked before z multiplies it, which might not.
      const uint64_t area = uint64_t{box.x} * box.y;
      if (area > UINT32_MAX || area * box.z > UINT32_MAX) return malformed(line, ".maxntid too large");
      const uint64_t volume = area * box.z;
      info.max_threads_per_block = static_cast<uint32_t>(volume);
    } else if (word == ".reqntid") {
      info.required_threads = dims_of(numbers);
    } else if (word == ".reqnctapercluster") {
      info.cluster_dims = dims_of(numbers);
    } else if (word == ".maxnreg") {
      info.max_registers = static_cast<uint32_t>(numbers[0]);
    } else if (word == ".maxclusterrank") {
      kernel.max_cluster_rank = static_cast<uint32_t>(numbers[0]);
      info.max_cluster_rank = kernel.max_cluster_rank;
    } else {
      kernel.min_blocks_per_sm = static_cast<uint32_t>(numbers[0]);
    }
  }
  return Ok{};
}

// The body between `open` ({) and `close` (}): shared declarations and names.
Status read_body(const std::vector<Token>& tokens, size_t open, size_t close, Module& module, Function& function) {
  for (size_t i = open + 1; i < close; ++i) {
    const std::string_view word = tokens[i].text;
    if (!is_shared_space(word)) {
      function.names.insert(word);
      continue;
    }
    size_t end = i;
    while (end < close && tokens[end].text != ";") ++end;
    auto variables = parse_declarators(tokens, i + 1, end);
    if (!variables) return variables.error();
    const bool is_extern = i > open + 1 && tokens[i - 1].text == ".extern";
    for (const Variable& v : *variables) {
      if (is_extern || v.unsized) {
        module.result.declares_dynamic_shared = true;
      } else {
        function.shared.push_back(v);
      }
    }
    i = end;
  }
  return Ok{};
}

// A function from its `.entry` / `.func` keyword at `i`; returns the index
// after it (its closing brace or the prototype's semicolon).
Result<size_t> read_function(const std::vector<Token>& tokens, size_t i, Module& module) {
  Function function;
  function.entry = tokens[i].text == ".entry";
  function.line = tokens[i].line;
  ++i;
  // .func may return values: ".func (.param .b32 r) name (...)".
  if (!function.entry && i < tokens.size() && tokens[i].text == "(") i = matching(tokens, i, "(", ")") + 1;
  if (i >= tokens.size()) return malformed(function.line, "function without a name");
  function.name = tokens[i].text;
  ++i;
  size_t header_end = i;
  while (header_end < tokens.size() && tokens[header_end].text != "{" && tokens[header_end].text != ";") {
    if (tokens[header_end].text == "(") header_end = matching(tokens, header_end, "(", ")");
    ++header_end;
  }
  if (header_end >= tokens.size()) return malformed(function.line, "'" + std::string(function.name) + "' never ends");
  size_t directives = i;
  if (i < header_end && tokens[i].text == "(") {
    const size_t close = matching(tokens, i, "(", ")");
    if (function.entry) {
      if (Status s = read_parameters(tokens, i, close, function.kernel.info); !s) return s.error();
    }
    directives = close + 1;
  }
  if (tokens[header_end].text == ";") return header_end + 1;  // a prototype: nothing to read
  if (function.entry) {
    if (Status s = read_directives(tokens, directives, header_end, function.kernel); !s) return s.error();
  }
  const size_t close = matching(tokens, header_end, "{", "}");
  if (close >= tokens.size())
    return malformed(function.line, "body of '" + std::string(function.name) + "' never ends");
  if (Status s = read_body(tokens, header_end, close, module, function); !s) return s.error();
  module.functions.push_back(std::move(function));
  return close + 1;
}

// A top-level statement other than a function, from `i` to its semicolon.
Result<size_t> read_statement(const std::vector<Token>& tokens, size_t i, Module& module) {
  const size_t start = i;
  // Directives that end at the line or at a brace, not at a semicolon.
  if (tokens[start].text == ".file") {
    size_t next = start + 1;
    while (next < tokens.size() && tokens[next].line == tokens[start].line) ++next;
    return next;
  }
  if (tokens[start].text == ".section") {
    size_t open = start + 1;
    while (open < tokens.size() && tokens[open].text != "{") ++open;
    return std::min(matching(tokens, open, "{", "}"), tokens.size() - 1) + 1;
  }
  size_t end = i;
  int braces = 0;
  while (end < tokens.size() && !(tokens[end].text == ";" && braces == 0)) {
    if (tokens[end].text == "{") ++braces;
    if (tokens[end].text == "}") --braces;
    ++end;
  }
  PtxModule& result = module.result;
  const std::string_view word = tokens[start].text;
  if (word == ".version" || word == ".target" || word == ".address_size") {
    if (start + 1 >= end) return malformed(tokens[start].line, std::string(word) + " without a value");
    const std::string_view value = tokens[start + 1].text;
    if (word == ".version") {
      result.version = value;
    } else if (word == ".target") {
      result.target = value;
      uint64_t sm = 0;
      size_t digits = 3;
      while (digits < value.size() && value[digits] >= '0' && value[digits] <= '9') ++digits;
      if (!value.starts_with("sm_") || !parse_number(value.substr(3, digits - 3), sm)) {
        return malformed(tokens[start].line, "unknown .target '" + std::string(value) + "'");
      }
      result.sm = static_cast<uint32_t>(sm);
    } else {
      uint64_t bits = 0;
      if (!parse_number(value, bits)) return malformed(tokens[start].line, ".address_size is not a number");
      result.address_size = static_cast<uint32_t>(bits);
    }
    // .version and .target end at the line, not at a semicolon.
    size_t next = start + 2;
    while (next < tokens.size() && tokens[next].line == tokens[start].line) ++next;
    return next;
  }
  for (size_t k = start; k < end; ++k) {
    if (!is_shared_space(tokens[k].text)) continue;
    auto variables = parse_declarators(tokens, k + 1, end);
    if (!variables) return variables.error();
    const bool is_extern = k > start && tokens[k - 1].text == ".extern";
    for (const Variable& v : *variables) {
      if (is_extern || v.unsized) {
        result.declares_dynamic_shared = true;
      } else {
        module.shared.push_back(v);
      }
    }
    break;
  }
  return end + 1;
}

// Which top-level statement starts at `i`: the index of its .entry/.func
// keyword when it is a function, else tokens.size().
size_t function_keyword(const std::vector<Token>& tokens, size_t i) {
  for (; i < tokens.size(); ++i) {
    const std::string_view word = tokens[i].text;
    if (word == ".entry" || word == ".func") return i;
    if (word == ";" || word == "{" || word == "(") break;
    if (word.starts_with('.') && word != ".visible" && word != ".weak" && word != ".extern" && word != ".common") break;
  }
  return tokens.size();
}

uint64_t align_up(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

// The entry's static shared memory (see read_ptx's comment).
uint64_t static_shared_of(const Module& module, const Function& entry) {
  std::map<std::string_view, const Function*> functions;
  for (const Function& f : module.functions) {
    if (!f.entry) functions[f.name] = &f;
  }
  // The entry and every .func it reaches.
  std::vector<const Function*> reached = {&entry};
  std::set<std::string_view> seen;
  for (size_t k = 0; k < reached.size(); ++k) {
    for (std::string_view name : reached[k]->names) {
      auto callee = functions.find(name);
      if (callee != functions.end() && seen.insert(name).second) reached.push_back(callee->second);
    }
  }
  uint64_t offset = 0;
  auto place = [&](const Variable& v) { offset = align_up(offset, v.align) + v.size; };
  for (const Function* f : reached) {
    for (const Variable& v : f->shared) place(v);
  }
  for (const Variable& v : module.shared) {
    for (const Function* f : reached) {
      if (f->names.contains(v.name)) {
        place(v);
        break;
      }
    }
  }
  if (offset != 0 && module.result.declares_dynamic_shared) offset = align_up(offset, k_dynamic_shared_alignment);
  return offset;
}

}  // namespace

const PtxKernel* PtxModule::find(std::string_view name) const {
  for (const PtxKernel& kernel : kernels) {
    if (kernel.info.lowered_name == name || kernel.info.name == name) return &kernel;
  }
  return nullptr;
}

Result<PtxModule> read_ptx(std::string_view text) {
  const std::vector<Token> tokens = tokenize(text);
  Module module;
  size_t i = 0;
  while (i < tokens.size()) {
    if (tokens[i].text == ";") {
      ++i;
      continue;
    }
    const size_t keyword = function_keyword(tokens, i);
    Result<size_t> next =
        keyword < tokens.size() ? read_function(tokens, keyword, module) : read_statement(tokens, i, module);
    if (!next) return next.error();
    i = *next;
  }
  PtxModule& result = module.result;
  if (result.version.empty() || result.target.empty()) {
    return make_error(ErrorCode::invalid_argument, "not PTX: no .version and .target directives");
  }
  for (const Function& function : module.functions) {
    if (!function.entry) continue;
    PtxKernel kernel = function.kernel;
    kernel.info.lowered_name = std::string(function.name);
    kernel.info.name = source_name_of(function.name);
    const uint64_t shared = static_shared_of(module, function);
    if (shared > UINT32_MAX - k_reserved_section_bytes) {
      return malformed(function.line, "shared memory of '" + std::string(function.name) + "' is too large");
    }
    kernel.info.static_shared_bytes = static_cast<uint32_t>(shared);
    kernel.info.shared_section_bytes = kernel.info.static_shared_bytes +
                                       (result.sm >= k_first_sm_with_reserved_section ? k_reserved_section_bytes : 0);
    result.kernels.push_back(std::move(kernel));
  }
  return std::move(module.result);
}

}  // namespace kjit
