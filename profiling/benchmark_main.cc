// main() of every Google Benchmark binary: the allocator set up as the CLI's
// (large blocks that the heap cannot serve are fresh mappings, as in a newly
// forked backend; base/fresh_allocations.h), then Google Benchmark's own steps.
#include "base/fresh_allocations.h"
#include "benchmark/benchmark.h"

int main(int argc, char** argv) {
  backendlab::UseFreshMappingsForLargeAllocations();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
