// What an application configures before creating a session.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/config.h"
#include "nxrt/nxrt_types.h"

namespace nxrt {

struct EpRequest {
  std::string name;                           // EP name as its factory reports it
  std::map<std::string, std::string> options; // become "ep.<lower name>.<key>" config entries
};

struct SessionOptions {
  int intra_op_threads = 0;         // 0 = one per core
  NxLogLevel log_level = NX_LOG_WARNING;
  int optimization_level = 1;       // 0 = none; 1 = basic (constant folding at load)
  Config config;                    // free-form "session.*" entries
  std::vector<EpRequest> eps;       // in priority order, ahead of the default CPU EP
};

}  // namespace nxrt
