// This host's name, as every library records it (trace files, run ids,
// straggler warnings, NCCL's grouping of ranks by host).
#pragma once

#include <string>

namespace ringscope {

// gethostname(), or `if_unknown` where it cannot be read.
std::string this_host_name(const char* if_unknown = "");

}  // namespace ringscope
