// CPU time spent by the calling thread: storage methods run on one thread, so
// this is the storage CPU a call cost.
#pragma once

#include <cstdint>
#include <ctime>

namespace skyhook {

class CpuTimer {
 public:
  CpuTimer() : start_(Now()) {}
  int64_t ElapsedNanos() const { return Now() - start_; }

 private:
  static int64_t Now() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
  }
  int64_t start_;
};

}  // namespace skyhook
