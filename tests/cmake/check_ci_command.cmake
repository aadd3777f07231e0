# .ci/run must run exactly the "build and run all tests" command that README.md gives (the first
# `sh` block after "CI runs exactly this command"). Run as
#   cmake -DSOURCE_DIR=<repo> -P check_ci_command.cmake
# and fails showing both lines when they differ.
file(READ ${SOURCE_DIR}/README.md readme)
string(FIND "${readme}" "CI runs exactly this command" at)
if(at EQUAL -1)
  message(FATAL_ERROR "README.md: no \"CI runs exactly this command\" paragraph")
endif()
string(SUBSTRING "${readme}" ${at} -1 readme)
string(REGEX MATCH "```sh\n([^\n]*)\n```" block "${readme}")
set(readme_cmd "${CMAKE_MATCH_1}")
file(STRINGS ${SOURCE_DIR}/.ci/run lines)
set(ci_cmd "")
foreach(line ${lines})  # the last line that is not blank and not a comment
  if(NOT line MATCHES "^[ \t]*(#.*)?$")
    set(ci_cmd "${line}")
  endif()
endforeach()
if(readme_cmd STREQUAL "" OR NOT readme_cmd STREQUAL ci_cmd)
  message(FATAL_ERROR "README.md and .ci/run differ:\n  README.md: ${readme_cmd}\n  .ci/run:   ${ci_cmd}")
endif()
message(STATUS "README.md and .ci/run run the same command: ${ci_cmd}")
