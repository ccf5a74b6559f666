// A memory context modelled on PostgreSQL's AllocSet: palloc/palloc0/pfree out
// of growing blocks, reset and delete. A backend's CacheMemoryContext.
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
// larger ones get a block of their own, given back at pfree
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
  size_t held_bytes = 0;           // sum of block sizes: what the source gave us
  size_t requested_bytes = 0;      // sum of the sizes asked for by live chunks
  size_t live_chunk_bytes = 0;     // live chunks, headers included
  size_t free_chunk_bytes = 0;     // chunks on the free lists, headers included
  size_t unused_bytes = 0;         // never-carved tails of blocks
  size_t block_header_bytes = 0;   // block headers
  size_t zeroed_bytes = 0;         // bytes memset by AllocZero since creation (palloc0's cost)
  int64_t live_chunks = 0;
  // Invariant: held_bytes == live_chunk_bytes + free_chunk_bytes + unused_bytes + block_header_bytes.
};

// Where a context's blocks come from and go back to.
struct BlockSource {
  void* (*allocate)(size_t bytes);             // null when out of memory
  void (*release)(void* block, size_t bytes);  // `bytes` as allocated
};

// The default: each block an anonymous mapping of its own, unmapped when the
// block goes back. Its pages are the kernel's zero pages until written, as a
// young backend's heap grows into pages it never touched, whatever this
// process (a postmaster, the tool, a test before) allocated and freed before:
// a context's page faults are the pages it writes, in every run.
BlockSource FreshMappedBlocks();
// std::malloc and std::free: a block may be heap memory that is already
// resident, so its faults depend on the process's history. For tests that
// inject a failing malloc.
BlockSource MallocBlocks();

// Not thread-safe, like a PostgreSQL memory context: one backend, one thread.
// Movable (chunks do not point back at the context), not copyable.
class MemoryContext {
 public:
  // Allocates the keeper block. ResourceExhausted if the source fails.
  static absl::StatusOr<MemoryContext> Create(BlockSource blocks = FreshMappedBlocks());

  MemoryContext(MemoryContext&& other) noexcept;
  MemoryContext& operator=(MemoryContext&& other) noexcept;
  MemoryContext(const MemoryContext&) = delete;
  MemoryContext& operator=(const MemoryContext&) = delete;
  ~MemoryContext() { Delete(); }

  // palloc: kMaxAlign-aligned, contents undefined. InvalidArgument above
  // kMaxAllocSize, ResourceExhausted when the source fails. A size of 0 is valid.
  absl::StatusOr<void*> Alloc(size_t size);
  // palloc0: Alloc, then memset of the requested size (counted in zeroed_bytes).
  absl::StatusOr<void*> AllocZero(size_t size);
  // pfree: a small chunk goes to its free list for reuse, a large chunk's
  // block goes back to the source. `p` must come from this context (checked in
  // assert-enabled builds).
  void Free(void* p);
  // Frees every chunk: large blocks and all blocks but the keeper go back to
  // the source; the keeper is emptied and kept (AllocSetReset).
  void Reset();
  // Gives every block, the keeper included, back to the source. The context is
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
  BlockSource source_{};
  Block* blocks_ = nullptr;  // doubly linked; the head is the block being carved
  Block* keeper_ = nullptr;
  size_t next_block_size_ = kInitBlockSize;
  std::array<void*, kFreeLists> free_lists_{};
  size_t zeroed_bytes_ = 0;
  size_t requested_bytes_ = 0;
};

}  // namespace backendlab::catcache

#endif  // BACKENDLAB_CATCACHE_MEMORY_CONTEXT_H_
