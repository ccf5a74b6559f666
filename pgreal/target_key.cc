// Labels and baselines of real-server rows, from their keys.
#include "pgreal/target_key.h"

#include "absl/strings/str_cat.h"
#include "base/row_label.h"
#include "buffers/shared_buffers.h"

namespace backendlab::pgreal {

std::string TargetKey::Label(LabelShows shows) const {
  const bool existing = major == 0;
  return JoinLabel({{"", existing ? std::string("conninfo") : absl::StrCat(major)},
                    {"/", existing ? std::string() : buffers::FormatSize(static_cast<uint64_t>(shared_buffers_bytes))},
                    {" +", what_if ? what_if->name() : std::string()},
                    {" via ", via ? via->label() : std::string()},
                    {" ", transport == Transport::kUnix ? std::string() : std::string(TransportName(transport))},
                    {" ", shows.clients ? ClientsText(clients) : std::string()},
                    {" hold ", shows.hold ? absl::StrCat(hold) : std::string()},
                    {"#", copy > 0 ? absl::StrCat(copy + 1) : std::string()}});
}

std::string TargetKey::ServerName() const {
  return JoinLabel({{"pg", absl::StrCat(major)}, {" via ", via ? via->label() : std::string()}});
}

TargetKey TargetKey::WithClients(int c) const {
  TargetKey k = *this;
  k.clients = c;
  return k;
}

TargetKey TargetKey::WithHold(int64_t n) const {
  TargetKey k = *this;
  k.hold = n;
  return k;
}

std::optional<Baseline> BaselineOf(const TargetKey& row, const TargetKey& first) {
  TargetKey b = row;
  if (row.copy != 0) {
    b.copy = 0;
    return Baseline{b, KeyPart::kCopy};
  }
  if (row.what_if) {
    b.what_if.reset();
    return Baseline{b, KeyPart::kWhatIf};
  }
  if (row.via) {
    b.via.reset();
    return Baseline{b, KeyPart::kVia};
  }
  if (row.transport != first.transport) {
    b.transport = first.transport;
    return Baseline{b, KeyPart::kTransport};
  }
  if (row.hold != first.hold) {
    b.hold = first.hold;
    return Baseline{b, KeyPart::kHold};
  }
  if (row.bindir != first.bindir || row.shared_buffers_bytes != first.shared_buffers_bytes) {
    b.bindir = first.bindir;
    b.major = first.major;
    b.shared_buffers_bytes = first.shared_buffers_bytes;
    return Baseline{b, KeyPart::kServer};
  }
  return std::nullopt;
}

}  // namespace backendlab::pgreal
