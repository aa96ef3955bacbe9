# libFuzzer target for the egress proxy's request parser and the other pure proxy parsers.
# Included from fuzz/CMakeLists.txt (OARBANK_FUZZ_FLAGS comes from there); the pure sources
# are compiled here with the fuzzer's instrumentation, like the policy fuzzer's.
set(OARBANK_PROXY_SRC ${CMAKE_CURRENT_LIST_DIR}/../src/proxy)
add_executable(oarbank-proxy-request-fuzz
  ${CMAKE_CURRENT_LIST_DIR}/proxy_request_fuzz.cpp
  ${OARBANK_PROXY_SRC}/ip_address.cpp
  ${OARBANK_PROXY_SRC}/destination_match.cpp
  ${OARBANK_PROXY_SRC}/address_class.cpp
  ${OARBANK_PROXY_SRC}/http_head.cpp
  ${OARBANK_PROXY_SRC}/http_request.cpp
  ${OARBANK_PROXY_SRC}/http_response.cpp
  ${OARBANK_PROXY_SRC}/chunked_body.cpp
  ${OARBANK_PROXY_SRC}/message_body.cpp
  # valid_dns_name: one rule for names, shared with the policy's egress entries.
  ${CMAKE_CURRENT_LIST_DIR}/../src/policy/egress.cpp
)
target_include_directories(oarbank-proxy-request-fuzz PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/../include ${CMAKE_CURRENT_LIST_DIR}/../src)
# oarbank/policy.hpp (EgressDestination) includes nlohmann/json_fwd.hpp.
target_link_libraries(oarbank-proxy-request-fuzz PRIVATE nlohmann_json::nlohmann_json)
target_compile_options(oarbank-proxy-request-fuzz PRIVATE ${OARBANK_FUZZ_FLAGS})
target_link_options(oarbank-proxy-request-fuzz PRIVATE ${OARBANK_FUZZ_FLAGS})

# Differential fuzzing against llhttp (Debian's node-llhttp ships its C sources): the proxy's
# framing is at least as strict as llhttp's (fuzz/proxy_llhttp_fuzz.cpp).
find_path(LLHTTP_INCLUDE_DIR llhttp.h PATHS /usr/share/include/llhttp NO_DEFAULT_PATH)
find_path(LLHTTP_SOURCE_DIR llhttp.c PATHS /usr/share/llhttp NO_DEFAULT_PATH)
if(NOT LLHTTP_INCLUDE_DIR OR NOT LLHTTP_SOURCE_DIR)
  message(FATAL_ERROR "the llhttp differential fuzzer needs llhttp's C sources: apt-get install node-llhttp")
endif()
set(OARBANK_LLHTTP_SOURCES
  ${LLHTTP_SOURCE_DIR}/llhttp.c ${LLHTTP_SOURCE_DIR}/api.c ${LLHTTP_SOURCE_DIR}/http.c)
# Generated code, not ours: built as shipped, without the project's warnings as errors.
set_source_files_properties(${OARBANK_LLHTTP_SOURCES} PROPERTIES COMPILE_OPTIONS "-w")
add_executable(oarbank-proxy-llhttp-fuzz
  ${CMAKE_CURRENT_LIST_DIR}/proxy_llhttp_fuzz.cpp
  ${OARBANK_LLHTTP_SOURCES}
  ${OARBANK_PROXY_SRC}/ip_address.cpp
  ${OARBANK_PROXY_SRC}/destination_match.cpp
  ${OARBANK_PROXY_SRC}/http_head.cpp
  ${OARBANK_PROXY_SRC}/http_request.cpp
  ${OARBANK_PROXY_SRC}/chunked_body.cpp
  ${OARBANK_PROXY_SRC}/message_body.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../src/policy/egress.cpp
)
target_include_directories(oarbank-proxy-llhttp-fuzz PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/../include ${CMAKE_CURRENT_LIST_DIR}/../src ${LLHTTP_INCLUDE_DIR})
target_link_libraries(oarbank-proxy-llhttp-fuzz PRIVATE nlohmann_json::nlohmann_json)
target_compile_options(oarbank-proxy-llhttp-fuzz PRIVATE ${OARBANK_FUZZ_FLAGS})
target_link_options(oarbank-proxy-llhttp-fuzz PRIVATE ${OARBANK_FUZZ_FLAGS})
