// The lifecycle tests run the mock from this process, as the CLI does from
// its own: the allocator set up as the CLI's main() sets it
// (base/fresh_allocations.h), before any test allocates. Without it, a large
// block an in-process run freed stays in this process's heap, every forked
// postmaster and backend inherits it, and a backend's table may be served
// from those already-touched pages: its exit scan then faults nothing, and
// the tests that count those faults depend on which tests ran before.
#include "base/fresh_allocations.h"

namespace {

const bool kFreshMappings = [] {
  backendlab::UseFreshMappingsForLargeAllocations();
  return true;
}();

}  // namespace
