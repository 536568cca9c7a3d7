#include "io/url.h"

namespace fovea::io {

bool is_network_url(std::string_view url) {
  const std::size_t scheme_end = url.find("://");
  return scheme_end != std::string_view::npos && url.substr(0, scheme_end) != "file";
}

std::string_view local_path(std::string_view url) {
  if (url.starts_with("file://")) return url.substr(7);
  if (url.starts_with("file:")) return url.substr(5);
  return url;
}

}  // namespace fovea::io
