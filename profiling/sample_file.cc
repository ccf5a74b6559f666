// The sample file the sampler library writes into, from the tool's side.
#include "profiling/sample_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/runtime_files.h"
#include "profiling/internal/sample_file_header.h"
#include "profiling/sampler.h"

namespace backendlab::profiling {

std::string SamplerLibraryPath() { return RuntimeFile("libbackendlab_sampler.so", BACKENDLAB_SAMPLER_LIBRARY); }

absl::StatusOr<SampleFile> SampleFile::Create(const std::string& path, uint32_t capacity, int frequency_hz,
                                              const std::optional<Owner>& owner) {
  if (frequency_hz < 1 || frequency_hz > 100'000) {
    return absl::InvalidArgumentError(absl::StrCat("sampling frequency must be 1..100000 Hz, not ", frequency_hz));
  }
  const size_t bytes = internal::kSampleBufferOffset + SampleBuffer::BytesFor(capacity);
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return absl::InternalError(absl::StrCat("create ", path, ": ", std::strerror(errno)));
  const auto fail = [&](const char* what) {
    const absl::Status s = absl::InternalError(absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
    close(fd);
    unlink(path.c_str());
    return s;
  };
  if (owner && fchown(fd, owner->uid, owner->gid) != 0) return fail("chown");
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) return fail("ftruncate");
  void* memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (memory == MAP_FAILED) return fail("mmap");
  close(fd);
  // The file is zeroed (ftruncate): what the many-writer buffer needs.
  auto* header = new (memory) internal::SampleFileHeader{};
  header->magic = internal::kSampleFileMagic;
  header->version = internal::kSampleFileVersion;
  header->frequency_hz = frequency_hz;
  header->period_ns = 1'000'000'000 / frequency_hz;
  header->file_bytes = bytes;
  SampleBuffer::Init(static_cast<char*>(memory) + internal::kSampleBufferOffset, capacity);
  return SampleFile(path, memory, bytes);
}

SampleFile::SampleFile(std::string path, void* memory, size_t bytes)
    : path_(std::move(path)), memory_(memory), bytes_(bytes) {}

SampleFile::SampleFile(SampleFile&& other) noexcept
    : path_(std::move(other.path_)), memory_(std::exchange(other.memory_, nullptr)), bytes_(other.bytes_) {}

SampleFile::~SampleFile() {
  if (memory_ != nullptr) munmap(memory_, bytes_);
}

internal::SampleFileHeader* SampleFile::header() const { return static_cast<internal::SampleFileHeader*>(memory_); }

const SampleBuffer* SampleFile::buffer() const {
  return reinterpret_cast<const SampleBuffer*>(static_cast<const char*>(memory_) + internal::kSampleBufferOffset);
}

std::vector<std::string> SampleFile::Environment(const std::string& library, const std::string& preload) const {
  return {absl::StrCat("LD_PRELOAD=", library, preload.empty() ? "" : ":", preload),
          absl::StrCat(internal::kSampleFileEnv, "=", path_)};
}

const char* SampleFile::PidVariable() { return internal::kSampledPidEnv; }

void SampleFile::SetRecording(bool on) { header()->recording.store(on ? 1 : 0, std::memory_order_release); }

pid_t SampleFile::sampler_pid() const { return header()->sampler_pid.load(std::memory_order_acquire); }
int64_t SampleFile::armed() const { return header()->armed.load(std::memory_order_relaxed); }
int64_t SampleFile::failed() const { return header()->failed.load(std::memory_order_relaxed); }
int64_t SampleFile::dropped() const { return static_cast<int64_t>(buffer()->dropped.load(std::memory_order_relaxed)); }
int64_t SampleFile::truncated() const {
  return static_cast<int64_t>(buffer()->truncated.load(std::memory_order_relaxed));
}
int SampleFile::frequency_hz() const { return header()->frequency_hz; }

std::vector<RawSample> SampleFile::Samples(int64_t* torn) const { return CopySharedSamples(*buffer(), torn); }

}  // namespace backendlab::profiling
