// AllocSet-like memory context: block list, power-of-two free lists, large
// chunks in blocks of their own.
#include "catcache/memory_context.h"

#include <bit>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/private_pages.h"

namespace backendlab::catcache {

struct alignas(kMaxAlign) MemoryContext::Block {
  Block* prev;
  Block* next;
  size_t size;      // bytes obtained from the source, this header included
  char* free_ptr;   // first byte never carved into a chunk
  char* end;        // one past the block
  char* Data() { return reinterpret_cast<char*>(this) + sizeof(Block); }
};

namespace {

using Block = MemoryContext::Block;

constexpr uint16_t kLiveMagic = 0xC0DE;
constexpr uint16_t kFreeMagic = 0xF4EE;
constexpr uint16_t kLargeClass = 0xFFFF;

// Precedes every chunk, as AllocSet's chunk header does.
struct ChunkHeader {
  uint32_t requested;  // size asked for (kMaxAllocSize < 2^32)
  uint16_t size_class; // free-list index, or kLargeClass
  uint16_t magic;      // kLiveMagic or kFreeMagic: catches double pfree
  uint64_t chunk_size; // usable bytes after the header
};
static_assert(sizeof(ChunkHeader) == kMaxAlign,
              "the chunk header must keep the payload kMaxAlign-aligned without padding");
static_assert(sizeof(Block) % kMaxAlign == 0,
              "the block header must keep the first chunk header kMaxAlign-aligned");
static_assert(kMinChunk << 9 == kChunkLimit, "the free lists are 16, 32, ..., 8192: ten of them");

ChunkHeader* HeaderOf(void* p) { return reinterpret_cast<ChunkHeader*>(static_cast<char*>(p) - sizeof(ChunkHeader)); }
const ChunkHeader* HeaderOf(const void* p) {
  return reinterpret_cast<const ChunkHeader*>(static_cast<const char*>(p) - sizeof(ChunkHeader));
}
void* PayloadOf(ChunkHeader* h) { return reinterpret_cast<char*>(h) + sizeof(ChunkHeader); }

// Index of the smallest power-of-two class holding `size` (16 -> 0, 8192 -> 9).
int SizeClass(size_t size) {
  if (size <= kMinChunk) return 0;
  return std::bit_width(size - 1) - std::bit_width(kMinChunk - 1);
}
size_t ClassSize(int size_class) { return kMinChunk << size_class; }

void*& FreeLink(ChunkHeader* h) { return *static_cast<void**>(PayloadOf(h)); }

void* MapBlock(size_t bytes) { return MapPrivatePages(bytes); }
void UnmapBlock(void* block, size_t bytes) { UnmapPrivatePages(block, bytes); }
void* MallocBlock(size_t bytes) { return std::malloc(bytes); }
void FreeBlock(void* block, size_t) { std::free(block); }

}  // namespace

BlockSource FreshMappedBlocks() { return {&MapBlock, &UnmapBlock}; }
BlockSource MallocBlocks() { return {&MallocBlock, &FreeBlock}; }

absl::StatusOr<MemoryContext> MemoryContext::Create(BlockSource blocks) {
  BACKENDLAB_CHECK(blocks.allocate != nullptr && blocks.release != nullptr);
  MemoryContext context;
  context.source_ = blocks;
  absl::StatusOr<Block*> keeper = context.NewBlock(kInitBlockSize);
  if (!keeper.ok()) return keeper.status();
  context.keeper_ = *keeper;
  return context;
}

MemoryContext::MemoryContext(MemoryContext&& other) noexcept { *this = std::move(other); }

MemoryContext& MemoryContext::operator=(MemoryContext&& other) noexcept {
  if (this == &other) return *this;
  Delete();
  source_ = other.source_;
  blocks_ = std::exchange(other.blocks_, nullptr);
  keeper_ = std::exchange(other.keeper_, nullptr);
  next_block_size_ = other.next_block_size_;
  free_lists_ = std::exchange(other.free_lists_, {});
  zeroed_bytes_ = other.zeroed_bytes_;
  requested_bytes_ = std::exchange(other.requested_bytes_, 0);
  return *this;
}

// Links a new block of `size` bytes at the head of the list: it becomes the
// block that small chunks are carved from.
absl::StatusOr<Block*> MemoryContext::NewBlock(size_t size) {
  void* memory = source_.allocate(size);
  if (memory == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat("out of memory: a ", size, "-byte block could not be allocated"));
  }
  Block* block = static_cast<Block*>(memory);
  block->prev = nullptr;
  block->next = blocks_;
  block->size = size;
  block->free_ptr = block->Data();
  block->end = static_cast<char*>(memory) + size;
  if (blocks_ != nullptr) blocks_->prev = block;
  blocks_ = block;
  return block;
}

