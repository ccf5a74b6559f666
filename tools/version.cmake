# Run at every build (tools/CMakeLists.txt, target backendlab_commit): writes
# OUT, a header naming the commit the tool is built from, only when that
# changed, so that a build with nothing new recompiles nothing.
#   cmake -DSOURCE_DIR=<checkout> -DOUT=<header> -P version.cmake
# The commit is `git rev-parse --short=12 HEAD`, with "-dirty" when a
# tracked file differs from it; "unknown" outside a git checkout (or where
# git is missing or refuses the directory).
execute_process(COMMAND git -C "${SOURCE_DIR}" rev-parse --short=12 HEAD
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc ERROR_QUIET)
if(NOT rc EQUAL 0 OR commit STREQUAL "")
  set(commit "unknown")
else()
  execute_process(COMMAND git -C "${SOURCE_DIR}" status --porcelain --untracked-files=no
                  OUTPUT_VARIABLE changes RESULT_VARIABLE rc ERROR_QUIET)
  if(rc EQUAL 0 AND NOT changes STREQUAL "")
    string(APPEND commit "-dirty")
  endif()
endif()
set(text "// Made by tools/version.cmake at build time: the commit the tool was built from.\n#define BACKENDLAB_COMMIT \"${commit}\"\n")
set(old "")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
