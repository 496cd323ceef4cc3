#include "pool/protocol.hpp"

namespace pool {

std::string to_string(worker_phase x) {
  switch (x) {
    case worker_phase::sleeping:
      return "sleeping";
    case worker_phase::waiting:
      return "waiting";
    case worker_phase::working:
      return "working";
  }
  return "?";
}

} // namespace pool
