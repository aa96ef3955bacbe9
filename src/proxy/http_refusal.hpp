// The proxy's own answers to a client: a refusal with its reason, and the tunnel's 200.
#pragma once

#include <string>
#include <string_view>

namespace oarbank::proxy {

inline constexpr std::string_view kTunnelEstablished =
    "HTTP/1.1 200 Connection established\r\n\r\n";

// "HTTP/1.1 403 Forbidden" with the reason as a text/plain body (one line), and
// "Connection: close". Control characters in `reason` are replaced.
std::string refusal_response(int status, std::string_view reason);

std::string_view reason_phrase(int status);

}  // namespace oarbank::proxy
