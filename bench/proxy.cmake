# (c) The egress proxy (issue #5, docs/performance.md "Egress proxy"): bulk throughput through
# a CONNECT tunnel against a direct connection, the added latency of a CONNECT handshake, and
# memory per idle tunnel, with squid and tinyproxy as sides in the same run. Not run by ctest:
# bench/run-proxy-bench.sh drives it (root: it creates a network namespace and a veth pair).
# The same binary is the upstream server (`upstream`), hosts ProxyServer in a process of its
# own (`serve`: the loopback case, TestingOnlyExemptions for 127.0.0.0/8, raised tunnel limits)
# and runs two reference relays (`relay`). Included from bench/CMakeLists.txt.
add_executable(oarbank-proxy-bench ${CMAKE_CURRENT_LIST_DIR}/proxy_bench.cpp)
target_link_libraries(oarbank-proxy-bench PRIVATE oarbank_proxy)
add_dependencies(oarbank-proxy-bench oarbank-agent)
