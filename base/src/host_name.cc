// This host's name (host_name.h).
#include "ringscope/host_name.h"

#include <unistd.h>

namespace ringscope {

std::string this_host_name(const char* if_unknown) {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return if_unknown;
  return name;
}

}  // namespace ringscope
