// Run-time choice of a layout, made once at a boundary (backend start, a
// benchmark's registration); everything past it is compiled for that layout.
#ifndef BACKENDLAB_BUFFERS_LAYOUT_DISPATCH_H_
#define BACKENDLAB_BUFFERS_LAYOUT_DISPATCH_H_

#include <utility>

#include "buffers/array_refcount.h"
#include "buffers/array_touched_refcount.h"
#include "buffers/byte_refcount.h"
#include "buffers/hash_keys_refcount.h"
#include "buffers/hash_refcount.h"
#include "buffers/refcount_table.h"

namespace backendlab::buffers {

// Calls f.template operator()<Table>() with the table type of `layout`:
//   WithLayout(layout, [&]<RefCountTable T>() { ... T::Create(n) ... });
template <typename F>
decltype(auto) WithLayout(Layout layout, F&& f) {
  switch (layout) {
    case Layout::kArray: return std::forward<F>(f).template operator()<ArrayRefCount>();
    case Layout::kBytes: return std::forward<F>(f).template operator()<ByteRefCount>();
    case Layout::kHashKeys: return std::forward<F>(f).template operator()<HashKeysRefCount>();
    case Layout::kArrayTouched: return std::forward<F>(f).template operator()<ArrayTouchedRefCount>();
    case Layout::kHash: break;
  }
  return std::forward<F>(f).template operator()<HashRefCount>();
}

}  // namespace backendlab::buffers

#endif  // BACKENDLAB_BUFFERS_LAYOUT_DISPATCH_H_
