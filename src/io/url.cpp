#include "io/url.h"

namespace fovea::io {

bool is_network_url(std::string_view url) {
  const std::size_t scheme_end = url.find("://");
  return scheme_end != std::string_view::npos && url.substr(0, scheme_end) != "file";
}

}  // namespace fovea::io
