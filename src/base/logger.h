// A logger with a minimum level and a sink. The env owns one; sessions derive their own level.
#pragma once

#include <functional>
#include <string>

#include "nxrt/nxrt_types.h"

namespace nxrt {

class Logger {
 public:
  using Sink = std::function<void(NxLogLevel, const std::string&)>;

  Logger(NxLogLevel min_level, Sink sink) : min_level_(min_level), sink_(std::move(sink)) {}
  // Writes "[nxrt W] message" lines to stderr.
  static Sink StderrSink();

  bool enabled(NxLogLevel level) const { return level >= min_level_; }
  void Log(NxLogLevel level, const std::string& message) const {
    if (enabled(level) && sink_) sink_(level, message);
  }
  NxLogLevel min_level() const { return min_level_; }
  // A logger with the same sink and another level.
  Logger WithLevel(NxLogLevel level) const { return Logger(level, sink_); }

 private:
  NxLogLevel min_level_;
  Sink sink_;
};

}  // namespace nxrt
