// Profiler sample buffers shared by the postmaster and its backends, and the
// chunked file they are collected in.
#include "lifecycle/internal/sample_slots.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "lifecycle/internal/io.h"

namespace backendlab::lifecycle::internal {
namespace {

struct ChunkHeader {
  int64_t sequence = 0;
  uint32_t count = 0;
  uint32_t magic = kMagic;
  uint64_t dropped = 0;
  uint64_t truncated = 0;
  static constexpr uint32_t kMagic = 0x53414d50;  // "SAMP"
};

size_t RoundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

}  // namespace

absl::StatusOr<SampleSlots> SampleSlots::Create(size_t backend_slots) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t backend_bytes = RoundUp(profiling::SampleBuffer::BytesFor(kBackendCapacity), page);
  const size_t postmaster_bytes = RoundUp(profiling::SampleBuffer::BytesFor(kPostmasterCapacity), page);
  SampleSlots slots;
  slots.bytes_ = backend_slots * backend_bytes + postmaster_bytes;
  // NORESERVE: only the pages samples touch are ever backed.
  slots.base_ = mmap(nullptr, slots.bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (slots.base_ == MAP_FAILED) {
    slots.base_ = nullptr;
    return absl::ResourceExhaustedError(absl::StrCat("mmap of ", slots.bytes_, " bytes of sample buffers: ", std::strerror(errno)));
  }
  char* p = static_cast<char*>(slots.base_);
  for (size_t i = 0; i < backend_slots; ++i, p += backend_bytes) {
    slots.backends_.push_back(profiling::SampleBuffer::Init(p, kBackendCapacity));
  }
  slots.postmaster_ = profiling::SampleBuffer::Init(p, kPostmasterCapacity);
  return slots;
}

SampleSlots::SampleSlots(SampleSlots&& other) noexcept
    : base_(other.base_), bytes_(other.bytes_), backends_(std::move(other.backends_)), postmaster_(other.postmaster_) {
  other.base_ = nullptr;
}

SampleSlots::~SampleSlots() {
  if (base_ != nullptr) munmap(base_, bytes_);
}

bool AppendSampleChunk(int fd, int64_t sequence, const profiling::SampleBuffer& buffer) {
  ChunkHeader header;
  header.sequence = sequence;
  header.count = buffer.size();
  header.dropped = buffer.dropped.load(std::memory_order_relaxed);
  header.truncated = buffer.truncated.load(std::memory_order_relaxed);
  const off_t start = lseek(fd, 0, SEEK_END);
  if (start < 0) return false;
  if (WriteAll(fd, &header, sizeof header) &&
      WriteAll(fd, buffer.samples(), size_t{header.count} * sizeof(profiling::RawSample))) {
    return true;
  }
  const int err = errno;
  if (ftruncate(fd, start) != 0) {
    // Cut back to whole chunks failed too: the reader will stop at the torn
    // chunk, keeping everything before it.
  }
  errno = err;
  return false;
}

absl::Status ReadSampleChunks(int fd, int64_t warmup, SampleHarvest& out) {
  if (lseek(fd, 0, SEEK_SET) != 0) return absl::DataLossError(absl::StrCat("sample file: lseek: ", std::strerror(errno)));
  for (;;) {
    ChunkHeader header;
    const ssize_t got = ReadAll(fd, &header, sizeof header);
    if (got == 0) return absl::OkStatus();
    if (got != static_cast<ssize_t>(sizeof header) || header.magic != ChunkHeader::kMagic ||
        header.count > SampleSlots::kPostmasterCapacity) {
      return absl::DataLossError("sample file: a torn or foreign chunk header");
    }
    // A torn chunk is found before its samples are allocated (up to 34 MB).
    const size_t bytes = size_t{header.count} * sizeof(profiling::RawSample);
    struct stat file;
    const off_t at = lseek(fd, 0, SEEK_CUR);
    std::vector<profiling::RawSample> chunk;
    if (at >= 0 && fstat(fd, &file) == 0 && file.st_size >= at && static_cast<size_t>(file.st_size - at) >= bytes) {
      chunk.resize(header.count);
    }
    if (chunk.size() != header.count || ReadAll(fd, chunk.data(), bytes) != static_cast<ssize_t>(bytes)) {
      return absl::DataLossError(absl::StrCat("sample file: a chunk of ", header.count, " samples is cut short"));
    }
    // Each sample's depth indexes its pcs when it is symbolized; the counts
    // are added up as int64_t.
    for (const profiling::RawSample& sample : chunk) {
      if (sample.depth < 0 || sample.depth > profiling::kMaxFrames) {
        return absl::DataLossError(absl::StrCat("sample file: a sample of depth ", sample.depth, " (at most ",
                                                profiling::kMaxFrames, ")"));
      }
    }
    if (header.dropped > uint64_t{INT64_MAX} - static_cast<uint64_t>(out.dropped) ||
        header.truncated > uint64_t{INT64_MAX} - static_cast<uint64_t>(out.truncated)) {
      return absl::DataLossError("sample file: dropped or truncated counts past 2^63-1");
    }
    if (header.sequence >= 0 && header.sequence < warmup) continue;
    out.samples.insert(out.samples.end(), chunk.begin(), chunk.end());
    out.dropped += static_cast<int64_t>(header.dropped);
    out.truncated += static_cast<int64_t>(header.truncated);
  }
}

}  // namespace backendlab::lifecycle::internal
