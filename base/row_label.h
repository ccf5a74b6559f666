// A measured row's label, joined from its key's parts as Google Benchmark's
// BenchmarkName::str() joins its fields: each part a prefix and a text, an
// empty text left out with its prefix. Harnesses (lifecycle/, pgreal/) name
// their rows through it, never by hand.
#ifndef BACKENDLAB_BASE_ROW_LABEL_H_
#define BACKENDLAB_BASE_ROW_LABEL_H_

#include <initializer_list>
#include <string>
#include <string_view>

namespace backendlab {

struct LabelPart {
  std::string_view prefix;  // before the text: "/", " +", " via ", ...
  std::string text;         // empty: the part is not in the label
};

// The parts' prefixes and texts in order, the empty ones left out.
std::string JoinLabel(std::initializer_list<LabelPart> parts);

// "1 client", "4 clients".
std::string ClientsText(int clients);

}  // namespace backendlab

#endif  // BACKENDLAB_BASE_ROW_LABEL_H_