// Before a block is left behind, its tail becomes free chunks instead of
// being wasted (AllocSetAlloc does the same).
void MemoryContext::CarveRemainder(Block* block) {
  for (;;) {
    const auto remaining = static_cast<size_t>(block->end - block->free_ptr);
    if (remaining < sizeof(ChunkHeader) + kMinChunk) return;
    int size_class = SizeClass(remaining - sizeof(ChunkHeader));
    if (ClassSize(size_class) > remaining - sizeof(ChunkHeader)) --size_class;
    if (size_class >= kFreeLists) size_class = kFreeLists - 1;
    auto* h = reinterpret_cast<ChunkHeader*>(block->free_ptr);
    h->requested = 0;
    h->size_class = static_cast<uint16_t>(size_class);
    h->magic = kFreeMagic;
    h->chunk_size = ClassSize(size_class);
    FreeLink(h) = free_lists_[size_class];
    free_lists_[size_class] = PayloadOf(h);
    block->free_ptr += sizeof(ChunkHeader) + h->chunk_size;
  }
}

absl::StatusOr<void*> MemoryContext::Alloc(size_t size) {
  BACKENDLAB_CHECK(keeper_ != nullptr);  // not after Delete()
  if (size > kMaxAllocSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid memory alloc request size ", size, " (limit ", kMaxAllocSize, ")"));
  }
  if (size > kChunkLimit) {
    // A large chunk: a block of its own, inserted behind the head so the
    // block being carved stays at the head.
    const size_t chunk_size = (size + kMaxAlign - 1) & ~(kMaxAlign - 1);
    const size_t block_size = sizeof(Block) + sizeof(ChunkHeader) + chunk_size;
    void* memory = source_.allocate(block_size);
    if (memory == nullptr) {
      return absl::ResourceExhaustedError(
          absl::StrCat("out of memory: a ", block_size, "-byte block for a large chunk could not be allocated"));
    }
    Block* block = static_cast<Block*>(memory);
    block->size = block_size;
    block->end = static_cast<char*>(memory) + block_size;
    block->free_ptr = block->end;
    block->prev = blocks_;
    block->next = blocks_->next;
    if (block->next != nullptr) block->next->prev = block;
    blocks_->next = block;
    auto* h = reinterpret_cast<ChunkHeader*>(block->Data());
    h->requested = static_cast<uint32_t>(size);
    h->size_class = kLargeClass;
    h->magic = kLiveMagic;
    h->chunk_size = chunk_size;
    requested_bytes_ += size;
    return PayloadOf(h);
  }
  const int size_class = SizeClass(size);
  ChunkHeader* h;
  if (void* p = free_lists_[size_class]; p != nullptr) {
    h = HeaderOf(p);
    BACKENDLAB_CHECK(h->magic == kFreeMagic);
    free_lists_[size_class] = FreeLink(h);
  } else {
    const size_t need = sizeof(ChunkHeader) + ClassSize(size_class);
    if (static_cast<size_t>(blocks_->end - blocks_->free_ptr) < need) {
      CarveRemainder(blocks_);
      size_t block_size = next_block_size_;
      while (block_size < sizeof(Block) + need) block_size <<= 1;
      next_block_size_ = std::min(next_block_size_ * 2, kMaxBlockSize);
      absl::StatusOr<Block*> block = NewBlock(block_size);
      if (!block.ok()) return block.status();
    }
    h = reinterpret_cast<ChunkHeader*>(blocks_->free_ptr);
    blocks_->free_ptr += need;
    h->size_class = static_cast<uint16_t>(size_class);
    h->chunk_size = ClassSize(size_class);
  }
  h->requested = static_cast<uint32_t>(size);
  h->magic = kLiveMagic;
  requested_bytes_ += size;
  return PayloadOf(h);
}

