// Labels joined from parts.
#include "base/row_label.h"

#include "absl/strings/str_cat.h"

namespace backendlab {

std::string JoinLabel(std::initializer_list<LabelPart> parts) {
  std::string label;
  for (const LabelPart& p : parts) {
    if (!p.text.empty()) label.append(p.prefix).append(p.text);
  }
  return label;
}

std::string ClientsText(int clients) { return absl::StrCat(clients, clients == 1 ? " client" : " clients"); }

}  // namespace backendlab
