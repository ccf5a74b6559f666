// The tool's side of the sampler library (sampler_library.cc, built as
// libbackendlab_sampler.so): where the library is, and the sample file it
// writes into — made by the tool before the sampled program starts, its
// gate opened for a recorded pass, its samples read afterwards.
#ifndef BACKENDLAB_PROFILING_SAMPLE_FILE_H_
#define BACKENDLAB_PROFILING_SAMPLE_FILE_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "profiling/sample_buffer.h"

namespace backendlab::profiling {

namespace internal {
struct SampleFileHeader;
}  // namespace internal

// The sampler library: an installed tool's (base/runtime_files.h), or the
// one this build made (an absolute path in the build tree).
std::string SamplerLibraryPath();

class SampleFile {
 public:
  struct Owner {
    uid_t uid = 0;
    gid_t gid = 0;
  };

  // Creates `path` (new: an error if it exists or is a symbolic link; 0600,
  // owned by `owner` when given: the sampled program's user) with room for
  // `capacity` samples — a sparse file, so only the pages samples touch take
  // space — and the sampling period 1 s / frequency_hz, and maps it.
  static absl::StatusOr<SampleFile> Create(const std::string& path, uint32_t capacity, int frequency_hz,
                                           const std::optional<Owner>& owner);
  SampleFile(SampleFile&& other) noexcept;
  SampleFile& operator=(SampleFile&&) = delete;
  SampleFile(const SampleFile&) = delete;
  ~SampleFile();  // unmaps; the file stays (it lives in a directory its owner removes)

  const std::string& path() const { return path_; }

  // What the sampled program's environment needs besides its own: LD_PRELOAD
  // with `library` first (then `preload`, an LD_PRELOAD already set, if any)
  // and the file's path. The pid of the one process to sample goes in the
  // variable PidVariable(), set in the child itself between fork and exec.
  std::vector<std::string> Environment(const std::string& library, const std::string& preload) const;
  static const char* PidVariable();

  // Opens (on) or closes (off) the gate: the library's timers run all along,
  // samples are taken only while it is open.
  void SetRecording(bool on);

  // The pid whose constructor started sampling (the program named by the pid
  // variable), 0 until one has.
  pid_t sampler_pid() const;
  int64_t armed() const;      // processes whose timer was armed: that one and every child it forked
  int64_t failed() const;     // processes whose timer could not be armed
  int64_t dropped() const;    // samples that found the buffer full
  int64_t truncated() const;  // samples whose stacks were cut at kMaxFrames
  int frequency_hz() const;

  // The complete samples, in slot order; `torn` counts the slots no process
  // finished (one killed mid-sample). Read once the recording is closed.
  std::vector<RawSample> Samples(int64_t* torn) const;

 private:
  SampleFile(std::string path, void* memory, size_t bytes);
  internal::SampleFileHeader* header() const;
  const SampleBuffer* buffer() const;

  std::string path_;
  void* memory_;
  size_t bytes_;
};

}  // namespace backendlab::profiling

#endif  // BACKENDLAB_PROFILING_SAMPLE_FILE_H_
