// The HTTP endpoint's Host check: which `Host` headers address it.
#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <vector>

#include <arpa/inet.h>

#include "http_state.hpp"

namespace pool::http_detail {

namespace {

/// A Host header (or an `allowed_hosts` entry) taken apart: the name in
/// lower case (an IPv6 address in brackets) and the port, if given.
struct host_and_port {
  std::string name;
  std::optional<uint16_t> port;
};

std::optional<host_and_port> split_host(const std::string& text) {
  host_and_port result;
  std::string port_text;
  bool has_colon = false;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string::npos)
      return std::nullopt;
    result.name = text.substr(0, close + 1);
    auto rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':')
        return std::nullopt;
      has_colon = true;
      port_text = rest.substr(1);
    }
  } else {
    auto colon = text.find(':');
    if (colon != text.rfind(':'))
      return std::nullopt; // an IPv6 address needs its brackets
    result.name = text.substr(0, colon);
    if (colon != std::string::npos) {
      has_colon = true;
      port_text = text.substr(colon + 1);
    }
  }
  if (result.name.empty())
    return std::nullopt;
  for (auto& c : result.name) {
    auto u = static_cast<unsigned char>(c);
    if (!std::isalnum(u) && c != '.' && c != '-' && c != '_' && c != '[' &&
        c != ']' && c != ':')
      return std::nullopt;
    c = static_cast<char>(std::tolower(u));
  }
  // "localhost." is "localhost".
  if (result.name.size() > 1 && result.name.back() == '.')
    result.name.pop_back();
  if (has_colon && !port_text.empty()) {
    if (port_text.size() > 5 ||
        !std::all_of(port_text.begin(), port_text.end(),
                     [](char c) { return c >= '0' && c <= '9'; }))
      return std::nullopt;
    auto port = std::stoul(port_text);
    if (port == 0 || port > 65535)
      return std::nullopt;
    result.port = static_cast<uint16_t>(port);
  }
  return result;
}

bool is_ip_literal(const std::string& name) {
  unsigned char buf[16];
  if (name.size() > 2 && name.front() == '[' && name.back() == ']')
    return ::inet_pton(AF_INET6, name.substr(1, name.size() - 2).c_str(),
                       buf) == 1;
  return ::inet_pton(AF_INET, name.c_str(), buf) == 1;
}

} // namespace

bool host_allowed(const std::string& header,
                  const std::vector<std::string>& allowed, uint16_t port) {
  auto host = split_host(header);
  if (!host)
    return false;
  // A browser leaves out the port only for 80.
  auto given = host->port.value_or(80);
  for (auto& entry : allowed) {
    auto x = split_host(entry);
    if (x && x->name == host->name && (!x->port || *x->port == given))
      return true;
  }
  // A page whose name was rebound to this host sends its own name: only a
  // name the operator allowed, `localhost` and IP addresses are ours.
  return (host->name == "localhost" || is_ip_literal(host->name)) &&
         given == port;
}

std::string check_allowed_host(const std::string& entry) {
  auto x = split_host(entry);
  if (!x || x->name.find_first_of("[]:") != std::string::npos)
    if (!x || !is_ip_literal(x->name))
      return "allowed host '" + entry +
             "' is not a host name, NAME:PORT or an IP address";
  return {};
}

} // namespace pool::http_detail
