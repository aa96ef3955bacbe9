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
  # valid_dns_name: one rule for names, shared with the policy's egress entries.
  ${CMAKE_CURRENT_LIST_DIR}/../src/policy/egress.cpp
)
target_include_directories(oarbank-proxy-request-fuzz PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/../include ${CMAKE_CURRENT_LIST_DIR}/../src)
# oarbank/policy.hpp (EgressDestination) includes nlohmann/json_fwd.hpp.
target_link_libraries(oarbank-proxy-request-fuzz PRIVATE nlohmann_json::nlohmann_json)
target_compile_options(oarbank-proxy-request-fuzz PRIVATE ${OARBANK_FUZZ_FLAGS})
target_link_options(oarbank-proxy-request-fuzz PRIVATE ${OARBANK_FUZZ_FLAGS})
