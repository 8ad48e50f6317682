# Run after kjit is linked with gRPC, protobuf and abseil statically: fails
# (and removes the executable) when a shared copy of them is still needed,
# as a process holding two copies of protobuf's descriptor registry aborts.
execute_process(COMMAND ${READELF} -d ${EXECUTABLE} OUTPUT_VARIABLE dynamic RESULT_VARIABLE failed)
if(failed)
  message(FATAL_ERROR "${READELF} -d ${EXECUTABLE} failed")
endif()
string(REGEX MATCHALL "NEEDED[^\n]*lib(grpc|gpr|protobuf|absl_|upb|re2|cares|crypto|ssl)[^\n]*" shared "${dynamic}")
if(shared)
  file(REMOVE ${EXECUTABLE})
  message(FATAL_ERROR "kjit still needs shared libraries it should link statically:\n${shared}\n"
                      "configure with -DKJIT_CLI_STATIC_GRPC=OFF to link them all shared")
endif()