absl::StatusOr<void*> MemoryContext::AllocZero(size_t size) {
  absl::StatusOr<void*> p = Alloc(size);
  if (!p.ok()) return p;
  std::memset(*p, 0, size);
  zeroed_bytes_ += size;
  return p;
}

bool MemoryContext::Owns(const void* p) const {
  const char* c = static_cast<const char*>(p);
  for (Block* b = blocks_; b != nullptr; b = b->next) {
    if (c > b->Data() && c < b->free_ptr) return true;
  }
  return false;
}

void MemoryContext::Free(void* p) {
  BACKENDLAB_ASSERT(Owns(p));
  ChunkHeader* h = HeaderOf(p);
  // Always checked: one compare, and a double pfree would corrupt a free list.
  BACKENDLAB_CHECK(h->magic == kLiveMagic);
  requested_bytes_ -= h->requested;
  if (h->size_class == kLargeClass) {
    Block* block = reinterpret_cast<Block*>(reinterpret_cast<char*>(h) - sizeof(Block));
    BACKENDLAB_CHECK(block != blocks_);  // a large chunk's block is never the head
    block->prev->next = block->next;
    if (block->next != nullptr) block->next->prev = block->prev;
    source_.release(block, block->size);
    return;
  }
  h->magic = kFreeMagic;
  h->requested = 0;
  FreeLink(h) = free_lists_[h->size_class];
  free_lists_[h->size_class] = p;
}

void MemoryContext::Reset() {
  if (keeper_ == nullptr) return;
  for (Block* b = blocks_; b != nullptr;) {
    Block* next = b->next;
    if (b != keeper_) source_.release(b, b->size);
    b = next;
  }
  blocks_ = keeper_;
  keeper_->prev = keeper_->next = nullptr;
  keeper_->free_ptr = keeper_->Data();
  free_lists_ = {};
  next_block_size_ = kInitBlockSize;
  requested_bytes_ = 0;
}

void MemoryContext::Delete() {
  for (Block* b = blocks_; b != nullptr;) {
    Block* next = b->next;
    source_.release(b, b->size);
    b = next;
  }
  blocks_ = keeper_ = nullptr;
  free_lists_ = {};
  requested_bytes_ = 0;
}

MemoryContextStats MemoryContext::Stats() const {
  MemoryContextStats s;
  s.zeroed_bytes = zeroed_bytes_;
  for (Block* b = blocks_; b != nullptr; b = b->next) {
    ++s.blocks;
    s.held_bytes += b->size;
    s.block_header_bytes += sizeof(Block);
    s.unused_bytes += static_cast<size_t>(b->end - b->free_ptr);
    for (char* c = b->Data(); c < b->free_ptr;) {
      const auto* h = reinterpret_cast<const ChunkHeader*>(c);
      const size_t bytes = sizeof(ChunkHeader) + h->chunk_size;
      if (h->magic == kLiveMagic) {
        s.live_chunk_bytes += bytes;
        s.requested_bytes += h->requested;
        ++s.live_chunks;
      } else {
        BACKENDLAB_CHECK(h->magic == kFreeMagic);
        s.free_chunk_bytes += bytes;
      }
      c += bytes;
    }
  }
  BACKENDLAB_CHECK(s.requested_bytes == requested_bytes_);
  return s;
}

size_t MemoryContext::ChunkRequestedSize(const void* p) {
  const ChunkHeader* h = HeaderOf(p);
  BACKENDLAB_CHECK(h->magic == kLiveMagic);
  return h->requested;
}

}  // namespace backendlab::catcache
