// A memory context modelled on PostgreSQL's AllocSet: palloc/palloc0/pfree out
// of growing malloc'd blocks, reset and delete. A backend's CacheMemoryContext.
#ifndef BACKENDLAB_CATCACHE_MEMORY_CONTEXT_H_
#define BACKENDLAB_CATCACHE_MEMORY_CONTEXT_H_

#include <array>
#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"

namespace backendlab::catcache {

// Every chunk's address is a multiple of this: alignof(std::max_align_t) on
// x86-64, stricter than PostgreSQL's MAXALIGN of 8, so any type fits a chunk.
inline constexpr size_t kMaxAlign = 16;
// Requests above this are refused, as PostgreSQL's palloc refuses more than
// MaxAllocSize (1 GB - 1): "invalid memory alloc request size".
inline constexpr size_t kMaxAllocSize = (size_t{1} << 30) - 1;
// Chunks up to this size come from power-of-two free lists inside blocks;
// larger ones get a block of their own, given back to malloc at pfree
// (AllocSet's allocChunkLimit with the default block sizes).
inline constexpr size_t kChunkLimit = 8192;
// Smallest chunk: one free-list link fits, and sizes stay multiples of kMaxAlign.
inline constexpr size_t kMinChunk = 16;
// Block sizes: the first (the "keeper", kept across Reset) is kInitBlockSize,
// each next one doubles up to kMaxBlockSize (ALLOCSET_DEFAULT_INITSIZE/MAXSIZE).
inline constexpr size_t kInitBlockSize = 8 * 1024;
inline constexpr size_t kMaxBlockSize = 8 * 1024 * 1024;

struct MemoryContextStats {
  int64_t blocks = 0;              // blocks held, the keeper and large-chunk blocks included
  size_t held_bytes = 0;           // sum of block sizes: what malloc gave us
  size_t requested_bytes = 0;      // sum of the sizes asked for by live chunks
  size_t live_chunk_bytes = 0;     // live chunks, headers included
  size_t free_chunk_bytes = 0;     // chunks on the free lists, headers included
  size_t unused_bytes = 0;         // never-carved tails of blocks
  size_t block_header_bytes = 0;   // block headers
  size_t zeroed_bytes = 0;         // bytes memset by AllocZero since creation (palloc0's cost)
  int64_t live_chunks = 0;
  // Invariant: held_bytes == live_chunk_bytes + free_chunk_bytes + unused_bytes + block_header_bytes.
};

// Where blocks come from. std::malloc by default; a test passes one that
// fails to check that allocation failure is an error value.
using BlockMallocFn = void* (*)(size_t);

// Not thread-safe, like a PostgreSQL memory context: one backend, one thread.
// Movable (chunks do not point back at the context), not copyable.
//
// Every block is one malloc. Under UseFreshMappingsForLargeAllocations()
// (base/fresh_allocations.h), which the backendlab CLI and the benchmarks
// call, glibc serves a block (8 kB and up) from free heap memory if it has a
// piece that fits, and otherwise from a fresh anonymous mapping whose pages
// the kernel zero-fills on first touch and takes back at free: most of a
// backend's blocks are fresh, a few reuse resident heap pages (README.md).
class MemoryContext {
 public:
  // Allocates the keeper block. ResourceExhausted if malloc fails.
  static absl::StatusOr<MemoryContext> Create(BlockMallocFn block_malloc = nullptr);

  MemoryContext(MemoryContext&& other) noexcept;
  MemoryContext& operator=(MemoryContext&& other) noexcept;
  MemoryContext(const MemoryContext&) = delete;
  MemoryContext& operator=(const MemoryContext&) = delete;
  ~MemoryContext() { Delete(); }

  // palloc: kMaxAlign-aligned, contents undefined. InvalidArgument above
  // kMaxAllocSize, ResourceExhausted when malloc fails. A size of 0 is valid.
  absl::StatusOr<void*> Alloc(size_t size);
  // palloc0: Alloc, then memset of the requested size (counted in zeroed_bytes).
  absl::StatusOr<void*> AllocZero(size_t size);
  // pfree: a small chunk goes to its free list for reuse, a large chunk's
  // block goes back to malloc. `p` must come from this context (checked in
  // assert-enabled builds).
  void Free(void* p);
  // Frees every chunk: large blocks and all blocks but the keeper go back to
  // malloc; the keeper is emptied and kept (AllocSetReset).
  void Reset();
  // Gives every block, the keeper included, back to malloc. The context is
  // unusable afterwards except for Stats() and destruction.
  void Delete();

  // Walks the blocks: O(blocks + free chunks). For reports and tests.
  MemoryContextStats Stats() const;
  // The requested size of a live chunk.
  static size_t ChunkRequestedSize(const void* p);

  struct Block;  // public for the implementation's helpers, opaque to users

 private:
  MemoryContext() = default;
  absl::StatusOr<Block*> NewBlock(size_t size);
  void CarveRemainder(Block* block);
  bool Owns(const void* p) const;

  static constexpr int kFreeLists = 10;  // 16, 32, ..., 8192
  BlockMallocFn block_malloc_ = nullptr;
  Block* blocks_ = nullptr;  // doubly linked; the head is the block being carved
  Block* keeper_ = nullptr;
  size_t next_block_size_ = kInitBlockSize;
  std::array<void*, kFreeLists> free_lists_{};
  size_t zeroed_bytes_ = 0;
  size_t requested_bytes_ = 0;
};

}  // namespace backendlab::catcache

#endif  // BACKENDLAB_CATCACHE_MEMORY_CONTEXT_H_
