// What a killed run of the tool left changed on the host (vm.nr_hugepages
// grown for `pg --what-if=huge-pages`, pgreal/huge_pages.h), undone at the
// start of every command that starts a real server (pg, compare --with-pg,
// calibrate) and said there, in one line, whatever the run then does.
#ifndef BACKENDLAB_TOOLS_HOST_CHANGES_H_
#define BACKENDLAB_TOOLS_HOST_CHANGES_H_

#include <ostream>

namespace backendlab::tools {

// Undoes what there is to undo and writes what it found and did as one line
// to `out`, flushed; nothing when there was nothing.
void RestoreHostChanges(std::ostream& out);

}  // namespace backendlab::tools

#endif  // BACKENDLAB_TOOLS_HOST_CHANGES_H_
