# Writes ${OUT}: a C++ file whose triton_worker_script() returns ${SCRIPT}'s
# text, as a raw string literal (the script never contains its delimiter).
file(READ ${SCRIPT} _text)
string(FIND "${_text}" ")kjit_script\"" _clash)
if(NOT _clash EQUAL -1)
  message(FATAL_ERROR "${SCRIPT} contains the raw string's delimiter")
endif()
file(WRITE ${OUT} "// Generated from kjit_triton_worker.py by embed_script.cmake.\n"
  "#include \"backends/triton/triton_interpreter.h\"\n"
  "namespace kjit {\n"
  "std::string_view triton_worker_script() {\n"
  "  static constexpr std::string_view k_script = R\"kjit_script(${_text})kjit_script\";\n"
  "  return k_script;\n"
  "}\n"
  "}  // namespace kjit\n")
