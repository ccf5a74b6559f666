// A real-server row's key: what makes a row of `pg` (and of `compare
// --with-pg`) that row. Its label, its JSON identity fields and its
// baseline (the key with its one change undone) derive from it, as pprof's
// profile/merge.go keys its entities and Google Benchmark's
// BenchmarkName::str() joins its fields; a run finds a row's baseline by
// looking its key up, never by re-listing fields.
#ifndef BACKENDLAB_PGREAL_TARGET_KEY_H_
#define BACKENDLAB_PGREAL_TARGET_KEY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "pgreal/pooler.h"
#include "pgreal/server.h"
#include "pgreal/what_if.h"

namespace backendlab::pgreal {

// The parts a baseline can undo, in the order a row's one change is looked
// for, and the words reports and JSON use for them.
enum class KeyPart { kCopy, kWhatIf, kVia, kTransport, kHold, kServer };
inline constexpr NamedValue<KeyPart> kKeyPartNames[] = {
    {KeyPart::kCopy, "copy"},           {KeyPart::kWhatIf, "what_if"}, {KeyPart::kVia, "via"},
    {KeyPart::kTransport, "transport"}, {KeyPart::kHold, "hold"},      {KeyPart::kServer, "server"}};
inline std::string_view KeyPartName(KeyPart p) { return NameOf(p, kKeyPartNames); }

// Which parts that a run may leave at one value its labels still show.
struct LabelShows {
  bool clients = false;  // more than one clients entry
  bool hold = false;     // connections held (any entry listed)
};

struct TargetKey {
  // The server: an installation at a shared_buffers; major 0 for an existing
  // server (--conninfo), which has neither.
  std::string bindir;
  int major = 0;
  int64_t shared_buffers_bytes = 0;
  std::optional<WhatIf> what_if;  // the stock server changed in one thing
  std::optional<Via> via;         // through a pooler
  Transport transport = Transport::kUnix;
  int clients = 1;   // connections in flight
  int64_t hold = 0;  // connections held beside the loop
  int copy = 0;      // 1: an A/A copy of a stock server, started from the same data directory

  bool operator==(const TargetKey&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const TargetKey& k) {
    return H::combine(std::move(h), k.bindir, k.major, k.shared_buffers_bytes, k.what_if ? k.what_if->name() : "",
                      k.via ? k.via->label() : "", k.transport, k.clients, k.hold, k.copy);
  }

  bool stock() const { return !what_if && !via && copy == 0; }
  // "15/128MB", "15/128MB +quick-exit", "15/128MB via pgbouncer:session",
  // then " tcp" or " tcp+ssl" over TCP, " 4 clients" and " hold 1024"
  // where `shows` asks, "#2" for a copy; "conninfo" for an existing server.
  std::string Label(LabelShows shows) const;
  // "pg15", "pg15 via pgbouncer:session": a server's name beside the mock's designs.
  std::string ServerName() const;
  // The same row at other clients or hold: the series and hold steps compare these.
  TargetKey WithClients(int c) const;
  TargetKey WithHold(int64_t n) const;
};

// A row's baseline: its key with the one change it makes undone, the first
// of KeyPart's order that differs from the run's first row (`first`): an
// A/A copy against its original; a what-if or a pooled row against its
// stock server's direct row; a row over another transport against the same
// server's over the first (the Unix socket); a row holding connections
// against the same server's holding the first hold's; any other server
// against the first. None for a row with no change (the first itself, or a
// row at other clients only). The same clients always: ratios are at one
// load.
struct Baseline {
  TargetKey key;
  KeyPart undone;
};
std::optional<Baseline> BaselineOf(const TargetKey& row, const TargetKey& first);

}  // namespace backendlab::pgreal

#endif  // BACKENDLAB_PGREAL_TARGET_KEY_H_
