#include "base/logger.h"

#include <cstdio>
#include <mutex>

namespace nxrt {

Logger::Sink Logger::StderrSink() {
  return [](NxLogLevel level, const std::string& message) {
    static std::mutex mutex;
    static const char kLetters[] = {'V', 'I', 'W', 'E', 'F'};
    char letter = level >= NX_LOG_VERBOSE && level <= NX_LOG_FATAL ? kLetters[level] : '?';
    std::lock_guard<std::mutex> lock(mutex);
    std::fprintf(stderr, "[nxrt %c] %s\n", letter, message.c_str());
  };
}

}  // namespace nxrt
