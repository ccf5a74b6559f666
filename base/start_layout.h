// What a server process fixes when it starts, drawn afresh for each start:
// the offsets of its stack, heap and memory mappings, and the length of its
// private directory's name (and so of every path in it, its socket's
// included). Every backend it forks inherits these, so interleaving
// connections of one server cannot average them away; drawn per start,
// they become one more part of a round's noise, which its interval counts,
// instead of a run-long offset between configurations, which it cannot
// (Mytkowicz et al., ASPLOS 2009; Curtsinger & Berger, ASPLOS 2013).
//
// The mock postmaster is forked, not executed, so the kernel's address
// layout randomisation never runs for it: it inherits the tool's. The
// stack offset stands in for what the environment's size does to an
// executed process, whose stack starts below its environment.
#ifndef BACKENDLAB_BASE_START_LAYOUT_H_
#define BACKENDLAB_BASE_START_LAYOUT_H_

#include <cstdint>
#include <string_view>

namespace backendlab {

struct StartLayout {
  int64_t stack_bytes = 0;  // below the frame that starts the server, a multiple of 16
  int64_t heap_bytes = 0;   // one allocation kept, before the server's first
  int64_t mmap_bytes = 0;   // an inaccessible mapping kept, before the server's first; whole pages
  int name_chars = 0;       // added to the private directory's name
  // An executed server (a real PostgreSQL): the size of an unused variable
  // in its environment, which moves its stack, as in Mytkowicz et al.
  // (the kernel's address layout randomisation moves the rest at exec).
  int64_t env_bytes = 0;
};

// The most of each a start gets: a few pages of stack and heap (every
// cache-set and 4K-aliasing offset of hot data, and more), a hundred-odd
// pages of mapping base, and a few characters of name (the caller gives
// fewer where a socket path in the directory would outgrow sun_path).
inline constexpr int64_t kMaxStackBytes = 16 * 4096;
inline constexpr int64_t kMaxHeapBytes = 16 * 4096;
inline constexpr int64_t kMaxMmapPages = 128;
inline constexpr int kMaxNameChars = 16;
inline constexpr int64_t kMaxEnvBytes = 4096;

// What a randomised start draws, for the report (one phrase each): a
// forked server's (the mock postmaster), an executed one's (a real
// PostgreSQL, whose addresses the kernel draws at every exec).
inline constexpr std::string_view kRandomisedAtStart[] = {"stack offset", "heap offset", "mmap base",
                                                          "directory name length"};
inline constexpr std::string_view kRandomisedAtExec[] = {"environment size", "directory name length"};

// The layout of the start `seed` names (a run's seed, configuration and
// round mixed by the caller): each part uniform over its range, the same
// for the same seed with every compiler.
StartLayout DrawStartLayout(uint64_t seed);

// The seed of configuration `config`'s start in round `round` of a run
// seeded `run_seed`: distinct for every start of a run, and not the seed
// of its rounds' orders (splitmix64's finaliser over the three).
inline uint64_t StartSeed(uint64_t run_seed, uint64_t config, int64_t round) {
  uint64_t z = run_seed * 0xD1B54A32D192ED03ull ^ (config + 1) * 0x9E3779B97F4A7C15ull ^
               static_cast<uint64_t>(round) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Applies the heap and mapping offsets in the process that is about to
// become the server (the stack offset is the caller's: an alloca in the
// frame that starts it). What it allocates is kept for the process's life;
// a mapping the kernel refuses is skipped (the start is then less random,
// not wrong).
void ApplyStartLayout(const StartLayout& layout);

}  // namespace backendlab

#endif  // BACKENDLAB_BASE_START_LAYOUT_H_
