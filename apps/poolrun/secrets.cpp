#include "secrets.hpp"

#include <cstdlib>

#include <pool/secret.hpp>

namespace poolrun {

bool queue_has_password(const std::string& uri) {
  auto scheme = uri.find("://");
  auto start = scheme == std::string::npos ? 0 : scheme + 3;
  auto end = uri.find_first_of("/?", start);
  auto authority =
      uri.substr(start, end == std::string::npos ? end : end - start);
  auto at = authority.rfind('@');
  if (at != std::string::npos &&
      authority.substr(0, at).find(':') != std::string::npos)
    return true;
  auto query = uri.find('?');
  if (query == std::string::npos)
    return false;
  // Parameters are `key=value` pairs joined by '&'.
  auto params = "&" + uri.substr(query + 1);
  return params.find("&password=") != std::string::npos;
}

caf::expected<std::string> take_http_token(const std::string& token_file,
                                           bool wanted) {
  caf::expected<std::string> token{std::string{}};
  if (wanted) {
    pool::secret_source src;
    src.file = token_file;
    src.file_option = "--http-token-file";
    src.file_variable = "POOL_HTTP_TOKEN_FILE";
    src.variable = "POOL_HTTP_TOKEN";
    token = pool::load_secret(src);
  }
  ::unsetenv("POOL_HTTP_TOKEN");
  ::unsetenv("POOL_HTTP_TOKEN_FILE");
  return token;
}

} // namespace poolrun
