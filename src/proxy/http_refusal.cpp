#include "proxy/http_refusal.hpp"

namespace oarbank::proxy {

std::string_view reason_phrase(int status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 403:
      return "Forbidden";
    case 408:
      return "Request Timeout";
    case 431:
      return "Request Header Fields Too Large";
    case 501:
      return "Not Implemented";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Error";
  }
}

std::string refusal_response(int status, std::string_view reason) {
  std::string body = "oarbank egress proxy: ";
  for (char c : reason) {
    const auto u = static_cast<unsigned char>(c);
    body.push_back(u < 0x20 || u == 0x7f ? '?' : c);
  }
  body.push_back('\n');
  std::string out =
      "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason_phrase(status)) + "\r\n";
  out += "Content-Type: text/plain; charset=utf-8\r\n";
  out += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  out += "Connection: close\r\n\r\n";
  out += body;
  return out;
}

}  // namespace oarbank::proxy
